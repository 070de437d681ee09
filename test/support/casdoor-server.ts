import { randomBytes, randomUUID } from 'node:crypto';
import { basicCredentials, startFakeService, type FakeCall, type FakeService } from './fake-service.js';

export interface CasdoorClient {
  secret: string;
  /** Accepted `redirect_uri`s (exact match). */
  redirectUris: string[];
}

export interface CasdoorServer extends FakeService {
  /** Issues an access token for `user` as a finished login would. */
  issueToken(user: string, clientId?: string): string;
  /** Revokes a token: introspection then says `active: false`. */
  revoke(token: string): void;
  /** Opaque (non-JWT) access tokens instead of Casdoor's JWTs. */
  opaqueTokens: boolean;
  /** A code for `user` as the login page hands out, without going through it. */
  issueCode(user: string, clientId: string, redirectUri: string): string;
}

interface Grant {
  user: string;
  clientId: string;
  redirectUri: string;
}

interface TokenInfo {
  user: string;
  id: string;
  clientId: string;
  exp: number;
}

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * Casdoor's OAuth endpoints in their wire format: the authorize page
 * (`GET /login/oauth/authorize`; the login form posts back to it and is
 * redirected to `redirect_uri?code=…&state=…`), the token endpoint
 * (`POST /api/login/oauth/access_token`, single-use codes, `400
 * invalid_grant` / `invalid_client` errors, JWT access tokens carrying
 * `name` and `sub`) and RFC 7662 introspection (`POST
 * /api/login/oauth/introspect` with the client's Basic credentials).
 */
export async function startCasdoorServer(options: {
  clients: Record<string, CasdoorClient>;
  users?: Record<string, string>;
}): Promise<CasdoorServer> {
  const users = options.users ?? { alice: 'alice-pw', bob: 'bob-pw' };
  const ids = new Map(Object.keys(users).map((u) => [u, randomUUID()]));
  const codes = new Map<string, Grant>();
  const tokens = new Map<string, TokenInfo>();
  let url = '';

  const issueCode = (user: string, clientId: string, redirectUri: string): string => {
    const code = randomBytes(10).toString('hex');
    codes.set(code, { user, clientId, redirectUri });
    return code;
  };

  const issueToken = (user: string, clientId = Object.keys(options.clients)[0] ?? ''): string => {
    const now = Math.floor(Date.now() / 1000);
    const id = ids.get(user) ?? randomUUID();
    const info = { user, id, clientId, exp: now + 3600 };
    const token = state.opaqueTokens
      ? randomBytes(16).toString('hex')
      : [
          b64url({ alg: 'RS256', kid: 'cert-built-in', typ: 'JWT' }),
          b64url({
            owner: 'built-in',
            name: user,
            id,
            sub: id,
            iss: url,
            aud: [clientId],
            exp: info.exp,
            nbf: now,
            iat: now,
            jti: `admin/${randomUUID()}`,
            tokenType: 'access-token',
            scope: 'read',
          }),
          randomBytes(32).toString('base64url'),
        ].join('.');
    tokens.set(token, info);
    return token;
  };

  const clientOf = (call: FakeCall, fromBody: boolean): string | undefined => {
    const [id, secret] =
      basicCredentials(call) ??
      (fromBody ? [call.form.get('client_id') ?? '', call.form.get('client_secret') ?? ''] : ['', '']);
    return options.clients[id]?.secret === secret ? id : undefined;
  };

  const authorizePage = (call: FakeCall) => {
    const q = call.query;
    const client = options.clients[q.get('client_id') ?? ''];
    if (client === undefined || q.get('response_type') !== 'code') {
      return { status: 400, text: '<p>Invalid client_id or response_type</p>', contentType: 'text/html' };
    }
    if (!client.redirectUris.includes(q.get('redirect_uri') ?? '')) {
      return { status: 400, text: '<p>Invalid redirect_uri</p>', contentType: 'text/html' };
    }
    return undefined;
  };

  const service = await startFakeService({
    'GET /login/oauth/authorize': (call) =>
      authorizePage(call) ?? {
        status: 200,
        contentType: 'text/html',
        text: `<form method="post"><input name="username"><input name="password" type="password"><button>Sign in</button></form>`,
      },
    'POST /login/oauth/authorize': (call) => {
      const invalid = authorizePage(call);
      if (invalid !== undefined) return invalid;
      const username = call.form.get('username') ?? '';
      if (users[username] === undefined || users[username] !== call.form.get('password')) {
        return { status: 401, contentType: 'text/html', text: '<p>Wrong password</p>' };
      }
      const redirectUri = call.query.get('redirect_uri') ?? '';
      const target = new URL(redirectUri);
      target.searchParams.set('code', issueCode(username, call.query.get('client_id') ?? '', redirectUri));
      target.searchParams.set('state', call.query.get('state') ?? '');
      return { status: 302, headers: { location: target.toString() } };
    },
    'POST /api/login/oauth/access_token': (call) => {
      const clientId = clientOf(call, true);
      if (clientId === undefined) {
        return {
          status: 400,
          json: { error: 'invalid_client', error_description: 'client_secret is invalid' },
        };
      }
      if (call.form.get('grant_type') !== 'authorization_code') {
        return {
          status: 400,
          json: { error: 'unsupported_grant_type', error_description: 'unsupported grant_type' },
        };
      }
      const code = call.form.get('code') ?? '';
      const grant = codes.get(code);
      codes.delete(code);
      if (grant === undefined || grant.clientId !== clientId) {
        return {
          status: 400,
          json: { error: 'invalid_grant', error_description: 'authorization code is invalid' },
        };
      }
      return {
        status: 200,
        json: {
          access_token: issueToken(grant.user, clientId),
          id_token: issueToken(grant.user, clientId),
          refresh_token: randomBytes(16).toString('hex'),
          token_type: 'Bearer',
          expires_in: 604800,
          scope: 'read',
        },
      };
    },
    'POST /api/login/oauth/introspect': (call) => {
      const clientId = clientOf(call, false);
      if (clientId === undefined) {
        return {
          status: 401,
          json: { error: 'invalid_client', error_description: 'client_id or secret is invalid' },
        };
      }
      const info = tokens.get(call.form.get('token') ?? '');
      if (info === undefined || info.exp <= Date.now() / 1000)
        return { status: 200, json: { active: false } };
      return {
        status: 200,
        json: {
          active: true,
          client_id: info.clientId,
          username: info.user,
          token_type: 'Bearer',
          exp: info.exp,
          iat: info.exp - 3600,
          nbf: info.exp - 3600,
          sub: info.id,
          aud: [info.clientId],
          iss: url,
          scope: 'read',
        },
      };
    },
  });
  url = service.url;
  const state: CasdoorServer = Object.assign(service, {
    opaqueTokens: false,
    issueToken,
    issueCode,
    revoke(token: string) {
      tokens.delete(token);
    },
  });
  return state;
}
