import {
  createRemoteJWKSet,
  customFetch as joseCustomFetch,
  decodeProtectedHeader,
  errors as joseErrors,
  jwtVerify,
  type JWSAlgorithm,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import * as oidc from 'openid-client';
import { NodeError } from '../../../core/errors.js';
import { clientGone, forClient, providerError, shared, type ProviderFetch } from './provider-fetch.js';

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
  /**
   * `claim_validator.issuer.valid_issuers`: without discovery, the first is the
   * issuer an id_token must name.
   */
  validIssuers: readonly string[];
}

/** The token endpoint's answer to a code or refresh grant. */
export interface TokenSet {
  idToken: string | undefined;
  accessToken: string | undefined;
  /** Unix seconds, when `expires_in` was given. */
  accessExpiresAt: number | undefined;
  refreshToken: string | undefined;
}

/** What the login flow remembered across the trip to the provider. */
export interface LoginChecks {
  state: string;
  nonce: string;
  verifier: string;
}

type EndpointName = 'jwks' | 'authorization' | 'token' | 'introspection';
const FIELDS: Record<EndpointName, keyof oidc.ServerMetadata> = {
  jwks: 'jwks_uri',
  authorization: 'authorization_endpoint',
  token: 'token_endpoint',
  introspection: 'introspection_endpoint',
};

/** openid-client needs a client id even where only the provider's keys are used (bearer mode without one). */
const RESOURCE_SERVER_ID = 'switchyard-resource-server';
/** An unknown `kid` refetches the JWKS (key rotation), at most this often. */
const JWKS_REFETCH_COOLDOWN_MS = 10_000;

interface Resolved {
  config: oidc.Configuration;
  metadata: oidc.ServerMetadata;
  expiresAt: number;
}

/**
 * One OpenID provider, as a relying party sees it through `openid-client`
 * (discovery, authorization URL, code grant with PKCE/state/nonce, ID token
 * validation including its signature against the provider's JWKS, refresh,
 * introspection) and, for bearer tokens, jose's remote JWKS. The discovered
 * configuration is kept for `cacheSeconds` and shared by concurrent requests.
 * A provider that cannot be asked throws `OIDC_PROVIDER_ERROR`; a token that
 * fails verification throws {@link TokenRejected}.
 */
export class OidcProvider {
  readonly #settings: ProviderSettings;
  readonly #fetch: ProviderFetch;
  #resolved: Resolved | undefined;
  #resolving: Promise<Resolved> | undefined;
  readonly #jwks = new Map<string, JWTVerifyGetKey>();

  constructor(settings: ProviderSettings, fetch: ProviderFetch) {
    this.#settings = settings;
    this.#fetch = fetch;
  }

