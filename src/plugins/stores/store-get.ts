import { NodeError } from '../../core/errors.js';
import { definePlugin } from '../../core/plugin.js';
import {
  compileField,
  keyProperty,
  lookupStore,
  messageNameProperty,
  readsBody,
  renderKey,
  storeFailure,
  storeProperty,
} from './shared.js';

/**
 * Reads a key into `ctx.message[name]`. A missing key leaves through `miss`;
 * a store outage through `error`, so an outage never looks like "nothing recorded".
 */
export const storeGet = definePlugin({
  type: 'store-get',
  category: 'stores',
  description: 'Read a key from a named store into context.message; an absent key leaves through miss.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['store', 'key', 'name'],
    properties: {
      store: storeProperty,
      key: keyProperty,
      name: messageNameProperty,
      json: {
        type: 'boolean',
        default: false,
        description: 'Parse the value as JSON; an object is flattened to <name>.<field> keys.',
      },
    },
  },
  outputs: {
    success: { kind: 'success', description: 'The key existed; its value is in context.message.' },
    miss: { kind: 'outcome', description: 'The key does not exist; nothing was written.' },
  },
  templated: ['key'],
  readsResponseBody: (c) => readsBody(c.key),
  create(config, env) {
    const store = lookupStore(env, config.store);
    const key = compileField(env, config.key, 'key');
    const { name, json } = config;
    return {
      async run(ctx) {
        const k = renderKey(key, ctx, store);
        let value: string | null;
        try {
          value = await store.get(k);
        } catch (err) {
          throw storeFailure(err, store, 'get', k);
        }
        if (value === null) return 'miss';
        if (!json) ctx.message[name] = value;
        else writeJson(ctx.message, name, value, store.name);
        return 'success';
      },
    };
  },
});

/** One level only: `message` is flat, so nested values stay JSON text under their dotted key. */
function writeJson(message: Record<string, unknown>, name: string, text: string, store: string): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new NodeError('STORE_VALUE_INVALID', `value is not valid JSON: ${(err as Error).message}`, {
      metadata: { store },
    });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    message[name] = parsed;
    return;
  }
  for (const [field, value] of Object.entries(parsed as Record<string, unknown>)) {
    message[`${name}.${field}`] = value !== null && typeof value === 'object' ? JSON.stringify(value) : value;
  }
}
