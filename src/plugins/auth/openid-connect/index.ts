import type { Context } from '../../../core/context.js';
import { hasPlaceholder } from '../../../config/interpolate.js';
import { calloutTls } from '../../callout-tls.js';
import { resolveSessionSettings, type SessionSettings } from '../../../sessions/index.js';
import { ConfigError, definePlugin, type PluginEnv } from '../../../core/plugin.js';
import { INTERACTIVE_OUTPUTS } from '../cas-auth.js';
import { requestHeader } from '../shared.js';
import { attachIdentity, checkClaims, type AttachOptions, type ClaimRules } from './claims.js';
import {
  oidcSchema,
  pathCovers,
  providerUrl,
  refreshSetting,
  signingAlgorithms,
  type OidcConfig,
} from './config.js';
import { LoginFlow, type LoginSettings } from './login.js';
import { ProviderFetch } from './provider-fetch.js';
import { OidcProvider, TokenRejected, type ProviderEndpoints } from './provider.js';
import { denied } from './respond.js';

const MISSING_TOKEN =
  'No bearer token found in request (bearer_only is true; set bearer_only: false for interactive login)';

/**
 * OpenID Connect. Bearer mode (the default) validates `Authorization: Bearer`
 * tokens: JWTs against the provider's JWKS (by discovery or `jwks_uri`),
 * anything else by RFC 7662 introspection when configured. Interactive mode
 * (`bearer_only: false`) runs the authorization code flow with PKCE and keeps
 * the login in a session (sealed cookie or kvstore). Provider failures leave
 * through `error` as 502 `provider_error`; a login redirect is an outcome.
 *
 * @example
 * ```yaml
 * - id: oidc
 *   type: openid-connect
 *   config:
 *     discovery: https://idp.example.com/.well-known/openid-configuration
 *     client_id: api
 *     claim_validator: { audience: { required: true, match_with_client_id: true } }
 * ```
 */
export const openidConnect = definePlugin({
  type: 'openid-connect',
  category: 'auth',
  description:
    'OpenID Connect: bearer token validation (JWKS or introspection), or browser login with sessions.',
  schema: oidcSchema,
  outputs: INTERACTIVE_OUTPUTS,
  // Provider endpoints and credentials are not traffic-bound: no templates (SSRF).
  templated: [],
  create(config: OidcConfig, env) {
    const endpoints: ProviderEndpoints = {
      discovery: providerUrl(config.discovery, 'discovery'),
      jwks: providerUrl(config.jwks_uri, 'jwks_uri'),
      introspection: providerUrl(config.introspection_endpoint, 'introspection_endpoint'),
      authorization: providerUrl(config.authorization_endpoint, 'authorization_endpoint'),
      token: providerUrl(config.token_endpoint, 'token_endpoint'),
    };
    const useJwks = endpoints.discovery !== undefined || endpoints.jwks !== undefined;
    if (!useJwks && endpoints.introspection === undefined) {
      throw new ConfigError(
        '',
        "openid-connect requires a JWKS source ('discovery' or 'jwks_uri') or an 'introspection_endpoint'",
      );
    }
    const clientId = config.client_id === '' ? undefined : config.client_id;
    const clientSecret = config.client_secret === '' ? undefined : config.client_secret;
    if (endpoints.introspection !== undefined && (clientId === undefined || clientSecret === undefined)) {
      throw new ConfigError(
        clientId === undefined ? 'client_id' : 'client_secret',
        'is required with introspection_endpoint (the call is authenticated)',
      );
    }
    warnUnresolved(env, {
      client_id: config.client_id,
      client_secret: config.client_secret,
      ...secretEntries(config.session?.secret ?? config.session_secret),
    });
    const claimRules = claimRulesOf(config, clientId);
    const timeoutMs = config.timeout * 1000;
    // Discovery may name https endpoints even when the configured ones are http.
    const http = new ProviderFetch(calloutTls(config.ssl_verify, config.tls), timeoutMs);
    const provider = new OidcProvider(
      {
        endpoints,
        clientId,
        clientSecret,
        algorithms: signingAlgorithms(config.token_signing_alg_values_expected),
        cacheSeconds: config.jwk_expires_in,
        validIssuers: config.claim_validator?.issuer?.valid_issuers ?? [],
      },
      http,
    );
    const attachOptions: AttachOptions = {
      userinfoHeader: config.set_userinfo_header,
      accessTokenHeader: config.set_access_token_header,
      inAuthorizationHeader: config.access_token_in_authorization_header,
    };

    const session = resolveSessionSettings(config, env, 'oidc_session');
    const login = config.bearer_only
      ? bearerOnlyChecks(config, env, session)
      : new LoginFlow(
          loginSettings(config, env, session, { useJwks, clientId, clientSecret, endpoints, claimRules }),
          provider,
          session ?? required('session.secret'),
          (ctx, claims, accessToken) => attachIdentity(ctx, claims, accessToken, attachOptions),
          env.logger,
        );

    const validate = async (ctx: Context, token: string): Promise<'success' | 'denied'> => {
      let claims: Record<string, unknown>;
      try {
        claims =
          useJwks && (endpoints.introspection === undefined || looksLikeJwt(token))
            ? await provider.verifyJwt(token)
            : await provider.introspect(token, ctx.signal);
        checkClaims(claims, claimRules);
      } catch (err) {
        if (err instanceof TokenRejected) return denied(ctx, err.message);
        throw err;
      }
      attachIdentity(ctx, claims, token, attachOptions);
      return 'success';
    };

    return {
      run(ctx) {
        // Only this node may say who the user is.
        delete ctx.request.headers['x-userinfo'];
        if (login !== undefined) return login.run(ctx);
        const token = bearerToken(ctx);
        return token === undefined ? denied(ctx, MISSING_TOKEN) : validate(ctx, token);
      },
      close() {
        http.close();
      },
    };
  },
});

