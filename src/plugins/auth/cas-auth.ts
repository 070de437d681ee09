import type { Context } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import { classifyFailure } from '../../outbound/classify.js';
import { exchange, type ExchangeLimits } from '../../outbound/exchange.js';
import { acquirePool } from '../../outbound/pool-registry.js';
import {
  resolveSessionSettings,
  sessionSchemaProperties,
  Sessions,
  type Session,
  type SessionConfig,
} from '../../sessions/index.js';
import { ConfigError, definePlugin, type PortSpec, type Template } from '../../core/plugin.js';
import { readCasReply, type CasVerdict } from './cas-reply.js';
import { unauthorized } from './shared.js';
import { calloutTls, calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';

interface CasAuthConfig extends SessionConfig {
  idp_uri: string;
  service?: string;
  ticket_param: string;
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout_ms: number;
  logout_path?: string;
}

/** Port descriptions of the interactive auth plugins (docs/plugins/cas-auth.md). */
export const INTERACTIVE_OUTPUTS = {
  success: { kind: 'success' },
  denied: {
    kind: 'outcome',
    description: 'Authentication was denied; a 4xx response is prepared. Wire to client.',
  },
  redirect: {
    kind: 'outcome',
    description: 'The browser must move (login/logout/callback 3xx); response is prepared. Wire to client.',
  },
} as const satisfies Record<string, PortSpec>;

type Port = keyof typeof INTERACTIVE_OUTPUTS;

/**
 * Authenticates against a CAS server (docs/plugins/cas-auth.md).
 * Without a session secret it validates the service ticket of every request;
 * with one it runs the browser flow: logout path, then session cookie, then
 * ticket callback, then the redirect to CAS login.
 *
 * @example
 * ```yaml
 * - id: sso
 *   type: cas-auth
 *   config:
 *     idp_uri: https://cas.example.com/cas
 *     session: { secret: ${CAS_SESSION_SECRET}, storage: kvstore, store: main }
 *     logout_path: /logout
 * ```
 */
export const casAuth = definePlugin({
  type: 'cas-auth',
  category: 'auth',
  description:
    'Authenticate against a CAS server: stateless ticket validation, or browser login with sessions.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['idp_uri'],
    properties: {
      idp_uri: {
        type: 'string',
        description: 'CAS base URI: <idp_uri>/login and <idp_uri>/serviceValidate.',
      },
      service: {
        type: 'string',
        description: 'Service URL; derived as scheme://host/path when absent. Templated.',
      },
      ticket_param: { type: 'string', minLength: 1, default: 'ticket' },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout_ms: { type: 'number', exclusiveMinimum: 0, default: 3000 },
      logout_path: {
        type: 'string',
        minLength: 1,
        description: 'Path that clears the session and redirects to /.',
      },
      ...sessionSchemaProperties,
    },
  },
  outputs: INTERACTIVE_OUTPUTS,
  templated: ['service'],
  create(config: CasAuthConfig, env) {
    const idp = parseIdp(config.idp_uri);
    const base = `${idp.origin}${idp.pathname.replace(/\/+$/, '')}`;
    const validatePath = `${idp.pathname.replace(/\/+$/, '')}/serviceValidate`;
    const loginUrl = `${base}/login`;
    const tls = idp.protocol === 'https:' ? calloutTls(config.ssl_verify, config.tls) : null;
    if (config.logout_path !== undefined && !config.logout_path.startsWith('/')) {
      throw new ConfigError('logout_path', 'must be a path starting with /');
    }
    const settings = resolveSessionSettings(config, env, 'cas_session');
    const sessions = settings === undefined ? undefined : new Sessions(settings, 'cas-auth');
    if (sessions === undefined && config.logout_path !== undefined) {
      env.warn('logout_path', 'has no effect without a session secret (stateless mode)');
    }
    const service: Template | undefined =
      config.service === undefined ? undefined : env.template(config.service, 'service');
    const ticketParam = config.ticket_param;
    const timeout = config.timeout_ms;
    const limits: ExchangeLimits = { deadlineMs: timeout, idleMs: timeout, streaming: false };
    const lease = acquirePool({ origin: idp.origin, tls, connectTimeoutMs: timeout });

    const serviceUrl = (ctx: Context): string =>
      service?.render(ctx) ?? `${ctx.request.scheme}://${ctx.request.host}${ctx.request.path}`;

    /** docs/plugins/cas-auth.md; the whole call, body included, is bounded by `timeout_ms`. */
    const validate = async (ctx: Context, ticket: string, serviceAt: string): Promise<CasVerdict> => {
      const query = `ticket=${encodeURIComponent(ticket)}&service=${encodeURIComponent(serviceAt)}`;
      const abort = new AbortController();
      let expired = false;
      const timer = setTimeout(() => {
        expired = true;
        abort.abort();
      }, timeout);
      const onClientGone = (): void => abort.abort();
      ctx.signal.addEventListener('abort', onClientGone, { once: true });
      let answer;
      try {
        answer = await exchange(
          lease.pool,
          { method: 'GET', path: `${validatePath}?${query}`, headers: ['accept', '*/*'], body: null },
          limits,
          abort.signal,
          null,
        );
      } catch (err) {
        const failure = classifyFailure(err);
        if (!expired && failure.code === 'UPSTREAM_CLIENT_ABORTED') {
          throw new NodeError(failure.code, failure.reason);
        }
        const reason = expired ? `no answer within ${timeout} ms` : failure.reason;
        throw providerError(`CAS validation failed: ${reason}`, base, err);
      } finally {
        clearTimeout(timer);
        ctx.signal.removeEventListener('abort', onClientGone);
      }
      if (answer.status !== 200) throw providerError(`CAS validation answered ${answer.status}`, base);
      return readCasReply(answer.body?.toString('utf8') ?? '');
    };

    const stateless = async (ctx: Context, ticket: string | undefined): Promise<Port> => {
      if (ticket === undefined || ticket === '') return unauthorized(ctx, 'missing CAS ticket');
      const verdict = await validate(ctx, ticket, serviceUrl(ctx));
      if ('refused' in verdict) return unauthorized(ctx, `CAS ticket refused: ${verdict.refused}`);
      attachUser(ctx, verdict.user);
      // The ticket is single-use and spent: the upstream gets every other parameter.
      ctx.request.dropQueryParams(ticketParam);
      return 'success';
    };

    const interactive = async (ctx: Context, s: Sessions, ticket: string | undefined): Promise<Port> => {
      if (ticket === undefined || ticket === '') {
        return redirect(ctx, `${loginUrl}?service=${encodeURIComponent(serviceUrl(ctx))}`);
      }
      const serviceAt = serviceUrl(ctx);
      const verdict = await validate(ctx, ticket, serviceAt);
      if ('refused' in verdict) return unauthorized(ctx, `CAS ticket refused: ${verdict.refused}`);
      await s.establish(ctx, verdict.user);
      return redirect(ctx, withoutParam(serviceAt, ticketParam));
    };

    const afterSession = (ctx: Context, s: Sessions, session: Session | undefined): Port | Promise<Port> => {
      if (session !== undefined) {
        attachUser(ctx, session.subject);
        return 'success';
      }
      return interactive(ctx, s, ctx.request.query.get(ticketParam)?.[0]);
    };

    return {
      run(ctx) {
        if (sessions === undefined) return stateless(ctx, ctx.request.query.get(ticketParam)?.[0]);
        if (config.logout_path !== undefined && ctx.request.path === config.logout_path) {
          return sessions.end(ctx).then(() => redirect(ctx, '/'));
        }
        const session = sessions.open(ctx);
        return session instanceof Promise
          ? session.then((found) => afterSession(ctx, sessions, found))
          : afterSession(ctx, sessions, session);
      },
      close() {
        lease.release();
      },
    };
  },
});

