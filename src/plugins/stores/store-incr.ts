import { definePlugin } from '../../core/plugin.js';
import {
  checkTtl,
  compileField,
  keyProperty,
  lookupStore,
  messageNameProperty,
  readsBody,
  renderKey,
  storeFailure,
  storeProperty,
  ttlProperty,
} from './shared.js';

/**
 * Atomically adds to a counter. The expiry is set when the key is created and
 * never refreshed, so a counter bounding retries resets a fixed time after it
 * first appeared however often it is hit.
 */
export const storeIncr = definePlugin({
  type: 'store-incr',
  category: 'stores',
  description: 'Atomically add to a counter in a named store; the TTL is pinned when the key is created.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['store', 'key', 'name'],
    properties: {
      store: storeProperty,
      key: keyProperty,
      by: { type: 'integer', default: 1, description: 'Amount to add; may be negative.' },
      ttl_seconds: { ...ttlProperty, description: 'Expiry set only when the key is created; 0 is rejected.' },
      name: messageNameProperty,
    },
  },
  outputs: { success: { kind: 'success', description: 'The new value is in context.message.' } },
  templated: ['key'],
  readsResponseBody: (c) => readsBody(c.key),
  create(config, env) {
    const store = lookupStore(env, config.store);
    checkTtl(config.ttl_seconds);
    const key = compileField(env, config.key, 'key');
    const { by, name } = config;
    const ttl = config.ttl_seconds;
    return {
      async run(ctx) {
        const k = renderKey(key, ctx, store);
        try {
          ctx.message[name] = await store.incr(k, by, ttl);
        } catch (err) {
          throw storeFailure(err, store, 'incr', k);
        }
        return 'success';
      },
    };
  },
});
