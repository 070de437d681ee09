import { createHash, randomBytes } from 'node:crypto';
import { parse as parseYaml, stringify } from 'yaml';

/**
 * The subset of Go templates + Sprig the Helm chart uses, enough to render
 * it without helm (not installed here): text, `{{- … -}}` trimming,
 * comments, `define`/`include`, `if`/`else`/`with`/`end`, pipelines,
 * parenthesised sub-pipelines, variables (`$x := …`, `$x = …`, `$x.field`),
 * field paths on `.` and `$`, and the functions listed in FUNCTIONS. `lookup`
 * returns an empty map, as under `helm template` (no cluster); `fail` throws
 * its message, as helm does. Anything else throws, so a template using more
 * fails the test instead of rendering wrong.
 */
type Node =
  | { kind: 'text'; text: string }
  | { kind: 'action'; pipeline: string }
  | { kind: 'if' | 'with'; pipeline: string; then: Node[]; else: Node[] };

interface Scope {
  dot: unknown;
  root: unknown;
  defines: Map<string, Node[]>;
  /** Variables of the template (or `include`) being executed. */
  vars: Map<string, unknown>;
  /** The objects `lookup` finds (a `helm upgrade` against a cluster); empty = `helm template`. */
  cluster: readonly Record<string, unknown>[];
}

/** Helm's `lookup apiVersion kind namespace name`: a copy of the object, or an empty map. */
function lookup(
  cluster: readonly Record<string, unknown>[],
  [apiVersion, kind, namespace, name]: unknown[],
): unknown {
  const found = cluster.find((o) => {
    const meta = (o.metadata ?? {}) as Record<string, unknown>;
    return (
      o.apiVersion === apiVersion && o.kind === kind && meta.namespace === namespace && meta.name === name
    );
  });
  return found === undefined ? {} : structuredClone(found);
}

/** `fail "…"` in a template: the render stops with this message. */
export class TemplateFailure extends Error {}

/** Splits template text into text and `{{ }}` actions, applying the trim markers. */
function lex(source: string): { kind: 'text' | 'action'; value: string }[] {
  const out: { kind: 'text' | 'action'; value: string }[] = [];
  let at = 0;
  while (at < source.length) {
    const open = source.indexOf('{{', at);
    if (open === -1) {
      out.push({ kind: 'text', value: source.slice(at) });
      break;
    }
    let text = source.slice(at, open);
    const close = source.indexOf('}}', open);
    if (close === -1) throw new Error(`unclosed action at ${open}`);
    let inner = source.slice(open + 2, close);
    if (inner.startsWith('-')) {
      text = text.replace(/\s+$/, '');
      inner = inner.slice(1);
    }
    let trimAfter = false;
    if (inner.endsWith('-')) {
      trimAfter = true;
      inner = inner.slice(0, -1);
    }
    out.push({ kind: 'text', value: text });
    out.push({ kind: 'action', value: inner.trim() });
    at = close + 2;
    if (trimAfter) while (at < source.length && /\s/.test(source[at] ?? '')) at++;
  }
  return out;
}

function parse(source: string, defines: Map<string, Node[]>): Node[] {
  const tokens = lex(source);
  let i = 0;
  const block = (stops: string[]): { nodes: Node[]; stop: string; action?: string } => {
    const nodes: Node[] = [];
    while (i < tokens.length) {
      const t = tokens[i++];
      if (t === undefined) break;
      if (t.kind === 'text') {
        if (t.value !== '') nodes.push({ kind: 'text', text: t.value });
        continue;
      }
      const action = t.value;
      if (action.startsWith('/*')) continue;
      const word = action.split(/\s+/)[0] ?? '';
      if (stops.includes(word)) return { nodes, stop: word, action };
      if (word === 'define') {
        const name = JSON.parse(action.slice('define'.length).trim()) as string;
        defines.set(name, block(['end']).nodes);
      } else if (word === 'if' || word === 'with') {
        nodes.push(branch(word, action.slice(word.length).trim()));
      } else if (['range', 'template', 'block', 'else', 'end'].includes(word)) {
        throw new Error(`unsupported action '${action}'`);
      } else nodes.push({ kind: 'action', pipeline: action });
    }
    if (stops.length > 0) throw new Error(`missing {{ ${stops.join(' / ')} }}`);
    return { nodes, stop: '' };
  };
  /** `if`/`with` up to its `end`; `else if …` nests an `if` that shares that `end`. */
  const branch = (kind: 'if' | 'with', pipeline: string): Node => {
    const first = block(['else', 'end']);
    let second: Node[] = [];
    const elseIf = /^else\s+if\s+([\s\S]+)$/.exec(first.action ?? '');
    if (elseIf !== null) second = [branch('if', elseIf[1] ?? '')];
    else if (first.stop === 'else') second = block(['end']).nodes;
    return { kind, pipeline, then: first.nodes, else: second };
  };
  return block([]).nodes;
}

