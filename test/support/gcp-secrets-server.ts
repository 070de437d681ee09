import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeProtectedHeader, jwtVerify } from 'jose';

/**
 * A local Google Cloud Secret Manager and OAuth token endpoint speaking the documented wire
 * format of what Switchyard uses:
 * - `POST /token` (https://developers.google.com/identity/protocols/oauth2/service-account#httprest):
 *   `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>`; the JWT's RS256
 *   signature is verified with the public half of the service account's key (found by `iss` and
 *   `kid`), `aud` must be this token URL, `scope` must hold cloud-platform, `exp` at most an hour
 *   after `iat`. Answers `{access_token, expires_in, token_type: Bearer}` or RFC 6749 errors
 *   (`400 invalid_grant`).
 * - `GET /v1/projects/P/secrets/S/versions/V:access` with `Authorization: Bearer`
 *   (https://cloud.google.com/secret-manager/docs/reference/rest/v1/projects.secrets.versions/access):
 *   `{name, payload: {data: <base64>}}`, `latest` being the newest version; Google's error body
 *   `{"error": {code, message, status}}` with 401 UNAUTHENTICATED, 403 PERMISSION_DENIED,
 *   404 NOT_FOUND.
 */
export interface GcpSecretsServer {
  url: string;
  tokenUri: string;
  /** A service account: its JSON key as `gcloud iam service-accounts keys create` writes it. */
  addServiceAccount(email: string, project: string): Record<string, string>;
  /** A new version of a secret (created on first use). */
  putSecret(project: string, secret: string, value: string): void;
  /** Every access token issued so far stops working (as after a revocation). */
  revokeTokens(): void;
  /**
   * An access token for `email` minted without a JWT, as the metadata server mints one for the
   * workload's service account (test/support/gcp-metadata-server.ts).
   */
  issueToken(
    email: string,
    ttlS?: number,
  ): { access_token: string; expires_in: number; token_type: 'Bearer' };
  /** Every request: what was asked, and how the server judged it. */
  readonly requests: { method: string; path: string; bearer: string | undefined; verdict: string }[];
  /** Access tokens issued, in order (a test checks none reaches a log). */
  readonly issued: string[];
  close(): Promise<void>;
}

const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

export async function startGcpSecretsServer(options: { tokenTtlS?: number } = {}): Promise<GcpSecretsServer> {
  const accounts = new Map<string, { keyId: string; publicKey: KeyObject; project: string }>();
  const secrets = new Map<string, string[]>();
  const tokens = new Map<string, { email: string; expiresAt: number }>();
  const requests: GcpSecretsServer['requests'] = [];
  const issued: string[] = [];
  const ttl = options.tokenTtlS ?? 3600;
  let tokenUri = '';

  const send = (res: ServerResponse, status: number, payload: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(payload));
  const googleError = (res: ServerResponse, code: number, status: string, message: string) =>
    send(res, code, { error: { code, message, status } });

  const token = async (body: string, res: ServerResponse): Promise<string> => {
    const form = new URLSearchParams(body);
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      send(res, 400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type.' });
      return 'bad grant_type';
    }
    const assertion = form.get('assertion') ?? '';
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(assertion).kid;
    } catch {
      send(res, 400, { error: 'invalid_grant', error_description: 'Invalid JWT.' });
      return 'malformed';
    }
    const account = [...accounts.entries()].find(([, a]) => a.keyId === kid);
    if (account === undefined) {
      send(res, 400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
      return 'unknown kid';
    }
    const [email, { publicKey }] = account;
    try {
      const { payload } = await jwtVerify(assertion, publicKey, {
        algorithms: ['RS256'],
        issuer: email,
        audience: tokenUri,
      });
      if (typeof payload.scope !== 'string' || !payload.scope.split(' ').includes(SCOPE))
        throw new Error('scope');
      if (
        typeof payload.iat !== 'number' ||
        typeof payload.exp !== 'number' ||
        payload.exp - payload.iat > 3600
      )
        throw new Error('lifetime');
    } catch (err) {
      send(res, 400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
      return `refused: ${(err as Error).message}`;
    }
    send(res, 200, mint(email, ttl));
    return 'ok';
  };

  const mint = (email: string, ttlS: number) => {
    const accessToken = `ya29.${randomBytes(24).toString('base64url')}`;
    tokens.set(accessToken, { email, expiresAt: Date.now() + ttlS * 1000 });
    issued.push(accessToken);
    return { access_token: accessToken, expires_in: ttlS, token_type: 'Bearer' as const };
  };

  const access = (req: IncomingMessage, path: string, res: ServerResponse): string => {
    const header = req.headers['authorization'];
    const bearer = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7) : undefined;
    const held = bearer === undefined ? undefined : tokens.get(bearer);
    if (held === undefined || Date.now() >= held.expiresAt) {
      googleError(
        res,
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
      );
      return 'unauthenticated';
    }
    const m = /^\/v1\/projects\/([^/]+)\/secrets\/([^/]+)\/versions\/([^/:]+):access$/.exec(path);
    if (m === null) {
      googleError(res, 404, 'NOT_FOUND', 'Not found.');
      return 'no route';
    }
    const [, project, secret, version] = m as unknown as [string, string, string, string];
    if (accounts.get(held.email)?.project !== project) {
      googleError(
        res,
        403,
        'PERMISSION_DENIED',
        `Permission 'secretmanager.versions.access' denied for resource 'projects/${project}/secrets/${secret}/versions/${version}' (or it may not exist).`,
      );
      return 'denied';
    }
    const versions = secrets.get(`${project}/${secret}`) ?? [];
    const index = version === 'latest' ? versions.length : Number(version);
    const value = Number.isInteger(index) && index >= 1 ? versions[index - 1] : undefined;
    if (value === undefined) {
      googleError(
        res,
        404,
        'NOT_FOUND',
        `Secret [projects/${project}/secrets/${secret}] not found or has no versions.`,
      );
      return 'not found';
    }
    send(res, 200, {
      name: `projects/${project}/secrets/${secret}/versions/${index}`,
      payload: { data: Buffer.from(value, 'utf8').toString('base64') },
    });
    return 'ok';
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://gcp').pathname;
      const header = req.headers['authorization'];
      const entry = {
        method: req.method ?? '',
        path,
        bearer: typeof header === 'string' ? header.replace(/^Bearer /, '') : undefined,
        verdict: '',
      };
      requests.push(entry);
      if (req.method === 'POST' && path === '/token')
        void token(Buffer.concat(chunks).toString('utf8'), res).then((v) => (entry.verdict = v));
      else if (req.method === 'GET') entry.verdict = access(req, path, res);
      else googleError(res, 404, 'NOT_FOUND', 'Not found.');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  tokenUri = `${url}/token`;
  return {
    url,
    tokenUri,
    addServiceAccount(email, project) {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const keyId = randomBytes(20).toString('hex');
      accounts.set(email, { keyId, publicKey, project });
      return {
        type: 'service_account',
        project_id: project,
        private_key_id: keyId,
        private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        client_email: email,
        client_id: String(100000000000000000000n + BigInt(accounts.size)),
        auth_uri: 'https://accounts.google.com/o/oauth2/auth',
        token_uri: tokenUri,
        auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
        universe_domain: 'googleapis.com',
      };
    },
    putSecret(project, secret, value) {
      const key = `${project}/${secret}`;
      secrets.set(key, [...(secrets.get(key) ?? []), value]);
    },
    revokeTokens: () => tokens.clear(),
    issueToken: (email, ttlS = ttl) => mint(email, ttlS),
    requests,
    issued,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
