import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { compileRegex } from '../../conditions/regex.js';

interface MaskRuleConfig {
  type: 'query' | 'header' | 'body';
  name: string;
  action: 'remove' | 'replace' | 'regex';
  value?: string;
  regex?: string;
  body_format?: 'json';
}

/** What a rule does to one value: `undefined` removes it. */
type Mask = (value: string) => string | undefined;

interface Rule {
  type: MaskRuleConfig['type'];
  name: string;
  /** Dotted JSON path of body rules (numeric segments index arrays). */
  path: (string | number)[];
  mask: Mask;
  /** Regex rules only touch strings; remove/replace touch any JSON value. */
  stringsOnly: boolean;
}

/** Masks sensitive query parameters, request headers and JSON body fields before later nodes see them. */
export const dataMask = definePlugin({
  type: 'data-mask',
  category: 'security',
  description:
    'Remove or mask sensitive query parameters, request headers and JSON body fields before later nodes (upstream, loggers) see them.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      request: {
        type: 'array',
        default: [],
        description: 'Rules applied in order.',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['type', 'name', 'action'],
          properties: {
            type: { type: 'string', enum: ['query', 'header', 'body'] },
            name: {
              type: 'string',
              minLength: 1,
              description: 'Parameter or header name, or a dotted JSON path (a.0.b, leading $. allowed).',
            },
            action: { type: 'string', enum: ['remove', 'replace', 'regex'] },
            value: { type: 'string', description: 'Replacement (replace, regex; $1 refers to a capture).' },
            regex: { type: 'string', description: 'Pattern of the regex action; every match is replaced.' },
            body_format: { type: 'string', enum: ['json'], description: 'Required for body rules.' },
          },
        },
      },
      max_body_size: {
        type: 'integer',
        minimum: 1,
        default: 1048576,
        description: 'Bodies larger than this skip the body rules.',
      },
    },
  },
  outputs: { success: { kind: 'success' } },
  create(config) {
    const rules = config.request.map((rule, i) => compileRule(rule, `request[${i}]`));
    const maxBody = config.max_body_size;
    const queryRules = rules.filter((r) => r.type === 'query');
    const headerRules = rules.filter((r) => r.type === 'header');
    const bodyRules = rules.filter((r) => r.type === 'body');
    return {
      run(ctx) {
        if (queryRules.length > 0) maskQuery(ctx, queryRules);
        for (const rule of headerRules) maskHeader(ctx, rule);
        if (bodyRules.length > 0) maskBody(ctx, bodyRules, maxBody);
        return 'success';
      },
    };
  },
});

function compileRule(rule: MaskRuleConfig, at: string): Rule {
  if (rule.type === 'body' && rule.body_format === undefined) {
    throw new ConfigError(`${at}.body_format`, "is required for body rules (only 'json')");
  }
  let mask: Mask;
  switch (rule.action) {
    case 'remove':
      mask = () => undefined;
      break;
    case 'replace': {
      const value = rule.value;
      if (value === undefined) throw new ConfigError(`${at}.value`, "is required for action 'replace'");
      mask = () => value;
      break;
    }
    case 'regex': {
      if (rule.regex === undefined) throw new ConfigError(`${at}.regex`, "is required for action 'regex'");
      const value = rule.value;
      if (value === undefined) throw new ConfigError(`${at}.value`, "is required for action 'regex'");
      const pattern = compileRegex(rule.regex, `${at}.regex`);
      mask = (s) => pattern.replaceAll(s, value);
      break;
    }
  }
  const name = rule.type === 'header' ? rule.name.toLowerCase() : rule.name;
  return {
    type: rule.type,
    name,
    path: rule.type === 'body' ? parsePath(rule.name, `${at}.name`) : [],
    mask,
    stringsOnly: rule.action === 'regex',
  };
}

function parsePath(raw: string, at: string): (string | number)[] {
  const trimmed = raw.startsWith('$.') ? raw.slice(2) : raw.startsWith('$') ? raw.slice(1) : raw;
  const segments = trimmed.split('.');
  if (trimmed === '' || segments.includes(''))
    throw new ConfigError(at, `JSON path '${raw}' has an empty segment`);
  return segments.map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function maskQuery(ctx: Context, rules: Rule[]): void {
  const query = ctx.request.query;
  let changed = false;
  for (const rule of rules) {
    const values = query.get(rule.name);
    if (values === undefined) continue;
    const kept = values.map(rule.mask).filter((v): v is string => v !== undefined);
    if (kept.length === 0) query.delete(rule.name);
    else query.set(rule.name, kept);
    changed = true;
  }
  // Assigning re-serializes the raw query the upstream receives.
  if (changed) ctx.request.query = query;
}

function maskHeader(ctx: Context, rule: Rule): void {
  const headers = ctx.request.headers;
  const value = headers[rule.name];
  if (value === undefined) return;
  const kept = (Array.isArray(value) ? value : [value])
    .map(rule.mask)
    .filter((v): v is string => v !== undefined);
  if (kept.length === 0) delete headers[rule.name];
  else headers[rule.name] = kept.length === 1 ? kept[0] : kept;
}

function maskBody(ctx: Context, rules: Rule[], maxBody: number): void {
  const body = ctx.request.body;
  if (body === null || body.length === 0 || body.length > maxBody) return;
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    return; // Not JSON: body rules do not apply, the request goes on untouched.
  }
  let changed = false;
  for (const rule of rules) if (maskJson(doc, rule)) changed = true;
  if (!changed) return;
  ctx.request.body = Buffer.from(JSON.stringify(doc));
  delete ctx.request.headers['content-length'];
}

function maskJson(doc: unknown, rule: Rule): boolean {
  let node: unknown = doc;
  const path = rule.path;
  for (let i = 0; i < path.length - 1; i++) {
    node = child(node, path[i]!);
    if (node === undefined) return false;
  }
  const last = path[path.length - 1]!;
  const current = child(node, last);
  if (current === undefined) return false;
  if (rule.stringsOnly && typeof current !== 'string') return false;
  const masked = rule.mask(typeof current === 'string' ? current : JSON.stringify(current));
  if (Array.isArray(node) && typeof last === 'number') {
    if (masked === undefined) node.splice(last, 1);
    else node[last] = masked;
    return true;
  }
  const record = node as Record<string, unknown>;
  if (masked === undefined) delete record[String(last)];
  else record[String(last)] = masked;
  return true;
}

function child(node: unknown, key: string | number): unknown {
  if (Array.isArray(node)) return typeof key === 'number' ? (node as unknown[])[key] : undefined;
  if (typeof node === 'object' && node !== null && Object.hasOwn(node, String(key))) {
    return (node as Record<string, unknown>)[String(key)];
  }
  return undefined;
}