function parseIdp(raw: string): URL {
  const text = raw.trim();
  if (text === '') throw new ConfigError('idp_uri', 'must not be blank');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError('idp_uri', `'${text}' is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError('idp_uri', `must be an http:// or https:// URL (got ${url.protocol})`);
  }
  return url;
}

/** docs/plugins/cas-auth.md, plus the consumer identity every auth plugin sets. */
function attachUser(ctx: Context, user: string): void {
  ctx.message['user'] = user;
  ctx.message['user_id'] = user;
  ctx.request.headers['x-cas-user'] = user;
  ctx.setConsumer({ name: user });
}

function redirect(ctx: Context, location: string): 'redirect' {
  const res = ctx.response;
  res.discardStream();
  res.status = 302;
  res.headers['location'] = location;
  res.headers['cache-control'] = 'no-store';
  res.setBody('');
  return 'redirect';
}

/** docs/plugins/cas-auth.md: 502 `provider_error`, no challenge header. */
function providerError(message: string, idp: string, cause?: unknown): NodeError {
  return new NodeError('CAS_AUTH_PROVIDER_ERROR', message, {
    metadata: { idp_uri: idp },
    ...(cause === undefined ? {} : { cause }),
  });
}

function withoutParam(url: string, name: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.searchParams.has(name)) return url;
    parsed.searchParams.delete(name);
    return parsed.toString();
  } catch {
    return url;
  }
}