/** An unset `${VAR}` stays as written in node configs: a secret of literally `${SECRET}` is no secret. */
function warnUnresolved(env: PluginEnv, values: Record<string, string | undefined>): void {
  for (const [key, value] of Object.entries(values)) {
    if (value !== undefined && hasPlaceholder(value)) {
      env.warn(key, 'contains an unresolved ${…} placeholder: is the environment variable set?');
    }
  }
}

/** `session.secret` as warning keys: the key itself for one secret, `session.secret[i]` in a list. */
function secretEntries(secret: string | string[] | undefined): Record<string, string> {
  if (secret === undefined) return {};
  if (typeof secret === 'string') return { 'session.secret': secret };
  return Object.fromEntries(secret.map((s, i) => [`session.secret[${i}]`, s]));
}

function claimRulesOf(config: OidcConfig, clientId: string | undefined): ClaimRules {
  const audience = config.claim_validator?.audience;
  const match = audience?.match_with_client_id ?? false;
  if (match && clientId === undefined) {
    throw new ConfigError('claim_validator.audience.match_with_client_id', 'needs client_id');
  }
  return {
    validIssuers: new Set(config.claim_validator?.issuer?.valid_issuers ?? []),
    audienceClaim: audience?.claim ?? 'aud',
    audienceRequired: audience?.required ?? false,
    audienceMustContain: match ? clientId : undefined,
  };
}

/** Bearer mode: interactive keys have no effect; say so at load time. */
function bearerOnlyChecks(
  config: OidcConfig,
  env: PluginEnv,
  session: SessionSettings | undefined,
): undefined {
  if (session !== undefined) env.warn('session', 'ignored in bearer mode (bearer_only: true)');
  for (const key of ['redirect_uri', 'logout_path'] as const) {
    if (config[key] !== undefined) env.warn(key, 'ignored in bearer mode (bearer_only: true)');
  }
  return undefined;
}

function required(key: string): never {
  throw new ConfigError(key, 'is required when bearer_only is false');
}

function loginSettings(
  config: OidcConfig,
  env: PluginEnv,
  session: SessionSettings | undefined,
  known: {
    useJwks: boolean;
    clientId: string | undefined;
    clientSecret: string | undefined;
    endpoints: ProviderEndpoints;
    claimRules: ClaimRules;
  },
): LoginSettings {
  if (!known.useJwks) {
    throw new ConfigError(
      'discovery',
      "interactive login needs 'discovery' or 'jwks_uri' to verify the id_token",
    );
  }
  const clientId = known.clientId ?? required('client_id');
  if (known.clientSecret === undefined) required('client_secret');
  if (
    known.endpoints.discovery === undefined &&
    (known.endpoints.authorization === undefined || known.endpoints.token === undefined)
  ) {
    throw new ConfigError(
      known.endpoints.authorization === undefined ? 'authorization_endpoint' : 'token_endpoint',
      'is required when bearer_only is false and there is no discovery',
    );
  }
  const [redirectUri, callbackPath] = redirectTarget(config.redirect_uri ?? required('redirect_uri'));
  if (session === undefined) required('session.secret');
  if (!pathCovers(session.cookie.path, callbackPath)) {
    throw new ConfigError(
      config.session_cookie_path !== undefined ? 'session_cookie_path' : 'session.cookie.path',
      `'${session.cookie.path}' does not cover the redirect_uri path '${callbackPath}': login would loop`,
    );
  }
  if (config.logout_path !== undefined && !config.logout_path.startsWith('/')) {
    throw new ConfigError('logout_path', 'must be a path starting with /');
  }
  const refreshWanted = refreshSetting(config);
  const kvstore = session?.storage === 'kvstore';
  if (!kvstore && (config.session?.refresh === true || config.session_refresh === true)) {
    env.warn('session.refresh', 'has no effect with cookie storage: refresh tokens are kept only in kvstore');
  }
  const provider = known.endpoints.discovery ?? known.endpoints.authorization;
  return {
    clientId,
    relyingParty: `${clientId} ${String(provider)}`,
    scope: config.scope,
    redirectUri,
    callbackPath,
    logoutPath: config.logout_path,
    postLogoutRedirect: config.post_logout_redirect_uri,
    refresh: refreshWanted && kvstore,
    keepAccessToken: config.set_access_token_header,
    claimRules: known.claimRules,
  };
}

/** `redirect_uri`: absolute, or a path on whatever host the request came to. */
function redirectTarget(raw: string): [string | undefined, string] {
  const text = raw.trim();
  if (text.startsWith('/')) {
    if (text.startsWith('//') || /[?#\s]/.test(text)) {
      throw new ConfigError('redirect_uri', 'a relative redirect_uri must be a plain path');
    }
    return [undefined, text];
  }
  const url = providerUrl(text, 'redirect_uri') as URL;
  return [url.toString(), url.pathname];
}

function bearerToken(ctx: Context): string | undefined {
  const header = requestHeader(ctx, 'authorization');
  if (header === undefined || header.length < 7 || header.slice(0, 7).toLowerCase() !== 'bearer ') {
    return undefined;
  }
  const token = header.slice(7).trim();
  return token === '' ? undefined : token;
}

const looksLikeJwt = (token: string): boolean => token.split('.').length === 3;
