import type { Context } from '../../core/context.js';
import {
  resolveSessionSettings,
  sessionSchemaProperties,
  Sessions,
  type Session,
  type SessionConfig,
} from '../../sessions/index.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { INTERACTIVE_OUTPUTS } from './cas-auth.js';
import { LoginFlows } from './login-flow.js';
import {
  asObject,
  attachIdentity,
  bearerToken,
  parseJson,
  ProviderClient,
  stringField,
  type ProviderEndpoint,
} from './provider-client.js';
import { redirectTo } from './shared.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';

interface AuthzCasdoorConfig extends SessionConfig {
  endpoint_addr: string;
  client_id: string;
  client_secret: string;
  callback_url?: string;
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
  scope: string;
  logout_path?: string;
}

type Port = keyof typeof INTERACTIVE_OUTPUTS;

/** What Casdoor vouched for: its user name, and its user id when known. */
interface CasdoorUser {
  name: string;
  id: string | undefined;
}

const DENIED = JSON.stringify({ error: 'access_denied' });

/**
 * Casdoor in front of an application. Without a session secret it checks the
 * bearer token of every request with Casdoor's introspection endpoint
 * (RFC 7662): `active: true` passes, anything else is a 403. With one it runs
 * the OAuth authorization-code login: logout path, then the callback (state
 * checked against the sealed flow cookie, code exchanged), then the session
 * cookie, then a redirect to Casdoor's authorize page. Casdoor unreachable or
 * answering without a decision is a provider failure (502).
 *
 * @example
 * ```yaml
 * - id: sso
 *   type: authz-casdoor
 *   config:
 *     endpoint_addr: https://door.example.com
 *     client_id: ${CASDOOR_CLIENT_ID}
 *     client_secret: ${CASDOOR_CLIENT_SECRET}
 *     callback_url: https://app.example.com/callback
 *     session: { secret: ${SESSION_SECRET} }
 *     logout_path: /logout
 * ```
 */
export const authzCasdoor = definePlugin({
  type: 'authz-casdoor',
  category: 'auth',
  description: 'Casdoor: bearer-token introspection, or browser login (OAuth code flow) with sessions.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['endpoint_addr', 'client_id', 'client_secret'],
    properties: {
      endpoint_addr: { type: 'string', minLength: 1, description: 'Casdoor base URL.' },
      client_id: { type: 'string', minLength: 1 },
      client_secret: { type: 'string', minLength: 1 },
      callback_url: {
        type: 'string',
        minLength: 1,
        description: 'OAuth redirect_uri; its path is the callback. Required with a session secret.',
      },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'integer', minimum: 1, default: 3000, description: 'Deadline per callout (ms).' },
      scope: { type: 'string', minLength: 1, default: 'read', description: 'OAuth scope asked at login.' },
      logout_path: { type: 'string', minLength: 1, description: 'Path that ends the session, then /.' },
      ...sessionSchemaProperties,
    },
  },
  outputs: INTERACTIVE_OUTPUTS,
  templated: [],
  create(config: AuthzCasdoorConfig, env) {
    if (config.logout_path !== undefined && !config.logout_path.startsWith('/')) {
      throw new ConfigError('logout_path', 'must be a path starting with /');
    }
    const settings = resolveSessionSettings(config, env, 'casdoor_session');
    // Checked before any pool is leased, so a rejected config holds none.
    const callbackAt = settings === undefined ? undefined : interactiveCallback(config, settings.cookie.path);
    const client = new ProviderClient({
      code: 'AUTHZ_CASDOOR_ERROR',
      name: 'Casdoor',
      timeoutMs: config.timeout,
      sslVerify: config.ssl_verify,
      tls: config.tls,
    });
    const base = config.endpoint_addr.trim().replace(/\/+$/, '');
    const introspection = client.endpoint(`${base}/api/login/oauth/introspect`, 'endpoint_addr');
    const tokenEndpoint = client.endpoint(`${base}/api/login/oauth/access_token`, 'endpoint_addr');
    const basic = `Basic ${Buffer.from(`${config.client_id}:${config.client_secret}`).toString('base64')}`;

    /** RFC 7662: the user of an active token, `null` for an inactive one. */
    const introspect = async (ctx: Context, token: string): Promise<CasdoorUser | null> => {
      const answer = await client.call(ctx.signal, introspection, {
        method: 'POST',
        headers: [
          'content-type', 'application/x-www-form-urlencoded',
          'accept', 'application/json',
          'authorization', basic,
        ], // prettier-ignore
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
      });
      const doc = asObject(parseJson(answer.body));
      if (answer.status !== 200 || doc === undefined) throw failure(introspection, answer.status, doc);
      if (doc['active'] !== true) return null;
      const name = stringField(doc, 'username') ?? stringField(doc, 'sub');
      return name === undefined ? { name: '', id: undefined } : { name, id: stringField(doc, 'sub') ?? name };
    };

    const failure = (endpoint: ProviderEndpoint, status: number, doc: unknown) => {
      const error = stringField(doc, 'error');
      const detail = error === undefined ? '' : ` (${error})`;
      return client.failure(`Casdoor answered ${status}${detail}`, endpoint);
    };

    if (settings === undefined || callbackAt === undefined) {
      if (config.callback_url !== undefined || config.logout_path !== undefined) {
        env.warn(
          config.callback_url !== undefined ? 'callback_url' : 'logout_path',
          'has no effect without a session secret (bearer-token mode)',
        );
      }
      return {
        async run(ctx) {
          const token = bearerToken(ctx);
          if (token === undefined) return deny(ctx);
          const user = await introspect(ctx, token);
          if (user === null) return deny(ctx);
          if (user.name !== '') attachUser(ctx, user);
          return 'success';
        },
        close() {
          client.close();
        },
      };
    }

    const { url: callbackUrl, path: callbackPath } = callbackAt;
    const sessions = new Sessions(settings, 'authz-casdoor');
    const flows = new LoginFlows(settings.secret, 'authz-casdoor', settings.cookie);
    const authorize = `${base}/login/oauth/authorize?${new URLSearchParams({
      client_id: config.client_id,
      response_type: 'code',
      redirect_uri: callbackUrl,
      scope: config.scope,
    }).toString()}&state=`;

    /** The access token for `code`, or `null` when Casdoor refuses the code. */
    const exchangeCode = async (ctx: Context, code: string): Promise<string | null> => {
      const answer = await client.call(ctx.signal, tokenEndpoint, {
        method: 'POST',
        headers: ['content-type', 'application/x-www-form-urlencoded', 'accept', 'application/json'],
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          client_id: config.client_id,
          client_secret: config.client_secret,
          code,
          redirect_uri: callbackUrl,
        }).toString(),
      });
      const doc = asObject(parseJson(answer.body));
      const error = stringField(doc, 'error');
      if (error === 'invalid_grant') return null;
      if (answer.status !== 200 || doc === undefined || error !== undefined) {
        throw failure(tokenEndpoint, answer.status, doc);
      }
      const token = stringField(doc, 'access_token');
      const expiresIn = doc['expires_in'];
      // Casdoor answers a spent or unknown code with an empty token (or expires_in 0) rather than an error.
      if (token === undefined || (typeof expiresIn === 'number' && expiresIn <= 0)) return null;
      return token;
    };

    const callback = async (ctx: Context): Promise<Port> => {
      const flow = flows.take(ctx);
      const query = ctx.request.query;
      if (query.has('error')) return deny(ctx);
      const code = query.get('code')?.[0];
      if (flow === undefined || code === undefined || code === '' || query.get('state')?.[0] !== flow.state) {
        return deny(ctx);
      }
      const token = await exchangeCode(ctx, code);
      if (token === null) return deny(ctx);
      const user = tokenUser(token) ?? (await introspect(ctx, token));
      if (user === null || user.name === '') return deny(ctx);
      await sessions.establish(ctx, user.name, {
        cid: config.client_id,
        ...(user.id === undefined ? {} : { uid: user.id }),
      });
      return redirectTo(ctx, flow.returnTo);
    };

    const afterSession = (ctx: Context, session: Session | undefined): Port => {
      // A session of another Casdoor application sharing the cookie name is no session here.
      if (session !== undefined && session.data['cid'] === config.client_id) {
        const uid = session.data['uid'];
        attachUser(ctx, { name: session.subject, id: typeof uid === 'string' ? uid : undefined });
        return 'success';
      }
      const state = flows.begin(ctx, ctx.request.url);
      return redirectTo(ctx, `${authorize}${state}`);
    };

    return {
      run(ctx) {
        const path = ctx.request.path;
        if (config.logout_path !== undefined && path === config.logout_path) {
          return sessions.end(ctx).then(() => redirectTo(ctx, '/'));
        }
        const query = ctx.request.query;
        if (path === callbackPath && (query.has('code') || query.has('error')) && query.has('state')) {
          return callback(ctx);
        }
        const session = sessions.open(ctx);
        return session instanceof Promise
          ? session.then((found) => afterSession(ctx, found))
          : afterSession(ctx, session);
      },
      close() {
        client.close();
      },
    };
  },
});

