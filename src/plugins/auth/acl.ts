import { ConfigError, definePlugin } from '../../core/plugin.js';
import { rejected, RESTRICTION_OUTPUTS } from './shared.js';
import { configReadsRequestBody } from '../request-body-refs.js';

/**
 * Admits or blocks authenticated consumers by their group; deny wins. Runs
 * after an auth node: without a consumer the request is a 401.
 *
 * @example
 * ```yaml
 * - id: acl
 *   type: acl
 *   config: { allowed_by: [gold, internal], denied_by: [banned] }
 * ```
 */
export const acl = definePlugin({
  type: 'acl',
  readsRequestBody: configReadsRequestBody,
  category: 'auth',
  description: 'Allow or deny authenticated consumers by consumer group.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      allowed_by: { type: 'array', items: { type: 'string', minLength: 1 } },
      denied_by: { type: 'array', items: { type: 'string', minLength: 1 } },
      rejected_code: { type: 'integer', minimum: 400, maximum: 599, default: 403 },
      rejected_msg: { type: 'string', minLength: 1 },
    },
  },
  outputs: RESTRICTION_OUTPUTS,
  create(config) {
    const allowed = new Set(config.allowed_by ?? []);
    const denied = new Set(config.denied_by ?? []);
    if (allowed.size === 0 && denied.size === 0) {
      throw new ConfigError('', "acl: at least one of 'allowed_by' or 'denied_by' is required");
    }
    const status = config.rejected_code;
    const message = config.rejected_msg ?? 'The consumer is forbidden.';
    return {
      run(ctx) {
        if (typeof ctx.message['consumer.name'] !== 'string')
          return rejected(ctx, 401, 'Missing authentication.');
        const group = ctx.message['consumer.group'];
        const known = typeof group === 'string';
        if (known && denied.has(group)) return rejected(ctx, status, message);
        if (allowed.size > 0 && !(known && allowed.has(group))) return rejected(ctx, status, message);
        return 'success';
      },
    };
  },
});
