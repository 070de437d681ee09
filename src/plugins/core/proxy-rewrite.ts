import { ConfigError, definePlugin } from '../define.js';
import { headerListSchema, headerPairs, type HeaderListConfig } from '../shared-schemas.js';

interface ProxyRewriteConfig {
  phase: string;
  strip_path_prefix?: string;
  add_path_prefix?: string;
  add_headers?: HeaderListConfig;
  remove_headers: string[];
  headers?: unknown;
}

function appendHeader(
  headers: Record<string, string | string[] | undefined>,
  name: string,
  value: string,
): void {
  const current = headers[name];
  if (current === undefined) headers[name] = value;
  else if (Array.isArray(current)) current.push(value);
  else headers[name] = [current, value];
}

/** Rewrites the request path and adds/removes headers on the request or the response side. */
export const proxyRewrite = definePlugin({
  type: 'proxy-rewrite',
  category: 'core',
  description: 'Rewrite the request path (strip/add prefix) and add or remove request or response headers.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      phase: { type: 'string', default: 'request' },
      strip_path_prefix: { type: 'string' },
      add_path_prefix: { type: 'string' },
      add_headers: headerListSchema,
      remove_headers: { type: 'array', items: { type: 'string' }, default: [] },
      headers: {},
    },
  },
  outputs: { success: { kind: 'success' } },
  templated: ['add_headers.*'],
  create(config: ProxyRewriteConfig, env) {
    if (config.headers !== undefined) {
      throw new ConfigError('headers', 'is not a proxy-rewrite key; use add_headers / remove_headers');
    }
    const response = config.phase === 'response';
    const strip = config.strip_path_prefix;
    const prefix = config.add_path_prefix;
    const add = headerPairs(config.add_headers).map(
      ([name, value]) =>
        [
          name,
          env.template(value, `add_headers.${name}`, { phase: response ? 'response' : 'request' }),
        ] as const,
    );
    const remove = config.remove_headers.map((h) => h.toLowerCase());
    return {
      run(ctx) {
        if (!response) {
          const req = ctx.request;
          if (strip !== undefined && strip !== '' && req.path.startsWith(strip)) {
            const rest = req.path.slice(strip.length);
            req.path = rest.startsWith('/') ? rest : `/${rest}`;
          }
          if (prefix !== undefined && prefix !== '') {
            req.path = `${prefix.endsWith('/') ? prefix.slice(0, -1) : prefix}${req.path}`;
          }
        }
        const headers = response ? ctx.response.headers : ctx.request.headers;
        for (const name of remove) delete headers[name];
        for (const [name, value] of add) appendHeader(headers, name, value.render(ctx));
        return 'success';
      },
    };
  },
});