/** docs/plugins/authz-casdoor.md: 403 `{"error":"access_denied"}`. */
function deny(ctx: Context): 'denied' {
  const res = ctx.response;
  res.discardStream();
  res.status = 403;
  res.setBody(DENIED, 'application/json');
  return 'denied';
}

function attachUser(ctx: Context, user: CasdoorUser): void {
  ctx.message['user'] = user.name;
  ctx.message['user_id'] = user.id ?? user.name;
  attachIdentity(ctx, user.name, 'authz-casdoor');
}

/**
 * The user named by a Casdoor access token (a JWT Casdoor just handed us over
 * our own connection, so its claims are read, not verified); `undefined` when
 * the token is opaque.
 */
function tokenUser(token: string): CasdoorUser | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  const claims = asObject(parseJson(Buffer.from(payload, 'base64url')));
  const name =
    stringField(claims, 'name') ?? stringField(claims, 'preferred_username') ?? stringField(claims, 'sub');
  return name === undefined
    ? undefined
    : { name, id: stringField(claims, 'sub') ?? stringField(claims, 'id') };
}

/** The callback of interactive mode: `callback_url` is required, absolute, and under the cookie path. */
function interactiveCallback(config: AuthzCasdoorConfig, cookiePath: string): { url: string; path: string } {
  const url = config.callback_url;
  if (url === undefined) {
    throw new ConfigError('callback_url', 'is required when a session secret is set (interactive login)');
  }
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    throw new ConfigError('callback_url', `'${url}' is not an absolute URL`);
  }
  if (!covers(cookiePath, path)) {
    throw new ConfigError(
      config.session?.cookie?.path !== undefined ? 'session.cookie.path' : 'session_cookie_path',
      `'${cookiePath}' does not cover the callback path '${path}': the flow cookie would never reach it`,
    );
  }
  return { url, path };
}

/** Whether a cookie with Path `cookiePath` is sent to `path` (RFC 6265 path-match). */
function covers(cookiePath: string, path: string): boolean {
  if (cookiePath === '/' || cookiePath === path) return true;
  return path.startsWith(cookiePath.endsWith('/') ? cookiePath : `${cookiePath}/`);
}
