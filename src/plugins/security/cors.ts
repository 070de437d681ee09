import type { Context, HeaderMap } from '../../core/context.js';
import { definePlugin, type Template } from '../../core/plugin.js';
import { compileRegexList } from '../../conditions/regex.js';
import { configReadsRequestBody } from '../request-body-refs.js';

const LEGACY_KEYS = {
  allow_origins: 'allowed_origins',
  allow_methods: 'allowed_methods',
  max_age_s: 'max_age',
};
const EMPTY = Buffer.alloc(0);

/** A comma list rendered per request, or fixed text when every entry is static. */
function joinedList(templates: Template[]): string | ((ctx: Context) => string) {
  if (templates.every((t) => t.isStatic)) return templates.map((t) => t.source).join(', ');
  return (ctx) => templates.map((t) => t.render(ctx)).join(', ');
}

function addVary(headers: HeaderMap, token: string): void {
  const current = headers.vary;
  if (current === undefined || current === '') {
    headers.vary = token;
    return;
  }
  const text = Array.isArray(current) ? current.join(', ') : current;
  const lower = token.toLowerCase();
  if (text.split(',').some((t) => t.trim().toLowerCase() === lower || t.trim() === '*')) return;
  headers.vary = `${text}, ${token}`;
}

/**
 * Adds CORS headers for allowed origins and answers their OPTIONS preflight
 * itself: the preflight leaves through `preflight` with a prepared 204, so
 * wiring that port to `client` keeps it away from the upstream.
 */
export const cors = definePlugin({
  type: 'cors',
  readsRequestBody: configReadsRequestBody,
  category: 'security',
  description:
    'Add CORS headers for allowed origins and answer OPTIONS preflights with a prepared 204 on the preflight port.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      allowed_origins: {
        type: 'array',
        items: { type: 'string', minLength: 1 },
        description:
          'Origins compared verbatim with the Origin header; "*" allows any. Default ["*"] unless allowed_origins_by_regex is set. Never templated.',
      },
      allowed_origins_by_regex: {
        type: 'array',
        items: { type: 'string', minLength: 1 },
        default: [],
        description: 'Regular expressions an Origin may match instead (unanchored unless you anchor them).',
      },
      allowed_methods: {
        type: 'array',
        items: { type: 'string' },
        default: ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
        description: 'Methods advertised to a preflight (templated).',
      },
      allowed_headers: {
        type: 'array',
        items: { type: 'string' },
        default: ['*'],
        description: 'Request headers advertised to a preflight (templated).',
      },
      expose_headers: {
        type: 'array',
        items: { type: 'string', minLength: 1 },
        default: [],
        description:
          'Response headers a browser may read (access-control-expose-headers on actual requests).',
      },
      max_age: {
        type: 'integer',
        minimum: -1,
        default: 3600,
        description: 'Seconds a browser may cache the preflight; -1 omits the header.',
      },
      allow_credentials: {
        type: 'boolean',
        default: false,
        description: 'Emit access-control-allow-credentials: true (a wildcard origin is then echoed).',
      },
      allow_origins: { description: 'Legacy editor key; accepted and ignored (use allowed_origins).' },
      allow_methods: { description: 'Legacy editor key; accepted and ignored (use allowed_methods).' },
      max_age_s: { description: 'Legacy editor key; accepted and ignored (use max_age).' },
    },
  },
  outputs: {
    success: { kind: 'success' },
    preflight: {
      kind: 'outcome',
      description: 'OPTIONS preflight answered with a prepared 204; wire to client.',
    },
  },
  templated: ['allowed_methods.*', 'allowed_headers.*'],
  readsResponseBody: () => false,
  create(config, env) {
    for (const [legacy, current] of Object.entries(LEGACY_KEYS)) {
      if (config[legacy as keyof typeof LEGACY_KEYS] !== undefined) {
        env.warn(legacy, `is a legacy key and is ignored; use ${current}`);
      }
    }
    const patterns = compileRegexList(config.allowed_origins_by_regex, 'allowed_origins_by_regex');
    const origins = config.allowed_origins ?? (patterns.length > 0 ? [] : ['*']);
    origins.forEach((o, i) => {
      if (o !== '*' && o.includes('*')) {
        env.warn(
          `allowed_origins[${i}]`,
          `'${o}' is compared verbatim; use allowed_origins_by_regex for patterns`,
        );
      }
    });
    const wildcard = origins.includes('*');
    const exact = new Set(origins);
    const credentials = config.allow_credentials;
    const methods = joinedList(
      config.allowed_methods.map((m, i) => env.template(m, `allowed_methods[${i}]`)),
    );
    const headers = joinedList(
      config.allowed_headers.map((h, i) => env.template(h, `allowed_headers[${i}]`)),
    );
    const expose = config.expose_headers.join(', ');
    const maxAge = config.max_age >= 0 ? String(config.max_age) : undefined;

    const allowed = (origin: string): boolean => {
      if (wildcard) return true;
      if (origin === '') return false;
      if (exact.has(origin)) return true;
      for (const re of patterns) if (re.test(origin)) return true;
      return false;
    };
    // A credentialed response may not answer `*`; echo what the browser asked for instead.
    const advertise = (
      list: string | ((ctx: Context) => string),
      ctx: Context,
      requested: string,
    ): string => {
      const value = typeof list === 'string' ? list : list(ctx);
      if (value === '*' && credentials) return ctx.request.header(requested) ?? '*';
      return value;
    };

    return {
      run(ctx) {
        const raw = ctx.request.headers.origin;
        const origin = (typeof raw === 'string' ? raw : raw?.[0]) ?? '';
        const preflight = ctx.request.method === 'OPTIONS';
        if ((!preflight && origin === '') || !allowed(origin)) return 'success';
        const res = ctx.response;
        const out = res.headers;
        const echo = !wildcard || (credentials && origin !== '');
        out['access-control-allow-origin'] = echo ? origin : '*';
        if (echo) addVary(out, 'Origin');
        if (credentials) out['access-control-allow-credentials'] = 'true';
        if (!preflight) {
          if (expose !== '') out['access-control-expose-headers'] = expose;
          return 'success';
        }
        out['access-control-allow-methods'] = advertise(methods, ctx, 'access-control-request-method');
        out['access-control-allow-headers'] = advertise(headers, ctx, 'access-control-request-headers');
        if (maxAge !== undefined) out['access-control-max-age'] = maxAge;
        res.status = 204;
        res.setBody(EMPTY);
        return 'preflight';
      },
    };
  },
});
