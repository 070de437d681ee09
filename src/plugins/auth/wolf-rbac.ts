import type { Context } from '../../core/context.js';
import { definePlugin } from '../../core/plugin.js';
import { asObject, attachIdentity, parseJson, ProviderClient, stringField } from './provider-client.js';
import { AUTH_OUTPUTS } from './shared.js';
import { calloutTlsSchema } from '../callout-tls.js';

interface WolfUser {
  id: string;
  username: string;
  nickname: string;
}

/**
 * Asks a wolf-server whether the caller's RBAC token (`V1#<appid>#<token>`,
 * from `?rbac_token`, `Authorization`, `X-Rbac-Token` or the `x-rbac-token`
 * cookie) may perform the request's method on its path:
 * `GET <server>/wolf/rbac/access_check`. On 200 the wolf user goes upstream as
 * `<prefix>UserId`, `<prefix>Username` and `<prefix>Nickname`; wolf's 401 or
 * 403 is a 401 denial carrying wolf's reason; anything else is a provider
 * failure (502).
 *
 * @example
 * ```yaml
 * - id: rbac
 *   type: wolf-rbac
 *   config:
 *     server: http://wolf-server:12180
 *     appid: restful
 * ```
 */
export const wolfRbac = definePlugin({
  type: 'wolf-rbac',
  category: 'auth',
  description: "Check the caller's wolf RBAC token and permission for this method and path.",
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      server: {
        type: 'string',
        minLength: 1,
        default: 'http://127.0.0.1:12180',
        description: 'wolf-server.',
      },
      appid: { type: 'string', minLength: 1, description: 'appID for tokens that carry none.' },
      header_prefix: { type: 'string', default: 'X-', description: 'Prefix of the identity headers.' },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout_ms: {
        type: 'number',
        exclusiveMinimum: 0,
        default: 10000,
        description: 'Whole-call deadline.',
      },
    },
  },
  outputs: AUTH_OUTPUTS,
  templated: [],
  create(config) {
    const client = new ProviderClient({
      code: 'WOLF_RBAC_UPSTREAM_ERROR',
      name: 'wolf-server',
      timeoutMs: config.timeout_ms,
      sslVerify: config.ssl_verify,
      tls: config.tls,
    });
    const endpoint = client.endpoint(
      `${config.server.trim().replace(/\/+$/, '')}/wolf/rbac/access_check`,
      'server',
    );
    const prefix = config.header_prefix.toLowerCase();
    const names = { id: `${prefix}userid`, username: `${prefix}username`, nickname: `${prefix}nickname` };

    const attach = (ctx: Context, user: WolfUser | undefined): void => {
      const headers = ctx.request.headers;
      // Absent identity removes the headers, so a client cannot forge them.
      if (user === undefined) {
        delete headers[names.id];
        delete headers[names.username];
        delete headers[names.nickname];
        return;
      }
      headers[names.id] = user.id;
      headers[names.username] = user.username;
      headers[names.nickname] = encodeURIComponent(user.nickname);
      ctx.message['user'] = user.username;
      ctx.message['user_id'] = user.id;
      attachIdentity(ctx, user.username, 'wolf-rbac');
    };

    return {
      async run(ctx) {
        const token = rbacToken(ctx);
        if (token === undefined) return forbidden(ctx, 'Missing rbac token in request');
        const parts = parseToken(token);
        if (parts === undefined) return forbidden(ctx, 'invalid rbac token: parse failed');
        const appid = parts.appid === '' ? config.appid : parts.appid;
        if (appid === undefined) return forbidden(ctx, 'invalid rbac token: no appid');
        const query = new URLSearchParams({
          appID: appid,
          resName: ctx.request.path,
          action: ctx.request.method,
          clientIP: ctx.request.remoteAddress,
        });
        const answer = await client.call(ctx.signal, endpoint, {
          method: 'GET',
          path: `${endpoint.path}?${query.toString()}`,
          headers: ['x-rbac-token', parts.token, 'accept', 'application/json'],
          body: null,
        });
        const doc = parseJson(answer.body);
        if (answer.status === 401 || answer.status === 403) {
          return forbidden(ctx, stringField(doc, 'reason') ?? 'access denied by wolf-server');
        }
        if (answer.status !== 200) throw client.failure(`wolf-server answered ${answer.status}`, endpoint);
        if (asObject(doc) === undefined) throw client.failure('wolf-server answer is not JSON', endpoint);
        attach(ctx, wolfUser(doc));
        return 'success';
      },
      close() {
        client.close();
      },
    };
  },
});

/** docs/plugins/wolf-rbac.md: 401 `{"error": "forbidden", "message": "<reason>"}`. */
function forbidden(ctx: Context, message: string): 'denied' {
  ctx.response.discardStream();
  ctx.response.json(401, { error: 'forbidden', message });
  return 'denied';
}

/** APISIX's order: `rbac_token` query argument, Authorization, X-Rbac-Token, the `x-rbac-token` cookie. */
function rbacToken(ctx: Context): string | undefined {
  const req = ctx.request;
  const token =
    req.query.get('rbac_token')?.[0] ??
    req.header('authorization') ??
    req.header('x-rbac-token') ??
    req.cookies.get('x-rbac-token');
  return token === undefined || token === '' ? undefined : token;
}

/** `V1#<appid>#<wolf token>`; the wolf token may itself contain `#`. */
function parseToken(token: string): { appid: string; token: string } | undefined {
  const first = token.indexOf('#');
  const second = first === -1 ? -1 : token.indexOf('#', first + 1);
  if (second === -1 || token.slice(0, first) !== 'V1') return undefined;
  const wolfToken = token.slice(second + 1);
  return wolfToken === '' ? undefined : { appid: token.slice(first + 1, second), token: wolfToken };
}

/** `data.userInfo` of an access_check answer; the nickname falls back to the user name. */
function wolfUser(doc: unknown): WolfUser | undefined {
  const info = asObject(asObject(asObject(doc)?.['data'])?.['userInfo']);
  const username = stringField(info, 'username');
  if (info === undefined || username === undefined) return undefined;
  const id = info['id'];
  return {
    id: typeof id === 'string' || typeof id === 'number' ? String(id) : '',
    username,
    nickname: stringField(info, 'nickname') ?? username,
  };
}
