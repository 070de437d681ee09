import type { Context, HeaderMap } from '../../core/context.js';
import { isHeaderName } from '../../template/readers.js';
import { ConfigError, definePlugin, type PluginEnv, type Template } from '../../core/plugin.js';
import { compileRegex, type ConfigRegex } from '../../conditions/regex.js';
import { headerListSchema, headerPairs, type HeaderListConfig } from '../shared-schemas.js';
import { mentionsResponseBody } from '../response-body-refs.js';
import { configReadsRequestBody } from '../request-body-refs.js';

interface HeaderActions {
  add?: HeaderListConfig;
  set?: HeaderListConfig;
  remove?: string[];
}

interface ProxyRewriteConfig {
  phase: string;
  uri?: string;
  regex_uri?: string[];
  strip_path_prefix?: string;
  add_path_prefix?: string;
  host?: string;
  method?: string;
  add_headers?: HeaderListConfig;
  remove_headers: string[];
  headers?: HeaderActions;
}

type HeaderOp = readonly [name: string, value: Template];

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'CONNECT', 'TRACE', 'PURGE'];

function appendHeader(headers: HeaderMap, name: string, value: string): void {
  const current = headers[name];
  if (current === undefined) headers[name] = value;
  else if (Array.isArray(current)) current.push(value);
  else headers[name] = [current, value];
}

function headerOps(
  list: HeaderListConfig | undefined,
  key: string,
  env: PluginEnv,
  phase: 'request' | 'response',
): HeaderOp[] {
  return headerPairs(list).map(([name, value]) => {
    if (!isHeaderName(name)) throw new ConfigError(`${key}.${name}`, 'is not a valid header name');
    return [name, env.template(value, `${key}.${name}`, { phase })] as const;
  });
}

/** Every header value this config renders, for streaming inference. */
function headerValues(config: ProxyRewriteConfig): string[] {
  return [config.add_headers, config.headers?.add, config.headers?.set].flatMap((list) =>
    headerPairs(list).map(([, value]) => value),
  );
}

/**
 * Rewrites the request on its way upstream (path, query, method, host,
 * headers), or with `phase: response` the headers of the response on its way
 * back. Header actions run add, then remove, then set.
 */
