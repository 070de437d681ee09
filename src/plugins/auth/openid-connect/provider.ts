import {
  createLocalJWKSet,
  decodeProtectedHeader,
  errors as joseErrors,
  jwtVerify,
  type JSONWebKeySet,
  type JWSAlgorithm,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { jsonAnswer, providerError, type ProviderCall, type ProviderHttp } from './provider-http.js';

/** The presented token (or login result) was judged and refused: a denial, never a provider failure. */
export class TokenRejected extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenRejected';
  }
}

/** Endpoints as configured; anything unset comes from discovery. */
export interface ProviderEndpoints {
  discovery: URL | undefined;
  jwks: URL | undefined;
  introspection: URL | undefined;
  authorization: URL | undefined;
  token: URL | undefined;
}

export interface ProviderSettings {
  endpoints: ProviderEndpoints;
  clientId: string | undefined;
  clientSecret: string | undefined;
  algorithms: JWSAlgorithm[];
  /** Seconds the discovery document and the JWKS are kept. */
  cacheSeconds: number;
}

/** The token endpoint's answer to a code or refresh grant. */
export interface TokenSet {
  idToken: string | undefined;
  accessToken: string | undefined;
  /** Unix seconds, when `expires_in` was given. */
  accessExpiresAt: number | undefined;
  refreshToken: string | undefined;
}

interface Cached<T> {
  value: T;
  expiresAt: number;
}

/** An unknown `kid` refetches the JWKS (key rotation), at most this often. */
const JWKS_REFETCH_COOLDOWN_MS = 10_000;

/**
 * One OpenID provider: discovery, JWKS, introspection and token endpoint,
 * with the discovery document and JWKS cached for `cacheSeconds`. Concurrent
 * requests share one fetch. A provider that cannot be asked throws
 * `OIDC_PROVIDER_ERROR`; a token that fails verification throws
 * {@link TokenRejected}.
 */
export class OidcProvider {
  readonly #settings: ProviderSettings;
  readonly #http: ProviderHttp;
  #discovery: Cached<Record<string, unknown>> | undefined;
  #discovering: Promise<Record<string, unknown>> | undefined;
  #jwks: Cached<JWTVerifyGetKey> | undefined;
  #jwksFetching: Promise<JWTVerifyGetKey> | undefined;
  #jwksFetchedAt = 0;

  constructor(settings: ProviderSettings, http: ProviderHttp) {
    this.#settings = settings;
    this.#http = http;
  }

