import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';

/** A provider fault for provider-error tests: answer `status`, or never answer. */
export type IdpFault = { path: string; status: number } | { path: string; hang: true };

export interface IdpClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

export interface TestIdp {
  /** `http://127.0.0.1:<port>`: the issuer. */
  readonly issuer: string;
  /** `<issuer>/.well-known/openid-configuration` */
  readonly discovery: string;
  readonly jwksUri: string;
  /** Who the next interactive login signs in as. */
  user: string;
  /** When set, the next login is refused by the user (`access_denied`). */
  refuseLogin: boolean;
  /** Lifetime in seconds of access tokens issued from now on. */
  accessTokenTtl: number;
  fault: IdpFault | undefined;
  /** Requests per path (query stripped) since start or the last `resetCounts()`. */
  readonly hits: Map<string, number>;
  resetCounts(): void;
  /** The query of the last authorization request. */
  readonly lastAuthorization: URLSearchParams | undefined;
  /** A JWT signed with the provider's published key, unless `wrongKey`. */
  mint(
    claims?: JWTPayload,
    options?: { wrongKey?: boolean; expired?: boolean; withoutAudience?: boolean },
  ): Promise<string>;
  /** An opaque access token from the client credentials grant (for introspection). */
  clientCredentialsToken(): Promise<string>;
  close(): Promise<void>;
}

/**
 * A real OpenID provider (oidc-provider) on a random loopback port, with one
 * confidential client, PKCE required, introspection and refresh tokens on.
 * Logins need no form: `/interaction/:uid` signs in `idp.user` and grants
 * the requested scopes at once.
 */
export async function startIdp(client: IdpClient): Promise<TestIdp> {
  const signing = await generateKeyPair('RS256', { extractable: true });
  const stranger = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(signing.privateKey)), kid: 'test-key-1', alg: 'RS256', use: 'sig' };

  const server: Server = createServer();
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const state = {
    user: 'alice',
    refuseLogin: false,
    accessTokenTtl: 3600,
    fault: undefined as IdpFault | undefined,
    lastAuthorization: undefined as URLSearchParams | undefined,
  };

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: client.clientId,
        client_secret: client.clientSecret,
        redirect_uris: client.redirectUris,
        grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: ['idp-cookie-key-for-tests-only'] },
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      introspection: { enabled: true },
      clientCredentials: { enabled: true },
    },
    claims: { openid: ['sub'], email: ['email'], profile: ['name'] },
    // Scope claims in the id_token too, not only at the userinfo endpoint.
    conformIdTokenClaims: false,
    findAccount: (_ctx: unknown, sub: string) => ({
      accountId: sub,
      claims: () => ({ sub, email: `${sub}@example.com`, name: sub.toUpperCase() }),
    }),
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    issueRefreshToken: (_ctx: unknown, c: { grantTypeAllowed(t: string): boolean }) =>
      c.grantTypeAllowed('refresh_token'),
    ttl: { AccessToken: () => state.accessTokenTtl },
  });
  // Its own errors (bad requests from the gateway under test) are answered already; keep the console quiet.
  provider.on('server_error', () => {});

  const hits = new Map<string, number>();
  const callback = provider.callback();

  const interaction = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const details = await provider.interactionDetails(req, res);
    if (state.refuseLogin) {
      await provider.interactionFinished(req, res, {
        error: 'access_denied',
        error_description: 'the user said no',
      });
      return;
    }
    if (details.prompt.name === 'login') {
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: state.user } },
        {
          mergeWithLastSubmission: false,
        },
      );
      return;
    }
    const accountId = details.session?.accountId ?? state.user;
    const clientId = String(details.params['client_id']);
    const grant =
      (details.grantId === undefined ? undefined : await provider.Grant.find(details.grantId)) ??
      new provider.Grant({ accountId, clientId });
    const missing = details.prompt.details;
    if (Array.isArray(missing['missingOIDCScope'])) grant.addOIDCScope(missing['missingOIDCScope'].join(' '));
    if (Array.isArray(missing['missingOIDCClaims']))
      grant.addOIDCClaims(missing['missingOIDCClaims'] as string[]);
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  };

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const fault = state.fault;
    if (fault !== undefined && path === fault.path) {
      if ('status' in fault) {
        res.writeHead(fault.status, { 'content-type': 'application/json' });
        res.end('{"error":"server_error"}');
      }
      return; // hang: never answer
    }
    if (path === '/auth') state.lastAuthorization = new URL(req.url ?? '/', issuer).searchParams;
    if (path.startsWith('/interaction/')) {
      interaction(req, res).catch((err: unknown) => {
        res.writeHead(500);
        res.end(String(err));
      });
      return;
    }
    callback(req, res);
  });

  const basic = `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`;

  return {
    issuer,
    discovery: `${issuer}/.well-known/openid-configuration`,
    jwksUri: `${issuer}/jwks`,
    get user() {
      return state.user;
    },
    set user(v: string) {
      state.user = v;
    },
    get refuseLogin() {
      return state.refuseLogin;
    },
    set refuseLogin(v: boolean) {
      state.refuseLogin = v;
    },
    get accessTokenTtl() {
      return state.accessTokenTtl;
    },
    set accessTokenTtl(v: number) {
      state.accessTokenTtl = v;
    },
    get fault() {
      return state.fault;
    },
    set fault(v: IdpFault | undefined) {
      state.fault = v;
    },
    hits,
    resetCounts: () => hits.clear(),
    get lastAuthorization() {
      return state.lastAuthorization;
    },
    async mint(claims = {}, options = {}) {
      const now = Math.floor(Date.now() / 1000);
      const key = options.wrongKey === true ? stranger.privateKey : signing.privateKey;
      const payload: JWTPayload = {
        sub: 'alice',
        email: 'alice@example.com',
        aud: client.clientId,
        iss: issuer,
      };
      if (options.withoutAudience === true) delete payload.aud;
      return new SignJWT({ ...payload, ...claims })
        .setProtectedHeader({ alg: 'RS256', kid: 'test-key-1', typ: 'JWT' })
        .setIssuedAt(options.expired === true ? now - 7200 : now)
        .setExpirationTime(options.expired === true ? now - 3600 : now + 3600)
        .sign(key);
    },
    async clientCredentialsToken() {
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=client_credentials',
      });
      const body = (await res.json()) as { access_token?: string };
      if (body.access_token === undefined)
        throw new Error(`no client credentials token: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
