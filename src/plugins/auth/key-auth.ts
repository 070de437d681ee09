import { ConfigError, definePlugin, type ConsumerRecord } from '../../core/plugin.js';
import {
  anonymousConsumer,
  attachConsumer,
  AUTH_OUTPUTS,
  deleteQueryParam,
  requestHeader,
  unauthorized,
} from './shared.js';
import { configReadsRequestBody } from '../request-body-refs.js';

/**
 * Authenticates by an API key read from a header (then, optionally, a query
 * parameter), matched against inline `keys` and consumers' `key-auth: {key}`.
 * Stays synchronous: one Map lookup per request.
 *
 * @example
 * ```yaml
 * - id: auth
 *   type: key-auth
 *   config: { header_name: x-api-key, use_consumers: true }
 * ```
 */
export const keyAuth = definePlugin({
  type: 'key-auth',
  readsRequestBody: configReadsRequestBody,
  category: 'auth',
  description:
    'Authenticate requests by an API key from a header or query parameter (inline keys or consumers).',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      keys: { type: 'array', items: { type: 'string', minLength: 1 } },
      header_name: { type: 'string', minLength: 1, default: 'x-api-key' },
      query_param: { type: 'string', minLength: 1 },
      use_consumers: { type: 'boolean', default: false },
      anonymous_consumer: { type: 'string', minLength: 1 },
      hide_credentials: { type: 'boolean', default: false },
    },
  },
  outputs: AUTH_OUTPUTS,
  create(config, env) {
    const keys = config.keys ?? [];
    if (keys.length === 0 && !config.use_consumers) {
      throw new ConfigError('', "key-auth plugin requires 'keys' or 'use_consumers: true'");
    }
    // null marks an inline key: it authenticates without naming a consumer. Inline keys win.
    const table = new Map<string, ConsumerRecord | null>(
      config.use_consumers ? env.consumers.credentialMap('key-auth', 'key') : [],
    );
    for (const key of keys) table.set(key, null);
    const header = config.header_name.toLowerCase();
    const queryParam = config.query_param;
    const hide = config.hide_credentials;
    const anonymous = anonymousConsumer(config.anonymous_consumer, env.consumers);

    return {
      run(ctx) {
        let key = requestHeader(ctx, header);
        if (key === undefined && queryParam !== undefined) key = ctx.request.query.get(queryParam)?.[0];
        const match = key === undefined ? undefined : table.get(key);
        if (match !== undefined) {
          if (hide) {
            delete ctx.request.headers[header];
            if (queryParam !== undefined) deleteQueryParam(ctx, queryParam);
          }
          if (match !== null) attachConsumer(ctx, match, 'key-auth');
          return 'success';
        }
        if (anonymous !== undefined) {
          attachConsumer(ctx, anonymous, 'key-auth');
          return 'success';
        }
        return unauthorized(ctx, 'Invalid or missing API key');
      },
    };
  },
});