  /** The issuer the discovery document declares, when there is one. */
  async issuer(): Promise<string | undefined> {
    if (this.#settings.endpoints.discovery === undefined) return undefined;
    const issuer = (await this.#discover())['issuer'];
    return typeof issuer === 'string' ? issuer : undefined;
  }

  /** An endpoint: configured, else discovered; a provider error when neither names it. */
  async endpoint(name: 'jwks' | 'authorization' | 'token' | 'introspection'): Promise<URL> {
    const configured = this.#settings.endpoints[name];
    if (configured !== undefined) return configured;
    const discovery = this.#settings.endpoints.discovery;
    const field = name === 'jwks' ? 'jwks_uri' : `${name}_endpoint`;
    if (discovery === undefined) throw providerError(`no ${field} is configured`, '');
    const value = (await this.#discover())[field];
    if (typeof value !== 'string') throw providerError(`the discovery document has no ${field}`, discovery);
    try {
      return new URL(value);
    } catch {
      throw providerError(`the discovery document's ${field} is not a URL`, discovery);
    }
  }

  /** Verifies a JWT's signature against the JWKS and its time claims; `options` adds iss/aud/nonce checks. */
  async verifyJwt(token: string, options: { issuer?: string; audience?: string } = {}): Promise<JWTPayload> {
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      throw new TokenRejected('malformed token: not a JWT');
    }
    // Refuse early: no JWKS fetch for a token that could never pass.
    if (typeof alg !== 'string' || !(this.#settings.algorithms as string[]).includes(alg)) {
      throw new TokenRejected(`token algorithm '${String(alg)}' is not accepted`);
    }
    const verifyOptions = { algorithms: this.#settings.algorithms, ...options };
    let keys = await this.#keys(false);
    try {
      return (await jwtVerify(token, keys, verifyOptions)).payload;
    } catch (err) {
      if (!(err instanceof joseErrors.JWKSNoMatchingKey) || !this.#mayRefetch()) throw rejection(err);
    }
    keys = await this.#keys(true);
    try {
      return (await jwtVerify(token, keys, verifyOptions)).payload;
    } catch (err) {
      throw rejection(err);
    }
  }

  /** RFC 7662: the introspection answer of an active token; TokenRejected when inactive. */
  async introspect(token: string, signal: AbortSignal): Promise<Record<string, unknown>> {
    const url = await this.endpoint('introspection');
    const answer = await this.#http.json(
      this.#withClientAuth({
        method: 'POST',
        url,
        form: new URLSearchParams({ token, token_type_hint: 'access_token' }),
        what: 'introspection endpoint',
      }),
      signal,
    );
    if (typeof answer['active'] !== 'boolean') {
      throw providerError('introspection answer has no boolean "active"', url);
    }
    if (!answer['active']) throw new TokenRejected('token is not active');
    return answer;
  }

  /** The authorization code grant with the PKCE verifier (RFC 6749 §4.1.3, RFC 7636). */
  async exchangeCode(
    code: string,
    redirectUri: string,
    verifier: string,
    signal: AbortSignal,
  ): Promise<TokenSet> {
    const call = this.#withClientAuth({
      method: 'POST',
      url: await this.endpoint('token'),
      form: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        code_verifier: verifier,
      }),
      what: 'token endpoint',
    });
    return tokenSet(await this.#http.json(call, signal));
  }

  /** The refresh token grant; undefined when the provider refuses the refresh token. */
  async refresh(refreshToken: string, signal: AbortSignal): Promise<TokenSet | undefined> {
    const call = this.#withClientAuth({
      method: 'POST',
      url: await this.endpoint('token'),
      form: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }),
      what: 'token endpoint (refresh)',
    });
    const { status, body } = await this.#http.send(call, signal);
    // 400/401 say the grant is dead (revoked, expired): the session ends. Anything else non-2xx is a failure.
    if (status === 400 || status === 401) return undefined;
    return tokenSet(jsonAnswer(call, status, body));
  }

  /** client_secret_basic (RFC 6749 §2.3.1: both parts form-encoded first). */
  #withClientAuth(call: ProviderCall): ProviderCall {
    const id = this.#settings.clientId;
    if (id === undefined) return call;
    const encode = (s: string): string => encodeURIComponent(s).replace(/%20/g, '+');
    const secret = this.#settings.clientSecret ?? '';
    const basic = Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64');
    return { ...call, headers: [...(call.headers ?? []), 'authorization', `Basic ${basic}`] };
  }

  #discover(): Promise<Record<string, unknown>> {
    const url = this.#settings.endpoints.discovery;
    if (url === undefined) return Promise.resolve({});
    if (this.#discovery !== undefined && this.#discovery.expiresAt > Date.now()) {
      return Promise.resolve(this.#discovery.value);
    }
    this.#discovering ??= this.#http
      .json({ method: 'GET', url, what: 'discovery' }, null)
      .then((doc) => {
        this.#discovery = { value: doc, expiresAt: Date.now() + this.#settings.cacheSeconds * 1000 };
        return doc;
      })
      .finally(() => {
        this.#discovering = undefined;
      });
    return this.#discovering;
  }

  #keys(force: boolean): Promise<JWTVerifyGetKey> {
    if (!force && this.#jwks !== undefined && this.#jwks.expiresAt > Date.now()) {
      return Promise.resolve(this.#jwks.value);
    }
    this.#jwksFetching ??= this.endpoint('jwks')
      .then((url) =>
        this.#http.json({ method: 'GET', url, what: 'JWKS' }, null).then((doc) => [url, doc] as const),
      )
      .then(([url, doc]) => {
        let keys: JWTVerifyGetKey;
        try {
          keys = createLocalJWKSet(doc as unknown as JSONWebKeySet);
        } catch (err) {
          throw providerError(`JWKS is not a key set: ${(err as Error).message}`, url, err);
        }
        this.#jwksFetchedAt = Date.now();
        this.#jwks = { value: keys, expiresAt: Date.now() + this.#settings.cacheSeconds * 1000 };
        return keys;
      })
      .finally(() => {
        this.#jwksFetching = undefined;
      });
    return this.#jwksFetching;
  }

  #mayRefetch(): boolean {
    return Date.now() - this.#jwksFetchedAt >= JWKS_REFETCH_COOLDOWN_MS;
  }
}

function tokenSet(answer: Record<string, unknown>): TokenSet {
  const text = (name: string): string | undefined => {
    const value = answer[name];
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const expiresIn = answer['expires_in'];
  return {
    idToken: text('id_token'),
    accessToken: text('access_token'),
    accessExpiresAt:
      typeof expiresIn === 'number' && expiresIn > 0 ? Math.floor(Date.now() / 1000) + expiresIn : undefined,
    refreshToken: text('refresh_token'),
  };
}

/** jose's verdicts are denials with a readable reason; anything else (a provider error) passes through. */
function rejection(err: unknown): unknown {
  if (err instanceof joseErrors.JWTExpired) return new TokenRejected('token has expired');
  if (err instanceof joseErrors.JWKSNoMatchingKey)
    return new TokenRejected('no key in the JWKS matches the token');
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) {
    return new TokenRejected('token signature verification failed');
  }
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    return new TokenRejected(`token claim '${err.claim}' is invalid: ${err.reason}`);
  }
  if (err instanceof joseErrors.JOSEError) return new TokenRejected(`invalid token: ${err.message}`);
  return err;
}
