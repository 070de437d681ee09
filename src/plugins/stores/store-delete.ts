import { definePlugin } from '../../core/plugin.js';
import {
  compileField,
  keyProperty,
  lookupStore,
  readsBody,
  renderKey,
  storeFailure,
  storeProperty,
} from './shared.js';

/** Removes a key; an absent key is a success (no `miss` port to wire for a no-op). */
export const storeDelete = definePlugin({
  type: 'store-delete',
  category: 'stores',
  description: 'Delete a key from a named store; deleting an absent key succeeds.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['store', 'key'],
    properties: { store: storeProperty, key: keyProperty },
  },
  outputs: { success: { kind: 'success', description: 'The key is gone (or was never there).' } },
  templated: ['key'],
  readsResponseBody: (c) => readsBody(c.key),
  create(config, env) {
    const store = lookupStore(env, config.store);
    const key = compileField(env, config.key, 'key');
    return {
      async run(ctx) {
        const k = renderKey(key, ctx, store);
        try {
          await store.delete(k);
        } catch (err) {
          throw storeFailure(err, store, 'delete', k);
        }
        return 'success';
      },
    };
  },
});
