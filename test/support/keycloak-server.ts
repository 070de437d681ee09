import { bearerOf, startFakeService, type FakeService } from './fake-service.js';

export interface KeycloakServer extends FakeService {
  /** `<url>/realms/<realm>/protocol/openid-connect/token` */
  readonly tokenEndpoint: string;
  /** Issues an access token whose user holds `grants` (`resource` = every scope, or `resource#scope`). */
  issueToken(grants: string[]): string;
  revoke(token: string): void;
}

const UMA_TICKET = 'urn:ietf:params:oauth:grant-type:uma-ticket';

/**
 * A Keycloak realm's token endpoint as it answers UMA permission requests
 * (`grant_type=urn:ietf:params:oauth:grant-type:uma-ticket`,
 * `response_mode=decision`): `200 {"result":true}` when every requested
 * `permission` (`resource`, `resource#scope`, `resource#s1,s2`) is granted,
 * `403 {"error":"access_denied","error_description":"not_authorized"}` when
 * not, `401 invalid_grant` for a bearer token it does not know, and `400
 * invalid_resource` for a resource the resource server does not have.
 */
export async function startKeycloakServer(
  options: { realm?: string; client?: string; resources?: string[] } = {},
): Promise<KeycloakServer> {
  const realm = options.realm ?? 'e2e';
  const client = options.client ?? 'e2e-client';
  const resources = new Set(options.resources ?? ['allow-resource', 'deny-resource', 'orders']);
  const tokens = new Map<string, string[]>();
  let issued = 0;

  const granted = (grants: string[], permission: string): boolean => {
    const [resource = '', scopeList] = permission.split('#', 2);
    const scopes = scopeList === undefined ? [] : scopeList.split(',').map((s) => s.trim());
    if (grants.includes(resource)) return true;
    return scopes.length > 0 && scopes.every((scope) => grants.includes(`${resource}#${scope}`));
  };

  const path = `/realms/${realm}/protocol/openid-connect/token`;
  const service = await startFakeService({
    [`POST ${path}`]: (call) => {
      const form = call.form;
      if (form.get('grant_type') !== UMA_TICKET) {
        return {
          status: 400,
          json: { error: 'unsupported_grant_type', error_description: 'Unsupported grant_type' },
        };
      }
      const grants = tokens.get(bearerOf(call) ?? '');
      if (grants === undefined) {
        return { status: 401, json: { error: 'invalid_grant', error_description: 'Invalid bearer token' } };
      }
      if (form.get('audience') !== client) {
        return { status: 400, json: { error: 'invalid_client', error_description: 'Client not found' } };
      }
      const permissions = form.getAll('permission');
      for (const permission of permissions) {
        const resource = permission.split('#', 1)[0] ?? '';
        if (!resources.has(resource)) {
          return {
            status: 400,
            json: {
              error: 'invalid_resource',
              error_description: `Resource with id [${resource}] does not exist.`,
            },
          };
        }
      }
      if (!permissions.every((p) => granted(grants, p))) {
        return { status: 403, json: { error: 'access_denied', error_description: 'not_authorized' } };
      }
      if (form.get('response_mode') === 'decision') return { status: 200, json: { result: true } };
      return {
        status: 200,
        json: { access_token: `rpt-${++issued}`, token_type: 'Bearer', expires_in: 300 },
      };
    },
  });
  return Object.assign(service, {
    tokenEndpoint: `${service.url}${path}`,
    issueToken(grants: string[]) {
      const token = `kc-at-${++issued}`;
      tokens.set(token, grants);
      return token;
    },
    revoke(token: string) {
      tokens.delete(token);
    },
  });
}