function truthy(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

function toYaml(v: unknown): string {
  return stringify(v).replace(/\n$/, '');
}

function indent(n: number, s: string): string {
  const pad = ' '.repeat(n);
  return s
    .split('\n')
    .map((line) => pad + line)
    .join('\n');
}

const FUNCTIONS: Record<string, (...args: unknown[]) => unknown> = {
  quote: (s) => JSON.stringify(show(s)),
  nindent: (n, s) => `\n${indent(Number(n), String(s))}`,
  indent: (n, s) => indent(Number(n), String(s)),
  toYaml: (v) => toYaml(v),
  b64enc: (s) => Buffer.from(String(s)).toString('base64'),
  sha256sum: (s) => createHash('sha256').update(String(s)).digest('hex'),
  default: (d, v) => (truthy(v) ? v : d),
  trunc: (n, s) => String(s).slice(0, Number(n)),
  trimSuffix: (suffix, s) =>
    String(s).endsWith(String(suffix)) ? String(s).slice(0, -String(suffix).length) : s,
  randAlphaNum: (n) =>
    randomBytes(Number(n))
      .toString('base64')
      .replace(/[^A-Za-z0-9]/g, 'x')
      .slice(0, Number(n)),
  add: (...xs) => xs.reduce<number>((a, x) => a + Number(x), 0),
  not: (v) => !truthy(v),
  and: (...xs) => xs.find((x) => !truthy(x)) ?? xs.at(-1),
  or: (...xs) => xs.find((x) => truthy(x)) ?? xs.at(-1),
  eq: (a, b) => a === b,
  ne: (a, b) => a !== b,
  gt: (a, b) => Number(a) > Number(b),
  int: (v) => Math.trunc(Number(v)),
  list: (...xs) => xs,
  index: (c, k) => (c as Record<string, unknown> | unknown[] | null)?.[k as never],
  dict: (...kv) => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i + 1 < kv.length; i += 2) out[String(kv[i])] = kv[i + 1];
    return out;
  },
  get: (m, k) => (m as Record<string, unknown>)[String(k)] ?? '',
  hasKey: (m, k) => Object.hasOwn(m as object, String(k)),
  set: (m, k, v) => {
    (m as Record<string, unknown>)[String(k)] = v;
    return m;
  },
  deepCopy: (v) => structuredClone(v),
  mergeOverwrite: (dest, ...sources) => {
    for (const source of sources)
      mergeInto(dest as Record<string, unknown>, source as Record<string, unknown>);
    return dest;
  },
  // Sprig: dig "a" "b" default map.
  dig: (...args) => {
    const map = args.pop();
    const fallback = args.pop();
    let at: unknown = map;
    for (const key of args) at = isMap(at) ? at[String(key)] : undefined;
    return at ?? fallback;
  },
  printf: (format, ...args) => {
    let i = 0;
    return String(format).replace(/%[vsd]/g, () => show(args[i++]));
  },
  fromYaml: (s) => (parseYaml(String(s)) as unknown) ?? {},
  // Replaced per render by the objects of the simulated cluster (none: as `helm template` sees it).
  lookup: () => ({}),
  fail: (message) => {
    throw new TemplateFailure(String(message));
  },
};

/** Sprig's mergeOverwrite: maps merge key by key, everything else from `source` replaces. */
function mergeInto(dest: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    const at = dest[key];
    if (isMap(at) && isMap(value)) mergeInto(at, value);
    else dest[key] = value;
  }
}
const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** `"a b" .X (f .Y) 3` → words, keeping quoted strings and parenthesised groups whole. */
function words(command: string): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < command.length) {
    const c = command[at] ?? '';
    if (/\s/.test(c)) {
      at++;
      continue;
    }
    let end = at;
    if (c === '"') {
      end = at + 1;
      while (end < command.length && command[end] !== '"') end += command[end] === '\\' ? 2 : 1;
      end++;
    } else if (c === '(') {
      let depth = 0;
      for (; end < command.length; end++) {
        const d = command[end];
        if (d === '"') {
          end++;
          while (end < command.length && command[end] !== '"') end += command[end] === '\\' ? 2 : 1;
        } else if (d === '(') depth++;
        else if (d === ')' && --depth === 0) break;
      }
      end++;
    } else while (end < command.length && !/\s/.test(command[end] ?? '')) end++;
    out.push(command.slice(at, end));
    at = end;
  }
  return out;
}

