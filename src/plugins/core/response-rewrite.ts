import type { Condition } from '../../conditions/index.js';
import type { Context } from '../../core/context.js';
import { compileVarsGate } from '../condition-vars.js';
import { decodeBody } from '../content-codec.js';
import { ConfigError, definePlugin, type PluginEnv, type Template } from '../../core/plugin.js';
import { mentionsResponseBody } from '../response-body-refs.js';
import { compileRegex, type ConfigRegex } from '../../conditions/regex.js';
import { configReadsRequestBody } from '../request-body-refs.js';

type Scalar = string | number;

interface HeadersConfig {
  add?: string[];
  set?: Record<string, Scalar>;
  remove?: string[];
}

interface FilterConfig {
  regex: string;
  replace: string;
  scope: 'once' | 'global';
  options: string;
}

interface ResponseRewriteConfig {
  status_code?: number;
  body?: string;
  body_base64: boolean;
  headers?: HeadersConfig | Record<string, Scalar>;
  filters?: FilterConfig[];
  vars?: unknown[];
  add_headers?: unknown;
  set_headers?: unknown;
  remove_headers?: unknown;
}

/** Stale once the body changes: the server derives framing, and validators described the old body. */
const BODY_DERIVED = ['content-length', 'content-encoding', 'last-modified', 'etag'] as const;

const scalar = { type: ['string', 'number'] } as const;

const misplaced = {
  description: "Rejected: this is proxy-rewrite's key; use headers.add / headers.set / headers.remove.",
};

/** Rewrites status, body and headers of the response, optionally gated by a `vars` condition. */
export const responseRewrite = definePlugin({
  type: 'response-rewrite',
  readsRequestBody: configReadsRequestBody,
  category: 'core',
  description:
    'Rewrite the response status, body (replacement or regex filters) and headers, optionally only when vars holds.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      status_code: { type: 'integer', minimum: 200, maximum: 598, description: 'Status to force.' },
      body: {
        type: 'string',
        description: 'Replacement body ({{…}} templated unless body_base64); excludes filters.',
      },
      body_base64: { type: 'boolean', default: false, description: 'Decode body from base64 at load.' },
      headers: {
        description:
          '{add: ["Name: value"], set: {name: value}, remove: [name]}; a flat {name: value} map is treated as set. add/set values are templated ({{…}} and legacy $var).',
        anyOf: [
          {
            type: 'object',
            additionalProperties: false,
            properties: {
              add: { type: 'array', items: { type: 'string' } },
              set: { type: 'object', additionalProperties: scalar },
              remove: { type: 'array', items: { type: 'string', minLength: 1 } },
            },
          },
          { type: 'object', additionalProperties: scalar },
        ],
      },
      filters: {
        type: 'array',
        minItems: 1,
        description: 'Regex substitutions on the body (decoded from gzip/deflate/br first); excludes body.',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['regex', 'replace'],
          properties: {
            regex: { type: 'string', minLength: 1 },
            replace: { type: 'string', description: 'Replacement; $1 refers to a capture.' },
            scope: { type: 'string', enum: ['once', 'global'], default: 'once' },
            options: {
              type: 'string',
              enum: ['', 'i'],
              default: '',
              description: "'i' for case-insensitive.",
            },
          },
        },
      },
      vars: {
        type: 'array',
        description: 'Condition gate (docs/conditions.md); false leaves the response untouched.',
      },
      add_headers: misplaced,
      set_headers: misplaced,
      remove_headers: misplaced,
    },
  },
  outputs: { success: { kind: 'success' } },
  templated: ['body', 'headers.add[]', 'headers.set.*'],
  readsResponseBody: (c: ResponseRewriteConfig) => {
    if (c.filters !== undefined) return true;
    if (!c.body_base64 && mentionsResponseBody(c.body, false)) return true;
    const { add, set } = splitHeaders(c.headers);
    if (add.some((entry) => mentionsResponseBody(entry, true))) return true;
    if (Object.values(set).some((v) => mentionsResponseBody(String(v), true))) return true;
    try {
      return c.vars !== undefined && compileVarsGate(c.vars, 'vars').readsResponseBody;
    } catch {
      return false; // create reports the bad expression
    }
  },
  create(config: ResponseRewriteConfig, env) {
    for (const key of ['add_headers', 'set_headers', 'remove_headers'] as const) {
      if (config[key] !== undefined) {
        throw new ConfigError(
          key,
          "is proxy-rewrite's key; response-rewrite takes headers: {add: ['Name: value'], set: {name: value}, remove: [name]}",
        );
      }
    }
    if (config.body !== undefined && config.filters !== undefined) {
      throw new ConfigError('filters', "'body' and 'filters' exclude each other");
    }
    const gate: Condition | undefined =
      config.vars === undefined ? undefined : compileVarsGate(config.vars, 'vars');
    const status = config.status_code;
    const body = compileBody(config, env);
    const filters = (config.filters ?? []).map(compileFilter);
    const headers = compileHeaders(config.headers, env);
    return {
      run(ctx) {
        if (gate !== undefined && !gate.evaluate(ctx)) return 'success';
        const res = ctx.response;
        if (status !== undefined) res.status = status;
        if (body !== undefined) {
          res.setBody(typeof body === 'string' || Buffer.isBuffer(body) ? body : body.render(ctx));
          for (const name of BODY_DERIVED) delete res.headers[name];
        } else if (filters.length > 0) applyFilters(ctx, filters, env);
        headers(ctx);
        return 'success';
      },
    };
  },
});

