import { definePlugin } from '../../core/plugin.js';
import {
  checkTtl,
  compileField,
  keyProperty,
  lookupStore,
  readsBody,
  renderKey,
  storeFailure,
  storeProperty,
  ttlProperty,
} from './shared.js';

/** Writes a templated value under a templated key, with an optional expiry. */
export const storeSet = definePlugin({
  type: 'store-set',
  category: 'stores',
  description: 'Write a templated value to a key of a named store, optionally with an expiry.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['store', 'key', 'value'],
    properties: {
      store: storeProperty,
      key: keyProperty,
      value: { type: 'string', description: 'Value to write, templated.' },
      ttl_seconds: ttlProperty,
    },
  },
  outputs: { success: { kind: 'success', description: 'The value was written.' } },
  templated: ['key', 'value'],
  readsResponseBody: (c) => readsBody(c.key, c.value),
  create(config, env) {
    const store = lookupStore(env, config.store);
    checkTtl(config.ttl_seconds);
    const key = compileField(env, config.key, 'key');
    const value = compileField(env, config.value, 'value');
    const ttl = config.ttl_seconds;
    return {
      async run(ctx) {
        const k = renderKey(key, ctx, store);
        const v = value.render(ctx);
        try {
          await store.set(k, v, ttl);
        } catch (err) {
          throw storeFailure(err, store, 'set', k);
        }
        return 'success';
      },
    };
  },
});