export const proxyRewrite = definePlugin({
  type: 'proxy-rewrite',
  readsRequestBody: configReadsRequestBody,
  category: 'core',
  description:
    'Rewrite the upstream request (uri, regex_uri, path prefixes, method, host) and add, set or remove request or response headers.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      phase: {
        type: 'string',
        default: 'request',
        description: 'request: rewrite the request; response: header actions apply to the response.',
      },
      uri: {
        type: 'string',
        minLength: 1,
        description: 'New path (and ?query when it has one); templated. Wins over regex_uri.',
      },
      regex_uri: {
        type: 'array',
        items: { type: 'string' },
        minItems: 2,
        description:
          'Pairs [pattern, replacement, …]: the first pattern matching the path rewrites it ($1 refers to groups).',
      },
      strip_path_prefix: {
        type: 'string',
        description: 'Prefix removed from the path when it starts with it.',
      },
      add_path_prefix: {
        type: 'string',
        description: 'Prefix prepended to the path, after stripping; templated.',
      },
      host: {
        type: 'string',
        minLength: 1,
        description: 'New Host (request.host and the host header); templated.',
      },
      method: { type: 'string', enum: METHODS, description: 'New request method.' },
      add_headers: {
        ...headerListSchema,
        description: 'Headers appended, as {name: value} or [{name, value}]; values templated.',
      },
      remove_headers: {
        type: 'array',
        items: { type: 'string' },
        default: [],
        description: 'Header names deleted.',
      },
      headers: {
        type: 'object',
        additionalProperties: false,
        description: 'Header actions in the APISIX shape: add, then remove, then set.',
        properties: {
          add: { ...headerListSchema, description: 'Headers appended; values templated.' },
          set: { ...headerListSchema, description: 'Headers replaced; values templated.' },
          remove: { type: 'array', items: { type: 'string' }, description: 'Header names deleted.' },
        },
      },
    },
  },
  outputs: { success: { kind: 'success' } },
  templated: ['uri', 'host', 'add_path_prefix', 'add_headers.*', 'headers.add.*', 'headers.set.*'],
  // docs/configuration.md#streaming: only response-phase header values that render the response body read it.
  readsResponseBody: (config: ProxyRewriteConfig) =>
    config.phase === 'response' && headerValues(config).some((v) => mentionsResponseBody(v, false)),
  create(config: ProxyRewriteConfig, env) {
    if (config.phase !== 'request' && config.phase !== 'response') {
      env.warn('phase', `'${config.phase}' is not request or response; treated as request`);
    }
    const phase = config.phase === 'response' ? 'response' : 'request';
    const response = phase === 'response';
    if (response) {
      for (const key of [
        'uri',
        'regex_uri',
        'strip_path_prefix',
        'add_path_prefix',
        'host',
        'method',
      ] as const) {
        if (config[key] !== undefined) env.warn(key, 'only applies in the request phase; ignored');
      }
    }

    const uri = config.uri === undefined ? undefined : env.template(config.uri, 'uri');
    const regexUri: (readonly [ConfigRegex, string])[] = [];
    if (config.regex_uri !== undefined) {
      if (config.regex_uri.length % 2 !== 0) {
        throw new ConfigError(
          'regex_uri',
          'must hold [pattern, replacement] pairs (an even number of entries)',
        );
      }
      for (let i = 0; i < config.regex_uri.length; i += 2) {
        regexUri.push([compileRegex(config.regex_uri[i]!, `regex_uri[${i}]`), config.regex_uri[i + 1]!]);
      }
    }
    const strip = config.strip_path_prefix === '' ? undefined : config.strip_path_prefix;
    const prefix =
      config.add_path_prefix === undefined || config.add_path_prefix === ''
        ? undefined
        : env.template(config.add_path_prefix, 'add_path_prefix');
    const host = config.host === undefined ? undefined : env.template(config.host, 'host');
    const method = config.method;

    const add = [
      ...headerOps(config.add_headers, 'add_headers', env, phase),
      ...headerOps(config.headers?.add, 'headers.add', env, phase),
    ];
    const remove = [...config.remove_headers, ...(config.headers?.remove ?? [])].map((h) =>
      h.trim().toLowerCase(),
    );
    const set = headerOps(config.headers?.set, 'headers.set', env, phase);
    const rewritesRequest =
      !response &&
      (uri !== undefined ||
        regexUri.length > 0 ||
        strip !== undefined ||
        prefix !== undefined ||
        host !== undefined ||
        method !== undefined);

    const rewriteRequest = (ctx: Context): void => {
      const req = ctx.request;
      if (uri !== undefined) {
        const target = uri.render(ctx);
        const q = target.indexOf('?');
        const path = q === -1 ? target : target.slice(0, q);
        req.path = path.startsWith('/') ? path : `/${path}`;
        if (q !== -1) req.rawQuery = target.slice(q + 1);
      } else {
        for (const [pattern, replacement] of regexUri) {
          if (pattern.test(req.path)) {
            req.path = pattern.replace(req.path, replacement);
            break;
          }
        }
      }
      if (strip !== undefined && req.path.startsWith(strip)) {
        const rest = req.path.slice(strip.length);
        req.path = rest.startsWith('/') ? rest : `/${rest}`;
      }
      if (prefix !== undefined) {
        const text = prefix.render(ctx);
        req.path = `${text.endsWith('/') ? text.slice(0, -1) : text}${req.path}`;
      }
      if (method !== undefined) req.method = method;
      if (host !== undefined) {
        const value = host.render(ctx);
        req.host = value;
        req.headers.host = value;
      }
    };

    return {
      run(ctx) {
        if (rewritesRequest) rewriteRequest(ctx);
        const headers = response ? ctx.response.headers : ctx.request.headers;
        for (const [name, value] of add) appendHeader(headers, name, value.render(ctx));
        for (const name of remove) delete headers[name];
        for (const [name, value] of set) headers[name] = value.render(ctx);
        return 'success';
      },
    };
  },
});
