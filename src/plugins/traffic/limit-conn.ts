import { ConfigError, definePlugin } from '../../core/plugin.js';
import { mentionsResponseBody } from '../response-body-refs.js';
import type { Context } from '../../core/context.js';
import { ConcurrencyTable, type SlotTable } from './concurrency.js';
import { compileLimitKey, keyTypeSchema, type KeyType } from './limit-key.js';
import { configReadsRequestBody } from '../request-body-refs.js';

type Phase = 'acquire' | 'release';

interface LimitConnConfig {
  phase?: Phase;
  role?: Phase;
  conn: number;
  burst: number;
  key?: string;
  key_type: KeyType;
  rejected_code: number;
  rejected_msg?: string;
  default_conn_delay?: number;
}

/**
 * Concurrency limit as an acquire/release node pair (APISIX `limit-conn`,
 * local only). `acquire` before the upstream takes a slot for the request's
 * key and rejects above `conn + burst`; `release` after it (on the success and
 * the error path) frees it. A pair is the acquire and release nodes of one
 * policy with the same `key` and `key_type`.
 *
 * @example
 * ```yaml
 * - { id: take, type: limit-conn, config: { phase: acquire, conn: 10, key: $http_x_api_key } }
 * - { id: give, type: limit-conn, config: { phase: release, key: $http_x_api_key } }
 * ```
 */
export const limitConn = definePlugin({
  type: 'limit-conn',
  readsRequestBody: configReadsRequestBody,
  category: 'traffic',
  description:
    'Concurrent-request limit per key as an acquire/release node pair around the upstream (local to this process).',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      phase: {
        type: 'string',
        enum: ['acquire', 'release'],
        description: 'acquire (before the upstream) or release (after it, on success and error paths).',
      },
      role: { type: 'string', enum: ['acquire', 'release'], description: 'Alias of phase.' },
      conn: { type: 'integer', minimum: 1, default: 20, description: 'Sustained concurrency per key.' },
      burst: {
        type: 'integer',
        minimum: 0,
        default: 0,
        description: 'Extra concurrent requests allowed; the ceiling is conn + burst.',
      },
      key: {
        type: 'string',
        description:
          'Counter key: legacy $var and {{…}} template (default $remote_addr); same on both halves.',
      },
      key_type: keyTypeSchema,
      rejected_code: {
        type: 'integer',
        minimum: 200,
        maximum: 599,
        default: 503,
        description: 'Status of a rejected request.',
      },
      rejected_msg: {
        type: 'string',
        minLength: 1,
        description: 'Rejection body: {"error_msg": rejected_msg}.',
      },
      default_conn_delay: {
        type: 'number',
        minimum: 0,
        description: 'Accepted for APISIX configs and ignored: requests above conn are never delayed.',
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
  templated: ['key'],
  readsResponseBody: (config: LimitConnConfig) =>
    config.key_type !== 'constant' && mentionsResponseBody(config.key, true),
  create(config: LimitConnConfig, env) {
    if (config.phase !== undefined && config.role !== undefined && config.phase !== config.role) {
      throw new ConfigError('role', `contradicts phase '${config.phase}'`);
    }
    const phase = config.phase ?? config.role;
    if (phase === undefined) throw new ConfigError('phase', "is required: 'acquire' or 'release'");
    // A `workers` worker takes slots from the primary's table, asynchronously (docs/workers.md).
    const table = env.scope.shared<SlotTable>('limits.concurrency', () => new ConcurrencyTable());
    // The pair's identity: both halves of one policy naming the same key.
    const pair = `${env.policy}\u0000${config.key_type}\u0000${config.key ?? '$remote_addr'}\u0000`;

    if (phase === 'release') {
      return {
        run(ctx) {
          table.release(ctx, pair);
          return 'success';
        },
      };
    }

    const keyOf = compileLimitKey(env, config.key, config.key_type, 'key');
    const ceiling = config.conn + config.burst;
    const rejection = config.rejected_msg === undefined ? undefined : { error_msg: config.rejected_msg };
    const settle = (ctx: Context, taken: boolean): 'success' | 'limited' => {
      if (taken) return 'success';
      if (rejection === undefined) {
        ctx.response.status = config.rejected_code;
        ctx.response.setBody('');
      } else ctx.response.json(config.rejected_code, rejection);
      return 'limited';
    };
    return {
      run(ctx) {
        const taken = table.acquire(ctx, pair + keyOf(ctx), ceiling);
        return typeof taken === 'boolean' ? settle(ctx, taken) : taken.then((t) => settle(ctx, t));
      },
    };
  },
});
