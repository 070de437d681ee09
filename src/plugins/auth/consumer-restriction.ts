import { ConfigError, definePlugin } from '../../core/plugin.js';
import { rejected, RESTRICTION_OUTPUTS } from './shared.js';
import { configReadsRequestBody } from '../request-body-refs.js';

/**
 * Allows or denies by consumer name or group, and confines named consumers to
 * listed methods. Runs after an auth node: without the value the request is a 401.
 *
 * @example
 * ```yaml
 * - id: restrict
 *   type: consumer-restriction
 *   config: { whitelist: [alice, bob], allowed_by_methods: [{ user: bob, methods: [GET] }] }
 * ```
 */
export const consumerRestriction = definePlugin({
  type: 'consumer-restriction',
  readsRequestBody: configReadsRequestBody,
  category: 'auth',
  description: 'Allow or deny by consumer name or group, optionally per consumer and HTTP method.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      type: {
        type: 'string',
        enum: ['consumer_name', 'consumer_group_id', 'service_id', 'route_id'],
        default: 'consumer_name',
      },
      whitelist: { type: 'array', items: { type: 'string', minLength: 1 } },
      blacklist: { type: 'array', items: { type: 'string', minLength: 1 } },
      allowed_by_methods: {
        type: 'array',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['user', 'methods'],
          properties: {
            user: { type: 'string', minLength: 1 },
            methods: { type: 'array', items: { type: 'string', minLength: 1 } },
          },
        },
      },
      rejected_code: { type: 'integer', minimum: 400, maximum: 599, default: 403 },
      rejected_msg: { type: 'string', minLength: 1 },
    },
  },
  outputs: RESTRICTION_OUTPUTS,
  create(config) {
    if (config.type === 'service_id' || config.type === 'route_id') {
      throw new ConfigError(
        'type',
        `'${config.type}' is not supported; use 'consumer_name' or 'consumer_group_id'`,
      );
    }
    const whitelist = new Set(config.whitelist ?? []);
    const blacklist = new Set(config.blacklist ?? []);
    if (whitelist.size > 0 && blacklist.size > 0) {
      throw new ConfigError('', "consumer-restriction: set only one of 'whitelist' or 'blacklist'");
    }
    const methods = new Map<string, Set<string>>();
    config.allowed_by_methods?.forEach(({ user, methods: list }, index) => {
      if (methods.has(user))
        throw new ConfigError(`allowed_by_methods[${index}].user`, `duplicate user '${user}'`);
      methods.set(user, new Set(list.map((m) => m.toUpperCase())));
    });
    if (whitelist.size === 0 && blacklist.size === 0 && methods.size === 0) {
      throw new ConfigError(
        '',
        "consumer-restriction: at least one of 'whitelist', 'blacklist' or 'allowed_by_methods' is required",
      );
    }
    const key = config.type === 'consumer_name' ? 'consumer.name' : 'consumer.group';
    const status = config.rejected_code;
    const message = config.rejected_msg ?? `The ${config.type} is forbidden.`;
    const missing = `The request is rejected, please check the ${config.type} for this request`;
    return {
      run(ctx) {
        const value = ctx.message[key];
        if (typeof value !== 'string') return rejected(ctx, 401, missing);
        if (blacklist.has(value)) return rejected(ctx, status, message);
        if (whitelist.size > 0) {
          // A whitelisted consumer is cleared for every method, as in the reference.
          return whitelist.has(value) ? 'success' : rejected(ctx, status, message);
        }
        const allowed = methods.get(value);
        if (allowed !== undefined && !allowed.has(ctx.request.method.toUpperCase())) {
          return rejected(ctx, status, message);
        }
        return 'success';
      },
    };
  },
});
