import { randomBytes, randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

/**
 * A local HashiCorp Vault speaking the documented HTTP API of what Switchyard uses
 * (https://developer.hashicorp.com/vault/api-docs): KV version 2 reads
 * (`GET /v1/<mount>/data/<path>`), `auth/token/lookup-self` and `renew-self`, AppRole login,
 * Kubernetes auth login (`POST /v1/auth/kubernetes/login` with `{role, jwt}`: the JWT must be one the
 * test registered for the role, standing in for Vault's TokenReview call), the
 * `X-Vault-Token` header, `{"errors": [...]}` bodies with Vault's status codes (400 bad request,
 * 403 permission denied, 404 not found, 503 sealed), and the response envelope with its lease
 * fields (`lease_id`, `renewable`, `lease_duration`, `auth.client_token`, `auth.lease_duration`).
 */
export interface VaultServer {
  url: string;
  /** Writes a new version of a KV v2 secret. */
  put(path: string, data: Record<string, unknown>, mount?: string): void;
  /** A service token with a TTL in seconds (0: never expires, as root). */
  issueToken(options?: { ttl?: number; renewable?: boolean }): string;
  /** An AppRole whose login issues tokens of `ttl` seconds. */
  addAppRole(roleId: string, secretId: string, options?: { ttl?: number; renewable?: boolean }): void;
  /**
   * A Kubernetes auth role whose login accepts the service-account JWTs of `accept` (a later
   * call replaces the list, as after the kubelet rotates the token).
   */
  addKubernetesRole(role: string, accept: string[], options?: { ttl?: number; mount?: string }): void;
  /** The JWTs Kubernetes logins sent, in order. */
  readonly kubernetesLogins: { role: string; jwt: string; accepted: boolean }[];
  /** Sealed: every API call answers 503 `Vault is sealed`. */
  seal(): void;
  unseal(): void;
  /** renew-self answers 403 (as for a token past its max TTL) while set. */
  refuseRenewals(refuse: boolean): void;
  revoke(token: string): void;
  /** Every request: method, path, and whether it carried a token. */
  readonly requests: { method: string; path: string; token: string | undefined }[];
  close(): Promise<void>;
}

interface Token {
  id: string;
  accessor: string;
  ttl: number;
  renewable: boolean;
  expiresAt: number | undefined;
  issuedAt: number;
  policies: string[];
  meta: Record<string, string> | null;
}

export async function startVaultServer(
  options: { tls?: { cert: string; key: string } } = {},
): Promise<VaultServer> {
  const tokens = new Map<string, Token>();
  const kv = new Map<string, { version: number; created: string; data: Record<string, unknown> }[]>();
  const approles = new Map<string, { secretId: string; ttl: number; renewable: boolean }>();
  const requests: VaultServer['requests'] = [];
  const kubeRoles = new Map<string, { accept: string[]; ttl: number }>();
  const kubernetesLogins: VaultServer['kubernetesLogins'] = [];
  let sealed = false;
  let refuseRenew = false;

  const newToken = (ttl: number, renewable: boolean, meta: Record<string, string> | null): Token => {
    const token: Token = {
      id: `hvs.${randomBytes(18).toString('base64url')}`,
      accessor: randomBytes(12).toString('base64url'),
      ttl,
      renewable,
      issuedAt: Date.now(),
      expiresAt: ttl > 0 ? Date.now() + ttl * 1000 : undefined,
      policies: ['default', 'switchyard'],
      meta,
    };
    tokens.set(token.id, token);
    return token;
  };
  const valid = (id: string | undefined): Token | undefined => {
    const token = id === undefined ? undefined : tokens.get(id);
    if (token === undefined) return undefined;
    if (token.expiresAt !== undefined && Date.now() >= token.expiresAt) {
      tokens.delete(token.id);
      return undefined;
    }
    return token;
  };
  const envelope = (fields: Record<string, unknown>) => ({
    request_id: randomUUID(),
    lease_id: '',
    renewable: false,
    lease_duration: 0,
    data: null,
    wrap_info: null,
    warnings: null,
    auth: null,
    ...fields,
  });
  const authBlock = (token: Token) => ({
    client_token: token.id,
    accessor: token.accessor,
    policies: token.policies,
    token_policies: token.policies,
    metadata: token.meta,
    lease_duration: token.ttl,
    renewable: token.renewable,
    entity_id: '',
    token_type: 'service',
    orphan: token.meta !== null,
    mfa_requirement: null,
    num_uses: 0,
  });

  const handle = (req: IncomingMessage, res: ServerResponse, body: string): void => {
    const url = new URL(req.url ?? '/', 'http://vault');
    const header = req.headers['x-vault-token'];
    const tokenId = typeof header === 'string' ? header : undefined;
    requests.push({ method: req.method ?? '', path: url.pathname, token: tokenId });
    const send = (status: number, payload: unknown) => {
      const text = status === 204 ? '' : JSON.stringify(payload);
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(text);
    };
    const errors = (status: number, ...list: string[]) => send(status, { errors: list });
    if (sealed) return errors(503, 'Vault is sealed');
    const path = url.pathname;
    const login = /^\/v1\/auth\/([^/]+)\/login$/.exec(path);
    const kubeMount = login !== null && [...kubeRoles.keys()].some((k) => k.startsWith(`${login[1]}\0`));
    if (req.method === 'POST' && kubeMount) {
      let input: { role?: unknown; jwt?: unknown };
      try {
        input = JSON.parse(body) as typeof input;
      } catch {
        return errors(400, 'failed to parse JSON input: invalid character');
      }
      if (typeof input.role !== 'string' || input.role === '') return errors(400, 'missing role');
      if (typeof input.jwt !== 'string' || input.jwt === '') return errors(400, 'missing jwt');
      const role = kubeRoles.get(`${login?.[1]}\0${input.role}`);
      if (role === undefined) return errors(400, `invalid role name "${input.role}"`);
      const accepted = role.accept.includes(input.jwt);
      kubernetesLogins.push({ role: input.role, jwt: input.jwt, accepted });
      if (!accepted) return errors(403, 'permission denied');
      const token = newToken(role.ttl, true, { role: input.role, service_account_name: 'switchyard' });
      return send(200, envelope({ auth: authBlock(token) }));
    }
    if (req.method === 'POST' && login !== null) {
      let input: { role_id?: unknown; secret_id?: unknown };
      try {
        input = JSON.parse(body) as typeof input;
      } catch {
        return errors(400, 'failed to parse JSON input: invalid character');
      }
      if (typeof input.role_id !== 'string' || input.role_id === '') return errors(400, 'missing role_id');
      const role = approles.get(input.role_id);
      if (role === undefined || role.secretId !== input.secret_id)
        return errors(400, 'invalid role or secret ID');
      const token = newToken(role.ttl, role.renewable, { role_name: input.role_id });
      return send(200, envelope({ auth: authBlock(token) }));
    }
    const token = valid(tokenId);
    if (token === undefined) return errors(403, 'permission denied');
    if (req.method === 'GET' && path === '/v1/auth/token/lookup-self') {
      const remaining =
        token.expiresAt === undefined ? 0 : Math.max(0, Math.round((token.expiresAt - Date.now()) / 1000));
      return send(
        200,
        envelope({
          data: {
            accessor: token.accessor,
            creation_time: Math.floor(token.issuedAt / 1000),
            creation_ttl: token.ttl,
            display_name: 'token',
            entity_id: '',
            expire_time: token.expiresAt === undefined ? null : new Date(token.expiresAt).toISOString(),
            explicit_max_ttl: 0,
            id: token.id,
            issue_time: new Date(token.issuedAt).toISOString(),
            meta: token.meta,
            num_uses: 0,
            orphan: false,
            path: 'auth/token/create',
            policies: token.policies,
            renewable: token.renewable,
            ttl: remaining,
            type: 'service',
          },
        }),
      );
    }
    if (req.method === 'POST' && path === '/v1/auth/token/renew-self') {
      if (refuseRenew) return errors(403, 'permission denied');
      if (!token.renewable || token.ttl === 0) return errors(400, 'lease is not renewable');
      token.expiresAt = Date.now() + token.ttl * 1000;
      return send(200, envelope({ auth: authBlock(token) }));
    }
    const read = /^\/v1\/([^/]+)\/data\/(.+)$/.exec(path);
    if (req.method === 'GET' && read !== null) {
      const versions = kv.get(`${read[1]}/${decodeURIComponent(read[2] as string)}`);
      const latest = versions?.at(-1);
      if (latest === undefined) return errors(404);
      return send(
        200,
        envelope({
          data: {
            data: latest.data,
            metadata: {
              created_time: latest.created,
              custom_metadata: null,
              deletion_time: '',
              destroyed: false,
              version: latest.version,
            },
          },
        }),
      );
    }
    return errors(404);
  };

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  };
  const server =
    options.tls === undefined ? createHttpServer(listener) : createHttpsServer(options.tls, listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`,
    put(path, data, mount = 'secret') {
      const key = `${mount}/${path}`;
      const versions = kv.get(key) ?? [];
      versions.push({ version: versions.length + 1, created: new Date().toISOString(), data });
      kv.set(key, versions);
    },
    issueToken({ ttl = 0, renewable = true } = {}) {
      return newToken(ttl, renewable, null).id;
    },
    addAppRole(roleId, secretId, { ttl = 3600, renewable = true } = {}) {
      approles.set(roleId, { secretId, ttl, renewable });
    },
    addKubernetesRole(role, accept, { ttl = 3600, mount = 'kubernetes' } = {}) {
      kubeRoles.set(`${mount}\0${role}`, { accept, ttl });
    },
    kubernetesLogins,
    seal: () => void (sealed = true),
    unseal: () => void (sealed = false),
    refuseRenewals: (refuse) => void (refuseRenew = refuse),
    revoke: (token) => void tokens.delete(token),
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