function compileBody(config: ResponseRewriteConfig, env: PluginEnv): Buffer | Template | undefined {
  if (config.body === undefined) {
    if (config.body_base64) throw new ConfigError('body_base64', "requires 'body'");
    return undefined;
  }
  if (!config.body_base64) return env.template(config.body, 'body', { phase: 'response' });
  const text = config.body.trim();
  if (text === '' || !/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 === 1) {
    throw new ConfigError('body', 'is not valid base64');
  }
  return Buffer.from(text, 'base64');
}

interface Filter {
  pattern: ConfigRegex;
  replace: string;
  global: boolean;
}

function compileFilter(filter: FilterConfig, i: number): Filter {
  const pattern = compileRegex(filter.regex, `filters[${i}].regex`, filter.options);
  return { pattern, replace: filter.replace, global: filter.scope === 'global' };
}

/** Runs the filters over the (decoded) body; a body that cannot be decoded is left untouched. */
function applyFilters(ctx: Context, filters: Filter[], env: PluginEnv): void {
  const res = ctx.response;
  if (res.body === null) return;
  let text: string;
  try {
    text = decodeBody(res.body, res.header('content-encoding')).toString('utf8');
  } catch (err) {
    env.logger.warn(
      { policy: env.policy, node: env.nodeId },
      `response-rewrite: filters skipped: ${(err as Error).message}`,
    );
    return;
  }
  for (const { pattern, replace, global } of filters) {
    text = global ? pattern.replaceAll(text, replace) : pattern.replace(text, replace);
  }
  res.setBody(text);
  for (const name of BODY_DERIVED) delete res.headers[name];
}

/** The structured shape, or the deprecated flat map read as `set`. */
function splitHeaders(headers: ResponseRewriteConfig['headers']): Required<HeadersConfig> {
  if (headers === undefined) return { add: [], set: {}, remove: [] };
  const h = headers as Record<string, unknown>;
  const structured =
    Array.isArray(h.add) ||
    Array.isArray(h.remove) ||
    (typeof h.set === 'object' && h.set !== null && !Array.isArray(h.set));
  if (!structured) return { add: [], set: headers as Record<string, Scalar>, remove: [] };
  const s = headers as HeadersConfig;
  return { add: s.add ?? [], set: s.set ?? {}, remove: s.remove ?? [] };
}

function compileHeaders(config: ResponseRewriteConfig['headers'], env: PluginEnv): (ctx: Context) => void {
  const { add, set, remove } = splitHeaders(config);
  const options = { legacy: true, phase: 'response' } as const;
  const adds = add.map((entry, i): [string, Template] => {
    const colon = entry.indexOf(':');
    const name = colon === -1 ? '' : entry.slice(0, colon).trim();
    const value = colon === -1 ? '' : entry.slice(colon + 1).trim();
    if (name === '' || /\s/.test(name) || value === '') {
      throw new ConfigError(`headers.add[${i}]`, `'${entry}' must be 'Name: value'`);
    }
    return [name.toLowerCase(), env.template(value, `headers.add[${i}]`, options)];
  });
  const sets = Object.entries(set).map(([name, value]): [string, Template] => [
    name.toLowerCase(),
    env.template(String(value), `headers.set.${name}`, options),
  ]);
  const removes = remove.map((name) => name.toLowerCase());
  if (adds.length === 0 && sets.length === 0 && removes.length === 0) return () => {};
  return (ctx) => {
    const headers = ctx.response.headers;
    for (const [name, template] of adds) {
      const value = template.render(ctx);
      const current = headers[name];
      headers[name] =
        current === undefined ? value : [...(Array.isArray(current) ? current : [current]), value];
    }
    for (const [name, template] of sets) headers[name] = template.render(ctx);
    for (const name of removes) delete headers[name];
  };
}
