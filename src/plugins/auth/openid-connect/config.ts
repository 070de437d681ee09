import type { JWSAlgorithm } from 'jose';
import { sessionSchemaProperties, type SessionConfig } from '../../../sessions/index.js';
import { ConfigError } from '../../../core/plugin.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../../callout-tls.js';
import { ASYMMETRIC_JWT_ALGORITHMS } from '../../../signing/jwt-key.js';

/** The node config after schema defaults (docs/plugins/openid-connect.md). */
export interface OidcConfig extends Omit<SessionConfig, 'session'> {
  bearer_only: boolean;
  discovery?: string;
  jwks_uri?: string;
  introspection_endpoint?: string;
  client_id?: string;
  client_secret?: string;
  token_signing_alg_values_expected: string | string[];
  claim_validator?: {
    issuer?: { valid_issuers?: string[] };
    audience?: { claim?: string; required?: boolean; match_with_client_id?: boolean };
  };
  set_userinfo_header: boolean;
  set_access_token_header: boolean;
  access_token_in_authorization_header: boolean;
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
  jwk_expires_in: number;
  redirect_uri?: string;
  authorization_endpoint?: string;
  token_endpoint?: string;
  scope: string;
  logout_path?: string;
  post_logout_redirect_uri: string;
  session?: NonNullable<SessionConfig['session']> & { refresh?: boolean };
  session_refresh?: boolean;
}

/** Asymmetric JWS algorithms: the ones a published JWKS can verify. */
export const SIGNING_ALGORITHMS = ASYMMETRIC_JWT_ALGORITHMS;

const DEFAULT_ALGORITHMS = 'RS256,RS384,RS512,ES256,ES384';

const url = (description: string) => ({ type: 'string', description }) as const;
const stringList = { type: 'array', items: { type: 'string' } } as const;

const { session: sessionSchema, ...flatSessionKeys } = sessionSchemaProperties;

export const oidcSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    bearer_only: {
      type: 'boolean',
      default: true,
      description: 'true: validate bearer tokens; false: interactive login (authorization code + PKCE).',
    },
    discovery: url('OpenID discovery document URL (…/.well-known/openid-configuration).'),
    jwks_uri: url('JWKS URL; wins over the discovered one.'),
    introspection_endpoint: url('RFC 7662 endpoint; used for tokens that are not JWTs, or alone.'),
    client_id: { type: 'string', description: 'OAuth client id.' },
    client_secret: { type: 'string', description: 'OAuth client secret (introspection and login).' },
    token_signing_alg_values_expected: {
      anyOf: [{ type: 'string' }, stringList],
      default: DEFAULT_ALGORITHMS,
      description: 'Accepted JWS algorithms (a list, or one comma-separated string).',
    },
    claim_validator: {
      type: 'object',
      additionalProperties: false,
      properties: {
        issuer: {
          type: 'object',
          additionalProperties: false,
          properties: { valid_issuers: stringList },
        },
        audience: {
          type: 'object',
          additionalProperties: false,
          properties: {
            claim: { type: 'string', minLength: 1, default: 'aud' },
            required: { type: 'boolean', default: false },
            match_with_client_id: { type: 'boolean', default: false },
          },
        },
      },
    },
    set_userinfo_header: { type: 'boolean', default: true, description: 'X-Userinfo: base64 JSON claims.' },
    set_access_token_header: { type: 'boolean', default: true, description: 'Forward the access token.' },
    access_token_in_authorization_header: {
      type: 'boolean',
      default: false,
      description: 'Forward it as Authorization: Bearer instead of X-Access-Token.',
    },
    ssl_verify: { type: 'boolean', default: true },
    tls: calloutTlsSchema,
    timeout: { type: 'number', exclusiveMinimum: 0, default: 3, description: 'Seconds, per provider call.' },
    jwk_expires_in: {
      type: 'number',
      minimum: 0,
      default: 86400,
      description: 'Seconds the discovery document and JWKS are cached.',
    },
    redirect_uri: url('Callback URL (absolute, or a path on the request host); interactive mode.'),
    authorization_endpoint: url('Overrides the discovered authorization endpoint.'),
    token_endpoint: url('Overrides the discovered token endpoint.'),
    scope: { type: 'string', minLength: 1, default: 'openid' },
    logout_path: { type: 'string', minLength: 1, description: 'Path that ends the session.' },
    post_logout_redirect_uri: { type: 'string', minLength: 1, default: '/' },
    session: {
      ...sessionSchema,
      properties: {
        ...sessionSchema.properties,
        refresh: {
          type: 'boolean',
          description: 'Refresh an expired access token with the refresh token (kvstore storage).',
        },
      },
    },
    ...flatSessionKeys,
    session_refresh: { type: 'boolean', description: 'Alias of session.refresh.' },
  },
} as const;

/** A provider URL checked at load time. */
export function providerUrl(raw: string | undefined, key: string): URL | undefined {
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text === '') throw new ConfigError(key, 'must not be blank');
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw new ConfigError(key, `'${text}' is not an absolute URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(key, `must be an http:// or https:// URL (got ${parsed.protocol})`);
  }
  return parsed;
}

/** `token_signing_alg_values_expected` as a checked list. */
export function signingAlgorithms(value: string | string[]): JWSAlgorithm[] {
  const list = (Array.isArray(value) ? value : value.split(/[\s,]+/)).map((a) => a.trim()).filter(Boolean);
  if (list.length === 0) throw new ConfigError('token_signing_alg_values_expected', 'must name an algorithm');
  for (const alg of list) {
    if (!SIGNING_ALGORITHMS.includes(alg)) {
      throw new ConfigError(
        'token_signing_alg_values_expected',
        `'${alg}' is not an asymmetric JWS algorithm (${SIGNING_ALGORITHMS.join(', ')})`,
      );
    }
  }
  return [...new Set(list)];
}

/** One of two spellings of a flag; both set and different is a config error. */
export function refreshSetting(config: OidcConfig): boolean {
  const nested = config.session?.refresh;
  const flat = config.session_refresh;
  if (nested !== undefined && flat !== undefined && nested !== flat) {
    throw new ConfigError('session.refresh', 'conflicts with session_refresh; set one of them');
  }
  return nested ?? flat ?? true;
}

/** `true` when a cookie with `cookiePath` is sent with requests for `path`. */
export function pathCovers(cookiePath: string, path: string): boolean {
  if (cookiePath === '/' || path === cookiePath) return true;
  return path.startsWith(cookiePath.endsWith('/') ? cookiePath : `${cookiePath}/`);
}
