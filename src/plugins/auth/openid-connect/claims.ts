import type { Context } from '../../../core/context.js';
import { TokenRejected } from './provider.js';

/** `claim_validator`, resolved at load time. */
export interface ClaimRules {
  /** Empty: the issuer is not checked. */
  validIssuers: ReadonlySet<string>;
  audienceClaim: string;
  audienceRequired: boolean;
  /** The client id the audience must contain, when `match_with_client_id` is on. */
  audienceMustContain: string | undefined;
}

/** Throws TokenRejected when `claims` break the configured issuer or audience rules. */
export function checkClaims(claims: Record<string, unknown>, rules: ClaimRules): void {
  if (rules.validIssuers.size > 0) {
    const iss = claims['iss'];
    if (typeof iss !== 'string' || !rules.validIssuers.has(iss)) {
      throw new TokenRejected('token issuer is not in valid_issuers');
    }
  }
  const aud = claims[rules.audienceClaim];
  if (aud === undefined) {
    if (rules.audienceRequired) throw new TokenRejected(`token has no '${rules.audienceClaim}' claim`);
    return;
  }
  const wanted = rules.audienceMustContain;
  if (wanted !== undefined && !(aud === wanted || (Array.isArray(aud) && aud.includes(wanted)))) {
    throw new TokenRejected('token audience does not match client_id');
  }
}

/** How a validated identity is handed on (docs/plugins/openid-connect.md success). */
export interface AttachOptions {
  userinfoHeader: boolean;
  accessTokenHeader: boolean;
  inAuthorizationHeader: boolean;
}

/**
 * `message.jwt_claims`, `message.user_id` (= `sub`), the consumer, and for the
 * upstream `X-Userinfo` (base64 JSON claims) and the access token.
 */
export function attachIdentity(
  ctx: Context,
  claims: Record<string, unknown>,
  accessToken: string | undefined,
  options: AttachOptions,
): void {
  const sub = typeof claims['sub'] === 'string' ? claims['sub'] : undefined;
  ctx.message['jwt_claims'] = claims;
  if (sub !== undefined) {
    ctx.message['user_id'] = sub;
    ctx.setConsumer({ name: sub });
  }
  const headers = ctx.request.headers;
  if (options.userinfoHeader) {
    headers['x-userinfo'] = Buffer.from(JSON.stringify(claims)).toString('base64');
  }
  if (options.accessTokenHeader && accessToken !== undefined) {
    if (options.inAuthorizationHeader) headers['authorization'] = `Bearer ${accessToken}`;
    else headers['x-access-token'] = accessToken;
  }
}
