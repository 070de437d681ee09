import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin, type Template } from '../../core/plugin.js';
import { compileRegex, type ConfigRegex } from '../../conditions/regex.js';
import { configReadsRequestBody } from '../request-body-refs.js';

type RedirectPort = 'success' | 'redirect';

/** One `regex_uri` pair: the pattern and its replacement (`$1`… captures). */
interface Rewrite {
  pattern: ConfigRegex;
  replacement: string;
}

/** Characters a URI may carry as they are (RFC 3986 unreserved + reserved, and `%` of existing escapes). */
const URI_SAFE = /[^A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]/gu;

/** Percent-encodes what cannot appear in a Location value, keeping reserved characters and escapes. */
export function encodeUriUnsafe(uri: string): string {
  return uri.replace(URI_SAFE, (ch) => encodeURIComponent(ch));
}

/** Fills `ctx.response` with an empty-bodied redirect. */
function prepare(ctx: Context, status: number, location: string): 'redirect' {
  const res = ctx.response;
  res.status = status;
  res.setBody('');
  delete res.headers['content-encoding'];
  res.headers.location = location;
  return 'redirect';
}

function appendQuery(uri: string, rawQuery: string): string {
  if (rawQuery === '') return uri;
  return `${uri}${uri.includes('?') ? '&' : '?'}${rawQuery}`;
}

/** Answers with a 3xx: to a `uri` template, to the first matching `regex_uri` rewrite, or to https. */
export const redirect = definePlugin({
  type: 'redirect',
  readsRequestBody: configReadsRequestBody,
  category: 'core',
  description:
    'Answer with a 3xx redirect: to a templated uri, to a regex rewrite of the path, or from http to https.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      uri: {
        type: 'string',
        minLength: 1,
        description: 'Redirect target; templated with {{…}} and legacy $var (e.g. https://$host/new$uri).',
      },
      regex_uri: {
        type: 'array',
        minItems: 2,
        items: { type: 'string' },
        description:
          '[regex, replacement, …] pairs matched against the path; the first match redirects, no match continues on success.',
      },
      http_to_https: {
        type: 'boolean',
        default: false,
        description:
          'Redirect plain-HTTP requests to https://$host$request_uri (301 GET/HEAD, 308 otherwise).',
      },
      ret_code: {
        type: 'integer',
        minimum: 200,
        maximum: 599,
        default: 302,
        description: 'Status of uri and regex_uri redirects.',
      },
      append_query_string: {
        type: 'boolean',
        default: false,
        description: 'Append the original query string to the target; not with http_to_https.',
      },
      encode_uri: {
        type: 'boolean',
        default: false,
        description: 'Percent-encode characters of the target that a URI may not carry.',
      },
    },
  },
  outputs: {
    success: {
      kind: 'success',
      description: 'No redirect: already https (http_to_https) or no regex_uri pattern matched.',
    },
    redirect: { kind: 'outcome', description: 'A 3xx redirect response is prepared; wire to client.' },
  },
  templated: ['uri'],
  create(config, env) {
    const modes = [config.uri !== undefined, config.regex_uri !== undefined, config.http_to_https].filter(
      Boolean,
    ).length;
    if (modes !== 1) {
      throw new ConfigError('', "exactly one of 'uri', 'regex_uri' or 'http_to_https: true' is required");
    }
    if (config.http_to_https && config.append_query_string) {
      throw new ConfigError(
        'append_query_string',
        "cannot be combined with 'http_to_https', which keeps the query string already",
      );
    }
    const finish = (ctx: Context, target: string): string => {
      const withQuery = config.append_query_string ? appendQuery(target, ctx.request.rawQuery) : target;
      return config.encode_uri ? encodeUriUnsafe(withQuery) : withQuery;
    };
    const status = config.ret_code;

    if (config.http_to_https) {
      return {
        run(ctx): RedirectPort {
          const req = ctx.request;
          // An outer proxy that terminated TLS says so in X-Forwarded-Proto.
          const scheme = req.header('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase() ?? req.scheme;
          if (scheme === 'https') return 'success';
          const host = req.header('host') ?? req.host;
          const code = req.method === 'GET' || req.method === 'HEAD' ? 301 : 308;
          return prepare(ctx, code, finish(ctx, `https://${host}${req.url}`));
        },
      };
    }

    if (config.uri !== undefined) {
      const uri: Template = env.template(config.uri, 'uri', { legacy: true });
      return {
        run: (ctx): RedirectPort => prepare(ctx, status, finish(ctx, uri.render(ctx))),
      };
    }

    const rewrites = compileRewrites(config.regex_uri ?? []);
    return {
      run(ctx): RedirectPort {
        const path = ctx.request.path;
        for (const { pattern, replacement } of rewrites) {
          if (!pattern.test(path)) continue;
          return prepare(ctx, status, finish(ctx, pattern.replace(path, replacement)));
        }
        return 'success';
      },
    };
  },
});

function compileRewrites(list: string[]): Rewrite[] {
  if (list.length % 2 !== 0) {
    throw new ConfigError('regex_uri', 'must hold [regex, replacement] pairs (an even number of strings)');
  }
  const out: Rewrite[] = [];
  for (let i = 0; i < list.length; i += 2) {
    const pattern = compileRegex(list[i]!, `regex_uri[${i}]`);
    // `${1}` (PCRE style) means the same as `$1`; a literal `$$` stays a dollar sign.
    out.push({ pattern, replacement: list[i + 1]!.replace(/\$\{(\d+)\}/g, '$$$1') });
  }
  return out;
}
