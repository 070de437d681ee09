import { createHash, randomBytes } from 'node:crypto';
import { stringify } from 'yaml';

/**
 * The subset of Go templates + Sprig the Helm chart uses, enough to render
 * it without helm (not installed here): text, `{{- … -}}` trimming,
 * comments, `define`/`include`, `if`/`else`/`with`/`end`, `not`, pipelines,
 * field paths on `.` and `$`, and the functions listed in FUNCTIONS. Anything
 * else throws, so a template using more fails the test instead of rendering wrong.
 */
type Node =
  | { kind: 'text'; text: string }
  | { kind: 'action'; pipeline: string }
  | { kind: 'if' | 'with'; pipeline: string; then: Node[]; else: Node[] };

interface Scope {
  dot: unknown;
  root: unknown;
  defines: Map<string, Node[]>;
}

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
  const block = (stops: string[]): { nodes: Node[]; stop: string } => {
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
      if (stops.includes(word)) return { nodes, stop: word };
      if (word === 'define') {
        const name = JSON.parse(action.slice('define'.length).trim()) as string;
        defines.set(name, block(['end']).nodes);
      } else if (word === 'if' || word === 'with') {
        const pipeline = action.slice(word.length).trim();
        const first = block(['else', 'end']);
        const second = first.stop === 'else' ? block(['end']).nodes : [];
        nodes.push({ kind: word, pipeline, then: first.nodes, else: second });
      } else if (['range', 'template', 'block', 'else', 'end'].includes(word)) {
        throw new Error(`unsupported action '${action}'`);
      } else nodes.push({ kind: 'action', pipeline: action });
    }
    if (stops.length > 0) throw new Error(`missing {{ ${stops.join(' / ')} }}`);
    return { nodes, stop: '' };
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
};

/** `"a b" .X 3` → words, keeping quoted strings whole. */
function words(command: string): string[] {
  return command.match(/"(?:[^"\\]|\\.)*"|\S+/g) ?? [];
}

function term(word: string, scope: Scope): unknown {
  if (word.startsWith('"')) return JSON.parse(word) as string;
  if (/^-?\d+$/.test(word)) return Number(word);
  if (word === 'true' || word === 'false') return word === 'true';
  if (word === '.') return scope.dot;
  if (word.startsWith('.') || word.startsWith('$')) {
    let at: unknown = word.startsWith('$') ? scope.root : scope.dot;
    for (const key of word.replace(/^\$/, '').split('.').filter(Boolean)) {
      at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[key] : undefined;
    }
    return at;
  }
  throw new Error(`unsupported term '${word}'`);
}

function evaluate(pipeline: string, scope: Scope): unknown {
  let value: unknown;
  let first = true;
  for (const command of pipeline.split(/\|(?=(?:[^"]*"[^"]*")*[^"]*$)/)) {
    const [head = '', ...rest] = words(command.trim());
    const args = rest.map((w) => term(w, scope));
    if (!first) args.push(value);
    if (head === 'include') {
      const [name, ctx] = args;
      const body = scope.defines.get(String(name));
      if (body === undefined) throw new Error(`include of undefined template '${String(name)}'`);
      value = render(body, { ...scope, dot: ctx });
    } else if (head in FUNCTIONS) value = FUNCTIONS[head]?.(...args);
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

/** Renders every template of a chart the way `helm template` would, for the subset above. */
export function renderChart(
  templates: Record<string, string>,
  context: { Values: unknown; Chart: unknown; Release: unknown },
): Record<string, string> {
  const defines = new Map<string, Node[]>();
  const parsed = Object.entries(templates).map(([name, text]) => [name, parse(text, defines)] as const);
  const out: Record<string, string> = {};
  for (const [name, nodes] of parsed) {
    if (name.startsWith('_')) continue;
    out[name] = render(nodes, { dot: context, root: context, defines });
  }
  return out;
}
