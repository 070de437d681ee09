import { decodeJwt, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin, type ConsumerRecord } from '../../core/plugin.js';
import { JWT_ALGORITHMS, verificationKey, type VerificationKey } from '../../signing/jwt-key.js';
import {
  anonymousConsumer,
  attachConsumer,
  AUTH_OUTPUTS,
  deleteQueryParam,
  quoteRealm,
  requestHeader,
  unauthorized,
} from './shared.js';
import { configReadsRequestBody } from '../request-body-refs.js';

interface ConsumerKey extends VerificationKey {
  consumer: ConsumerRecord;
}

type Found = { token: string; from: 'header' | 'query' | 'cookie' } | undefined;

/** Why a token failed, in words safe to return to the client. */
function reason(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'Invalid JWT: token has expired';
  if (err instanceof joseErrors.JOSEError) return `Invalid JWT: ${err.message}`;
  return 'Invalid JWT';
}

/**
 * Verifies a JWT (HS*, RS*, PS*, ES*, EdDSA through jose) read from a header,
 * then a query parameter, then a cookie. `exp` is required, `nbf` checked when
 * present. With `use_consumers`, the unverified `key` claim picks the consumer
 * whose `jwt-auth` credential then verifies the signature.
 *
 * @example
 * ```yaml
 * - id: auth
 *   type: jwt-auth
 *   config: { secret: ${JWT_SECRET}, algorithm: HS256 }
 * ```
 */
export const jwtAuth = definePlugin({
  type: 'jwt-auth',
  readsRequestBody: configReadsRequestBody,
  category: 'auth',
  description: 'Verify a JWT (HMAC, RSA, ECDSA or EdDSA) from a header, query parameter or cookie.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      secret: { type: 'string', minLength: 1 },
      public_key: { type: 'string', minLength: 1 },
      algorithm: { type: 'string', enum: [...JWT_ALGORITHMS] },
      use_consumers: { type: 'boolean', default: false },
      header_name: { type: 'string', minLength: 1, default: 'authorization' },
      query_param: { type: 'string', minLength: 1 },
      cookie_name: { type: 'string', minLength: 1 },
      key_claim_name: { type: 'string', minLength: 1, default: 'key' },
      lifetime_grace_period: { type: 'integer', minimum: 0, default: 0 },
      hide_credentials: { type: 'boolean', default: false },
      anonymous_consumer: { type: 'string', minLength: 1 },
      realm: { type: 'string', default: 'jwt' },
    },
  },
  outputs: AUTH_OUTPUTS,
  create(config, env) {
    const hasInline = config.secret !== undefined || config.public_key !== undefined;
    if (!hasInline && !config.use_consumers) {
      throw new ConfigError('', "jwt-auth plugin requires 'secret', 'public_key' or 'use_consumers: true'");
    }
    let inline: VerificationKey | undefined;
    if (hasInline) {
      try {
        inline = verificationKey(config);
      } catch (err) {
        throw new ConfigError(
          config.public_key === undefined ? 'secret' : 'public_key',
          (err as Error).message,
        );
      }
    } else if (config.algorithm !== undefined) {
      throw new ConfigError(
        'algorithm',
        "applies to the inline 'secret' / 'public_key'; consumers carry their own",
      );
    }
    const byKey = new Map<string, ConsumerKey>();
    if (config.use_consumers) {
      for (const [key, consumer] of env.consumers.credentialMap('jwt-auth', 'key')) {
        try {
          byKey.set(key, { ...verificationKey(consumer.credentials['jwt-auth'] ?? {}), consumer });
        } catch (err) {
          throw new ConfigError(
            'use_consumers',
            `consumer '${consumer.name}': jwt-auth ${(err as Error).message}`,
          );
        }
      }
    }
    const anonymous = anonymousConsumer(config.anonymous_consumer, env.consumers);
    const header = config.header_name.toLowerCase();
    const { query_param: queryParam, cookie_name: cookieName, key_claim_name: keyClaim } = config;
    const options = (algorithm: string) => ({
      algorithms: [algorithm],
      requiredClaims: ['exp'],
      clockTolerance: config.lifetime_grace_period,
    });
    const challenge = `Bearer realm=${quoteRealm(config.realm)}`;

    const find = (ctx: Context): Found => {
      const value = requestHeader(ctx, header);
      if (value !== undefined && value !== '') {
        const token =
          value.length > 7 && value.slice(0, 7).toLowerCase() === 'bearer ' ? value.slice(7).trim() : value;
        return { token, from: 'header' };
      }
      const query = queryParam === undefined ? undefined : ctx.request.query.get(queryParam)?.[0];
      if (query !== undefined && query !== '') return { token: query, from: 'query' };
      const cookie = cookieName === undefined ? undefined : ctx.request.cookies.get(cookieName);
      if (cookie !== undefined && cookie !== '') return { token: cookie, from: 'cookie' };
      return undefined;
    };

    const accept = (ctx: Context, found: NonNullable<Found>, claims: JWTPayload): 'success' => {
      ctx.message['jwt_claims'] = claims;
      if (claims.sub !== undefined) ctx.message['user_id'] = claims.sub;
      if (config.hide_credentials) {
        if (found.from === 'header') delete ctx.request.headers[header];
        else if (found.from === 'query' && queryParam !== undefined) deleteQueryParam(ctx, queryParam);
      }
      return 'success';
    };

    const deny = (ctx: Context, message: string): 'success' | 'denied' => {
      if (anonymous === undefined) return unauthorized(ctx, message, challenge);
      attachConsumer(ctx, anonymous, 'jwt-auth');
      return 'success';
    };

    /** Consumer mode: the claim names the consumer, whose own key must then verify the token. */
    const viaConsumer = async (ctx: Context, found: NonNullable<Found>): Promise<'success' | 'denied'> => {
      let claim: unknown;
      try {
        claim = decodeJwt(found.token)[keyClaim];
      } catch (err) {
        return deny(ctx, reason(err));
      }
      if (typeof claim !== 'string') return deny(ctx, `JWT missing '${keyClaim}' claim`);
      const entry = byKey.get(claim);
      if (entry === undefined) return deny(ctx, 'Unknown JWT key');
      try {
        const { payload } = await jwtVerify(found.token, entry.key, options(entry.algorithm));
        attachConsumer(ctx, entry.consumer, 'jwt-auth');
        return accept(ctx, found, payload);
      } catch (err) {
        return deny(ctx, reason(err));
      }
    };

    return {
      async run(ctx) {
        const found = find(ctx);
        if (found === undefined) return deny(ctx, 'Missing authorization token');
        if (inline !== undefined) {
          try {
            const { payload } = await jwtVerify(found.token, inline.key, options(inline.algorithm));
            return accept(ctx, found, payload);
          } catch (err) {
            if (!config.use_consumers) return deny(ctx, reason(err));
          }
        }
        return viaConsumer(ctx, found);
      },
    };
  },
});