  /** An endpoint: configured, else discovered; a provider error when neither names it. */
  async endpoint(name: EndpointName): Promise<URL> {
    const configured = this.#settings.endpoints[name];
    if (configured !== undefined) return configured;
    const field = FIELDS[name];
    const discovery = this.#settings.endpoints.discovery;
    if (discovery === undefined) throw providerError(`no ${field} is configured`, '');
    const value = (await this.#resolve()).metadata[field];
    if (typeof value !== 'string') throw providerError(`the discovery document has no ${field}`, discovery);
    try {
      return new URL(value);
    } catch {
      throw providerError(`the discovery document's ${field} is not a URL`, discovery);
    }
  }

  /** Bearer mode: a JWT's signature against the JWKS (jose's remote key set) and its time claims. */
  async verifyJwt(token: string): Promise<JWTPayload> {
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
    const url = await this.endpoint('jwks');
    try {
      return (await jwtVerify(token, this.#keySet(url), { algorithms: this.#settings.algorithms })).payload;
    } catch (err) {
      throw this.#jwtRejection(err, url);
    }
  }

  /** RFC 7662: the introspection answer of an active token; TokenRejected when inactive. */
  async introspect(token: string, signal: AbortSignal): Promise<Record<string, unknown>> {
    const { config } = await this.#resolve();
    const url = await this.endpoint('introspection');
    let answer: oidc.IntrospectionResponse;
    try {
      answer = await forClient(signal, () =>
        oidc.tokenIntrospection(config, token, { token_type_hint: 'access_token' }),
      );
    } catch (err) {
      throw this.#failure(err, 'introspection endpoint', url);
    }
    if (!answer.active) throw new TokenRejected('token is not active');
    return { ...answer };
  }

  /** The authorization request URL: code flow, PKCE S256, `state` and `nonce`. */
  async authorizationUrl(redirectUri: string, scope: string, checks: LoginChecks): Promise<string> {
    const { config } = await this.#resolve();
    try {
      return oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope,
        state: checks.state,
        nonce: checks.nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(checks.verifier),
        code_challenge_method: 'S256',
      }).href;
    } catch (err) {
      throw this.#failure(err, 'authorization request', this.#settings.endpoints.authorization ?? '');
    }
  }

  /**
   * The callback: openid-client checks the authorization response (state,
   * `iss`), redeems the code with the PKCE verifier, and validates the ID
   * token (issuer, audience, expiry, nonce, and its signature against the
   * provider's JWKS). `callback` is the redirect URI with the callback's query.
   */
  async exchangeCode(
    callback: URL,
    checks: LoginChecks,
    signal: AbortSignal,
  ): Promise<{ tokens: TokenSet; claims: Record<string, unknown> }> {
    const { config } = await this.#resolve();
    let answer: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers;
    try {
      answer = await forClient(signal, () =>
        oidc.authorizationCodeGrant(config, callback, {
          pkceCodeVerifier: checks.verifier,
          expectedState: checks.state,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        }),
      );
    } catch (err) {
      throw verdict(err) ?? this.#failure(err, 'token endpoint', await this.endpoint('token'));
    }
    const idToken = answer.id_token as string;
    const alg = decodeProtectedHeader(idToken).alg;
    if (alg === undefined || !(this.#settings.algorithms as string[]).includes(alg)) {
      throw new TokenRejected(`token algorithm '${String(alg)}' is not accepted`);
    }
    return { tokens: tokenSet(answer), claims: { ...answer.claims() } };
  }

  /** The refresh token grant; undefined when the provider refuses the refresh token. */
  async refresh(refreshToken: string, signal: AbortSignal): Promise<TokenSet | undefined> {
    const { config } = await this.#resolve();
    try {
      return tokenSet(await forClient(signal, () => oidc.refreshTokenGrant(config, refreshToken)));
    } catch (err) {
      // 400/401 say the grant is dead (revoked, expired): the session ends. Anything else is a failure.
      if (err instanceof oidc.ResponseBodyError && (err.status === 400 || err.status === 401)) {
        return undefined;
      }
      throw this.#failure(err, 'token endpoint (refresh)', await this.endpoint('token'));
    }
  }

  /** The provider's configuration: discovered (then overridden by configured endpoints), or as configured. */
  #resolve(): Promise<Resolved> {
    if (this.#resolved !== undefined && this.#resolved.expiresAt > Date.now()) {
      return Promise.resolve(this.#resolved);
    }
    this.#resolving ??= shared(() => this.#build())
      .then((resolved) => (this.#resolved = resolved))
      .finally(() => {
        this.#resolving = undefined;
      });
    return this.#resolving;
  }

  async #build(): Promise<Resolved> {
    const { endpoints, clientId, clientSecret, validIssuers, cacheSeconds } = this.#settings;
    const id = clientId ?? RESOURCE_SERVER_ID;
    const auth = clientSecret === undefined ? oidc.None() : oidc.ClientSecretBasic(clientSecret);
    const configured = Object.values(endpoints).filter((u): u is URL => u !== undefined);
    // Plain http is the operator's explicit choice; a discovery document may not downgrade https.
    const insecure = configured.some((u) => u.protocol === 'http:');
    const timeout = this.#fetch.timeoutMs / 1000;
    let discovered: oidc.ServerMetadata;
    if (endpoints.discovery !== undefined) {
      try {
        const found = await oidc.discovery(endpoints.discovery, id, undefined, auth, {
          [oidc.customFetch]: this.#fetch.fetch,
          timeout,
          execute: insecure ? [oidc.allowInsecureRequests] : [],
        });
        discovered = found.serverMetadata();
      } catch (err) {
        throw this.#failure(err, 'discovery', endpoints.discovery);
      }
    } else {
      // No discovery: the issuer an id_token must name is the first valid issuer, else the provider's origin.
      discovered = { issuer: validIssuers[0] ?? (configured[0] as URL).origin };
    }
    const overrides: Record<string, string> = {};
    for (const name of Object.keys(FIELDS) as EndpointName[]) {
      const url = endpoints[name];
      if (url !== undefined) overrides[FIELDS[name]] = url.href;
    }
    const metadata: oidc.ServerMetadata = { ...discovered, ...overrides };
    const config = new oidc.Configuration(metadata, id, undefined, auth);
    config[oidc.customFetch] = this.#fetch.fetch;
    config.timeout = timeout;
    if (insecure) oidc.allowInsecureRequests(config);
    // ID tokens come straight from the token endpoint, but we verify their signature all the same.
    oidc.enableNonRepudiationChecks(config);
    return { config, metadata, expiresAt: Date.now() + cacheSeconds * 1000 };
  }

  #keySet(url: URL): JWTVerifyGetKey {
    let keys = this.#jwks.get(url.href);
    if (keys === undefined) {
      keys = createRemoteJWKSet(url, {
        cacheMaxAge: this.#settings.cacheSeconds * 1000,
        cooldownDuration: JWKS_REFETCH_COOLDOWN_MS,
        timeoutDuration: this.#fetch.timeoutMs,
        [joseCustomFetch]: this.#fetch.jwksFetch,
      });
      this.#jwks.set(url.href, keys);
    }
    return keys;
  }

  /** jose's verdicts are denials with a readable reason; a JWKS that cannot be had is a provider error. */
  #jwtRejection(err: unknown, jwks: URL): unknown {
    if (err instanceof NodeError) return err;
    if (err instanceof joseErrors.JWKSTimeout) {
      return providerError(`JWKS failed: no answer within ${this.#fetch.timeoutMs} ms`, jwks, err);
    }
    if (err instanceof joseErrors.JWTExpired) return new TokenRejected('token has expired');
    if (err instanceof joseErrors.JWKSNoMatchingKey) {
      return new TokenRejected('no key in the JWKS matches the token');
    }
    if (err instanceof joseErrors.JWSSignatureVerificationFailed) {
      return new TokenRejected('token signature verification failed');
    }
    if (err instanceof joseErrors.JWTClaimValidationFailed) {
      return new TokenRejected(`token claim '${err.claim}' is invalid: ${err.reason}`);
    }
    if (err instanceof joseErrors.JOSEError) return new TokenRejected(`invalid token: ${err.message}`);
    return this.#failure(err, 'JWKS', jwks);
  }

  /** Any other failure to get an answer from the provider: 502, or the client's own departure. */
  #failure(err: unknown, what: string, where: URL | string): NodeError {
    const inner = err instanceof Error && err.cause instanceof NodeError ? err.cause : err;
    if (inner instanceof NodeError) return inner;
    if (clientGone() || (err instanceof oidc.ClientError && err.code === 'OAUTH_ABORT')) {
      return new NodeError('UPSTREAM_CLIENT_ABORTED', `the client went away before the ${what} answered`);
    }
    if (err instanceof oidc.ResponseBodyError) {
      return providerError(`${what} answered ${err.status} (${err.error})`, where, err);
    }
    if (err instanceof oidc.ClientError) {
      if (err.code === 'OAUTH_TIMEOUT') {
        return providerError(`${what} failed: no answer within ${this.#fetch.timeoutMs} ms`, where, err);
      }
      const status = (err.cause as { status?: unknown } | undefined)?.status;
      if (err.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' && typeof status === 'number') {
        return providerError(`${what} answered ${status}`, where, err);
      }
      return providerError(`${what} failed: ${detail(err)}`, where, err);
    }
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
    return providerError(`${what} failed: ${(cause as Error)?.message ?? String(cause)}`, where, err);
  }
}

