import type { Context } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import { mentionsResponseBody } from '../response-body-refs.js';
import { throttledWarning } from '../throttled-warning.js';
import { definePlugin } from '../../core/plugin.js';
import {
  compileFixedWindow,
  fixedWindowProperties,
  setQuotaHeaders,
  type FixedWindowConfig,
} from './fixed-window.js';
import type { WindowResult } from './window-counter.js';
import { configReadsRequestBody } from '../request-body-refs.js';

interface LimitCountConfig extends FixedWindowConfig {
  group?: string;
}

type LimitCountPort = 'success' | 'limited';

const DEFAULT_MESSAGE = 'Requests over the limit';

/**
 * Fixed-window request count per key (APISIX `limit-count`). With
 * `policy: redis` the window lives in a named store and is counted in one
 * atomic script call, so every gateway sharing the store enforces one limit.
 *
 * @example
 * ```yaml
 * - id: quota
 *   type: limit-count
 *   config: { count: 100, time_window: 60, key: $http_x_api_key, rejected_code: 429 }
 * ```
 */
export const limitCount = definePlugin({
  type: 'limit-count',
  readsRequestBody: configReadsRequestBody,
  category: 'traffic',
  description:
    'Fixed-window request count per key; local to this process or shared through a store (policy: redis | kvstore).',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['count', 'time_window'],
    properties: {
      ...fixedWindowProperties,
      group: {
        type: 'string',
        minLength: 1,
        description:
          'Nodes naming the same group share one counter per key (give them the same count and window).',
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
  readsResponseBody: (config: LimitCountConfig) => mentionsResponseBody(config.key, true),
  create(config: LimitCountConfig, env) {
    const namespace =
      config.group === undefined
        ? `limit-count:${env.policy}/${env.nodeId}`
        : `limit-count:group:${config.group}`;
    const window = compileFixedWindow(config, env, namespace);
    const showHeaders = config.show_limit_quota_header;
    const rejection = { error_msg: config.rejected_msg ?? DEFAULT_MESSAGE };
    const warn = throttledWarning(env);

    const finish = (ctx: Context, result: WindowResult): LimitCountPort => {
      if (showHeaders) setQuotaHeaders(ctx.response.headers, window.limit, result);
      if (result.allowed) return 'success';
      ctx.response.json(config.rejected_code, rejection);
      return 'limited';
    };
    const degrade = (err: unknown): LimitCountPort => {
      if (config.allow_degradation) {
        warn(err, 'limit-count: the counter store failed; letting requests through (allow_degradation)');
        return 'success';
      }
      throw new NodeError('RATE_LIMIT_UNAVAILABLE', 'failed to limit count: the counter store failed', {
        metadata: { store: config.store ?? '' },
        cause: err,
      });
    };

    return {
      run(ctx) {
        let result: WindowResult | Promise<WindowResult>;
        try {
          result = window.take(ctx);
        } catch (err) {
          return degrade(err);
        }
        if (result instanceof Promise) return result.then((r) => finish(ctx, r), degrade);
        return finish(ctx, result);
      },
    };
  },
});
