import type { Context } from '../../core/context.js';
import { definePlugin } from '../../core/plugin.js';
import { asObject, bearerToken, parseJson, ProviderClient, stringField } from './provider-client.js';
import { AUTH_OUTPUTS } from './shared.js';
import { calloutTlsSchema } from '../callout-tls.js';

const UMA_TICKET = 'urn:ietf:params:oauth:grant-type:uma-ticket';

/** The denial body of APISIX's authz-keycloak, kept verbatim (docs/plugins/authz-keycloak.md). */
const NOT_AUTHORIZED = JSON.stringify({ error: 'access_denied', error_description: 'not_authorized' });

/**
 * Asks Keycloak's token endpoint whether the caller's bearer token grants the
 * configured permissions: a UMA ticket grant with `response_mode=decision`.
 * Keycloak's 200 lets the request through; its 403 (or 400, a permission it
 * cannot grant) is a 403 `access_denied`; its 401 (the token itself is
 * refused) a 401 `invalid_token`. Any other answer, or none, is a provider
 * failure (502).
 *
 * @example
 * ```yaml
 * - id: authz
 *   type: authz-keycloak
 *   config:
 *     token_endpoint: https://sso.example.com/realms/shop/protocol/openid-connect/token
 *     client_id: orders-api
 *     permissions: ['orders#read']
 *     http_method_as_scope: false
 * ```
 */
export const authzKeycloak = definePlugin({
  type: 'authz-keycloak',
  category: 'auth',
  description: "Check the caller's token against Keycloak's UMA permissions (decision mode).",
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['token_endpoint', 'client_id'],
    properties: {
      token_endpoint: { type: 'string', minLength: 1, description: 'Realm token endpoint URL.' },
      client_id: { type: 'string', minLength: 1, description: 'Resource server client id (UMA audience).' },
      permissions: {
        type: 'array',
        items: { type: 'string', minLength: 1 },
        default: [],
        description: '`resource` or `resource#scope[,scope]` entries requested together.',
      },
      policy_enforcement_mode: { type: 'string', enum: ['ENFORCING', 'PERMISSIVE'], default: 'ENFORCING' },
      http_method_as_scope: { type: 'boolean', default: false, description: 'Use the method as scope.' },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'integer', minimum: 1, default: 3000, description: 'Whole-call deadline (ms).' },
    },
  },
  outputs: AUTH_OUTPUTS,
  templated: [],
  create(config, env) {
    const client = new ProviderClient({
      code: 'AUTHZ_KEYCLOAK_ERROR',
      name: 'Keycloak',
      timeoutMs: config.timeout,
      sslVerify: config.ssl_verify,
      tls: config.tls,
    });
    const endpoint = client.endpoint(config.token_endpoint, 'token_endpoint');
    const permissive = config.policy_enforcement_mode === 'PERMISSIVE';
    if (config.permissions.length === 0) {
      env.warn(
        'permissions',
        permissive ? 'empty: every request is let through' : 'empty: every request is denied',
      );
    }
    const fixedBody = config.http_method_as_scope ? undefined : form(config.client_id, config.permissions);

    const body = (ctx: Context): string =>
      fixedBody ??
      form(
        config.client_id,
        config.permissions.map((p) => withScope(p, ctx.request.method)),
      );

    return {
      async run(ctx) {
        // Nothing to ask for: ENFORCING denies, PERMISSIVE lets through (APISIX).
        if (config.permissions.length === 0) return permissive ? 'success' : deny(ctx);
        const token = bearerToken(ctx);
        if (token === undefined) return deny(ctx);
        const answer = await client.call(ctx.signal, endpoint, {
          method: 'POST',
          headers: [
            'content-type', 'application/x-www-form-urlencoded',
            'accept', 'application/json',
            'authorization', `Bearer ${token}`,
          ], // prettier-ignore
          body: body(ctx),
        });
        const status = answer.status;
        // Any 2xx grants (an RPT or a decision); only an explicit `result: false` denies.
        if (status >= 200 && status < 300) {
          const result = asObject(parseJson(answer.body))?.['result'];
          return result === false ? deny(ctx) : 'success';
        }
        if (status === 403) return deny(ctx);
        if (status === 401) {
          const reason = stringField(parseJson(answer.body), 'error_description') ?? 'token refused';
          const res = ctx.response;
          res.discardStream();
          res.json(401, { error: 'invalid_token', error_description: reason });
          res.headers['www-authenticate'] = 'Bearer error="invalid_token"';
          return 'denied';
        }
        throw client.failure(`Keycloak answered ${status}`, endpoint);
      },
      close() {
        client.close();
      },
    };
  },
});

function deny(ctx: Context): 'denied' {
  const res = ctx.response;
  res.discardStream();
  res.status = 403;
  res.setBody(NOT_AUTHORIZED, 'application/json');
  return 'denied';
}

/** The UMA ticket grant form, `permission` repeated once per entry. */
function form(audience: string, permissions: readonly string[]): string {
  const params = new URLSearchParams({ grant_type: UMA_TICKET, audience, response_mode: 'decision' });
  for (const permission of permissions) params.append('permission', permission);
  return params.toString();
}

/** `resource#METHOD`, or the method added to the scopes already listed. */
function withScope(permission: string, method: string): string {
  return permission.includes('#') ? `${permission},${method}` : `${permission}#${method}`;
}