/** openid-client's judgments of the login response and ID token: denials, not provider failures. */
function verdict(err: unknown): TokenRejected | undefined {
  if (!(err instanceof oidc.ClientError)) return undefined;
  const reason = detail(err);
  switch (err.code) {
    case 'OAUTH_JWT_CLAIM_COMPARISON_FAILED':
    case 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED':
    case 'OAUTH_KEY_SELECTION_FAILED':
    case 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED':
      return new TokenRejected(reason);
    case 'OAUTH_INVALID_RESPONSE':
      return /JWT|ID Token/.test(reason) ? new TokenRejected(reason) : undefined;
    default:
      return undefined;
  }
}

/** The library's specific message (its wrapper's cause), e.g. `unexpected ID Token "nonce" claim value`. */
function detail(err: Error): string {
  return err.cause instanceof Error && err.cause.message !== '' ? err.cause.message : err.message;
}

function tokenSet(answer: oidc.TokenEndpointResponse): TokenSet {
  const text = (value: unknown): string | undefined =>
    typeof value === 'string' && value !== '' ? value : undefined;
  const expiresIn = answer.expires_in;
  return {
    idToken: text(answer.id_token),
    accessToken: text(answer.access_token),
    accessExpiresAt:
      typeof expiresIn === 'number' && expiresIn > 0 ? Math.floor(Date.now() / 1000) + expiresIn : undefined,
    refreshToken: text(answer.refresh_token),
  };
}
