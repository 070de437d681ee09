import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { TokenBuckets, type BucketAnswer } from './token-buckets.js';

interface RateLimitConfig {
  requests_per_second?: number;
  rate?: number;
  burst?: number;
  key_from: string;
  nodelay: boolean;
}

type RateLimitPort = 'success' | 'limited';

const REJECTION = JSON.stringify({ error: 'rate_limited', message: 'Too many requests' });

/**
 * Token bucket per client (local only). `burst` requests may pass at once,
 * then `requests_per_second` refill. With `nodelay: false` requests are spaced
 * at the rate instead: one passes at once and up to `burst` more wait their
 * turn (APISIX `limit-req`).
 *
 * @example
 * ```yaml
 * - id: throttle
 *   type: rate-limit
 *   config: { requests_per_second: 10, burst: 20, key_from: "header:x-api-key" }
 * ```
 */
export const rateLimit = definePlugin({
  type: 'rate-limit',
  category: 'traffic',
  description:
    'Token-bucket rate limit per client IP or header (local to this process); 429 when the bucket is empty.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      requests_per_second: {
        type: 'number',
        exclusiveMinimum: 0,
        description: 'Refill rate in tokens per second (default 100).',
      },
      rate: {
        type: 'number',
        exclusiveMinimum: 0,
        description: 'Alias of requests_per_second (APISIX limit-req).',
      },
      burst: {
        type: 'integer',
        minimum: 1,
        description: 'Bucket size: requests that may pass at once (default: the rate, rounded up).',
      },
      key_from: {
        type: 'string',
        default: 'remote_addr',
        description:
          "'remote_addr' (client IP) or 'header:<name>' (falls back to the client IP when absent).",
      },
      nodelay: {
        type: 'boolean',
        default: true,
        description: 'false: space requests at the rate, delaying up to burst of them instead of rejecting.',
      },
    },
  },
  outputs: {
    success: { kind: 'success' },
    limited: {
      kind: 'outcome',
      description: 'The request exceeded a traffic limit; a 429 response is prepared. Wire to client.',
    },
  },
  templated: [],
  create(config: RateLimitConfig, env) {
    const { requests_per_second: rps, rate: alias } = config;
    if (rps !== undefined && alias !== undefined && rps !== alias) {
      throw new ConfigError('rate', `contradicts requests_per_second (${rps})`);
    }
    const rate = rps ?? alias ?? 100;
    const burst = config.burst ?? Math.max(1, Math.ceil(rate));
    const keyOf = compileKeySource(config.key_from);
    const [capacity, queue] = config.nodelay ? [burst, 0] : [1, burst];
    // A `workers` worker answers from the primary's buckets, asynchronously (docs/workers.md).
    const buckets = env.scope.shared<{ take(key: string): BucketAnswer | Promise<BucketAnswer> }>(
      `limits.rate-limit:${env.policy}/${env.nodeId}:${rate}:${capacity}:${queue}`,
      () => new TokenBuckets(rate, capacity, queue),
    );
    const limited = (ctx: Context): RateLimitPort => {
      ctx.response.status = 429;
      ctx.response.setBody(REJECTION, 'application/json');
      ctx.response.headers['retry-after'] = '1';
      return 'limited';
    };

    const settle = (ctx: Context, answer: BucketAnswer): RateLimitPort | Promise<RateLimitPort> => {
      if (answer.kind === 'now') return 'success';
      if (answer.kind === 'limited') return limited(ctx);
      // The client may leave while waiting; the engine notices through the same signal.
      return sleep(answer.waitMs, undefined, { signal: ctx.signal }).then(
        () => 'success' as const,
        () => 'success' as const,
      );
    };

    return {
      run(ctx) {
        const answer = buckets.take(keyOf(ctx));
        return answer instanceof Promise ? answer.then((a) => settle(ctx, a)) : settle(ctx, answer);
      },
    };
  },
});

function compileKeySource(keyFrom: string): (ctx: Context) => string {
  if (keyFrom === 'remote_addr' || keyFrom === '') return (ctx) => ctx.request.remoteAddress;
  if (!keyFrom.startsWith('header:') || keyFrom.length === 'header:'.length) {
    throw new ConfigError('key_from', "must be 'remote_addr' or 'header:<name>'");
  }
  const name = keyFrom.slice('header:'.length).trim().toLowerCase();
  return (ctx) => {
    const value = ctx.request.header(name);
    return value === undefined || value === '' ? ctx.request.remoteAddress : `h:${value}`;
  };
}
