import type { Context, HeaderMap } from '../../core/context.js';
import { isHeaderName } from '../../template/readers.js';
import { ConfigError, definePlugin, type PluginEnv, type Template } from '../../core/plugin.js';
import { compileRegex, type ConfigRegex } from '../../conditions/regex.js';
import { headerListSchema, headerPairs, type HeaderListConfig } from '../shared-schemas.js';
import { mentionsResponseBody } from '../response-body-refs.js';
import { configReadsRequestBody } from '../request-body-refs.js';
import { NodeError } from '../../core/errors.js';
import { normaliseTarget, PathRejected } from '../../server/request-path.js';

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

/**
 * Where the query of a `uri` begins: its first `?` outside `{{…}}` (the scan of the template
 * compiler), or -1. A `?` that a template value renders is part of the path (F-12).
 */
function literalQueryStart(text: string): number {
  let pos = 0;
  for (;;) {
    const first = text.indexOf('{{', pos);
    const close = first === -1 ? -1 : text.indexOf('}}', first + 2);
    const end = close === -1 ? text.length : text.lastIndexOf('{{', close - 2);
    const q = text.indexOf('?', pos);
    if (q !== -1 && q < end) return q;
    if (close === -1) return -1;
    pos = close + 2;
  }
}

/** Raw in a rendered path: controls, space, DEL, `"#<>?[\]^`{|}` and a `%` that starts no escape. */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const UNSAFE_IN_PATH = /[\u0000-\u0020"#<>?[\\\]^`{|}\u007f]|%(?![0-9A-Fa-f]{2})/g;
/** The same in a rendered query, where `?` is allowed. */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const UNSAFE_IN_QUERY = /[\u0000-\u0020"#<>[\\\]^`{|}\u007f]|%(?![0-9A-Fa-f]{2})/g;
const percentEncode = (c: string): string =>
  `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;

/** A `..` segment, raw or percent-encoded (`%2e%2E`). */
const DOT_DOT_SEGMENT = /(^|\/)(?:\.|%2e){2}(\/|$)/i;

/**
 * A rewritten path as the upstream gets it, normalised like a request path (`normaliseTarget`):
 * unsafe characters percent-encoded (`#` and `?` too: a path holds no fragment and no query),
 * `.` and empty segments removed. Throws {@link PathRejected} for a path that climbs above the
 * root or hides a dot-segment (`..%2F`), as the front refuses such a request, and, when a template
 * rendered part of it (`templated`), for any `..`: a value must not climb out of the path the
 * route chose (`/inj/{{request.query.p}}` with `p=../admin`).
 */
function rewrittenPath(path: string, templated: boolean): string {
  const encoded = path.replace(UNSAFE_IN_PATH, percentEncode);
  if (templated && DOT_DOT_SEGMENT.test(encoded))
    throw new PathRejected('request path has a templated `..` segment');
  return normaliseTarget(encoded.startsWith('/') ? encoded : `/${encoded}`);
}

const safeQuery = (query: string): string => query.replace(UNSAFE_IN_QUERY, percentEncode);

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

    // The query of `uri` is the part after its own `?`, never one a template value renders.
    const queryAt = config.uri === undefined ? -1 : literalQueryStart(config.uri);
    const uri =
      config.uri === undefined
        ? undefined
        : env.template(queryAt === -1 ? config.uri : config.uri.slice(0, queryAt), 'uri');
    const uriQuery =
      config.uri === undefined || queryAt === -1
        ? undefined
        : env.template(config.uri.slice(queryAt + 1), 'uri');
    if (uri?.isStatic === true) {
      try {
        rewrittenPath(uri.source, false);
      } catch (err) {
        if (err instanceof PathRejected)
          throw new ConfigError('uri', err.message.replace(/^request path/, 'is a path that'));
        throw err;
      }
    }
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
    const templatedPath = uri?.isStatic === false || prefix?.isStatic === false;
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
      const before = req.path;
      if (uri !== undefined) {
        req.path = uri.render(ctx);
        if (uriQuery !== undefined) req.rawQuery = safeQuery(uriQuery.render(ctx));
      } else {
        for (const [pattern, replacement] of regexUri) {
          if (pattern.test(req.path)) {
            // A `?` can only come from the replacement (a request path holds none): it starts the query.
            const target = pattern.replace(req.path, replacement);
            const q = target.indexOf('?');
            req.path = q === -1 ? target : target.slice(0, q);
            if (q !== -1) req.rawQuery = safeQuery(target.slice(q + 1));
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
      if (req.path !== before) {
        try {
          req.path = rewrittenPath(req.path, templatedPath);
        } catch (err) {
          if (!(err instanceof PathRejected)) throw err;
          throw new NodeError(
            'UPSTREAM_REQUEST_BUILD_ERROR',
            `proxy-rewrite: ${err.message.replace(/^request path/, 'the rewritten path')}`,
          );
        }
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