/** Splits a pipeline on the `|` outside quotes and parentheses. */
function commands(pipeline: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < pipeline.length; i++) {
    const c = pipeline[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) {
      out.push(pipeline.slice(start, i));
      start = i + 1;
    }
  }
  out.push(pipeline.slice(start));
  return out;
}

function term(word: string, scope: Scope): unknown {
  if (word.startsWith('"')) return JSON.parse(word) as string;
  if (/^-?\d+$/.test(word)) return Number(word);
  if (word === 'true' || word === 'false') return word === 'true';
  if (word.startsWith('(') && word.endsWith(')')) return evaluate(word.slice(1, -1), scope);
  if (word === '.') return scope.dot;
  if (word in FUNCTIONS && word !== 'fail') return FUNCTIONS[word]?.();
  if (word.startsWith('.') || word.startsWith('$')) {
    const variable = /^\$(\w+)/.exec(word)?.[1];
    if (variable !== undefined && !scope.vars.has(variable))
      throw new Error(`undefined variable '$${variable}'`);
    let at: unknown =
      variable !== undefined ? scope.vars.get(variable) : word.startsWith('$') ? scope.root : scope.dot;
    const fields = variable !== undefined ? word.slice(variable.length + 1) : word.replace(/^\$/, '');
    for (const key of fields.split('.').filter(Boolean)) {
      at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[key] : undefined;
    }
    return at;
  }
  throw new Error(`unsupported term '${word}'`);
}

function evaluate(pipeline: string, scope: Scope): unknown {
  const assignment = /^\$(\w+)\s*(:?=)\s*([\s\S]*)$/.exec(pipeline);
  if (assignment !== null) {
    const [, name = '', op, rest = ''] = assignment;
    if (op === '=' && !scope.vars.has(name)) throw new Error(`assignment to undefined variable '$${name}'`);
    scope.vars.set(name, evaluate(rest, scope));
    return undefined;
  }
  let value: unknown;
  let first = true;
  for (const command of commands(pipeline)) {
    const [head = '', ...rest] = words(command.trim());
    const args = rest.map((w) => term(w, scope));
    if (!first) args.push(value);
    if (head === 'include') {
      const [name, ctx] = args;
      const body = scope.defines.get(String(name));
      if (body === undefined) throw new Error(`include of undefined template '${String(name)}'`);
      value = render(body, { ...scope, dot: ctx, vars: new Map() });
    } else if (head === 'lookup') value = lookup(scope.cluster, args);
    else if (head in FUNCTIONS) value = FUNCTIONS[head]?.(...args);
    else if (first && rest.length === 0) value = term(head, scope);
    else throw new Error(`unsupported function '${head}'`);
    first = false;
  }
  return value;
}

function show(v: unknown): string {
  if (v === undefined || v === null) return '';
  // Numbers and booleans print the same through JSON.
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function render(nodes: Node[], scope: Scope): string {
  let out = '';
  for (const node of nodes) {
    if (node.kind === 'text') out += node.text;
    else if (node.kind === 'action') out += show(evaluate(node.pipeline, scope));
    else {
      const value = evaluate(node.pipeline, scope);
      const branch = truthy(value) ? node.then : node.else;
      out += render(branch, node.kind === 'with' && truthy(value) ? { ...scope, dot: value } : scope);
    }
  }
  return out;
}

/**
 * Renders every template of a chart the way `helm template` would, for the subset above; with
 * `cluster`, `lookup` finds those objects, as in a `helm upgrade` of a release that made them.
 */
export function renderChart(
  templates: Record<string, string>,
  context: { Values: unknown; Chart: unknown; Release: unknown },
  cluster: readonly Record<string, unknown>[] = [],
): Record<string, string> {
  const defines = new Map<string, Node[]>();
  const parsed = Object.entries(templates).map(([name, text]) => [name, parse(text, defines)] as const);
  const out: Record<string, string> = {};
  for (const [name, nodes] of parsed) {
    if (name.startsWith('_')) continue;
    out[name] = render(nodes, { dot: context, root: context, defines, vars: new Map(), cluster });
  }
  return out;
}
