import type { Context } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import { StoreError, type Store } from '../../stores/index.js';
import { ConfigError, type PluginEnv, type Template } from '../../core/plugin.js';
import { mentionsResponseBody } from '../response-body-refs.js';

/** Policy keys live under `kv:` so they can never name a session, counter, cache or ACME key. */
export const POLICY_KV = 'kv:';

export const storeProperty = {
  type: 'string',
  minLength: 1,
  description: 'Name of a `stores:` entry (redis or valkey).',
} as const;

export const keyProperty = {
  type: 'string',
  minLength: 1,
  description: 'Key, templated; stored as `<key_prefix>:kv:<key>`.',
} as const;

export const ttlProperty = {
  type: 'integer',
  description: 'Expiry in seconds; omit for none (0 is rejected).',
} as const;

export const messageNameProperty = {
  type: 'string',
  minLength: 1,
  description: 'context.message key that receives the value.',
} as const;

/** The named store, or a ConfigError at `store` that the compiler locates at the node. */
export function lookupStore(env: PluginEnv, name: string): Store {
  const store = env.stores.get(name);
  if (store === undefined) throw new ConfigError('store', `unknown store '${name}'`);
  return store;
}

export function checkTtl(ttl: number | undefined): void {
  if (ttl !== undefined && ttl <= 0) {
    throw new ConfigError('ttl_seconds', 'must be a positive number of seconds; omit it for no expiry');
  }
}

/** Templates render where the node sits: after an upstream they see the real response. */
export function compileField(env: PluginEnv, text: string, key: string): Template {
  return env.template(text, key, { phase: 'response' });
}

export function readsBody(...texts: (string | undefined)[]): boolean {
  return texts.some((t) => mentionsResponseBody(t, false));
}

/** The namespaced key for this request; an empty rendering fails rather than share one key. */
export function renderKey(key: Template, ctx: Context, store: Store): string {
  const rendered = key.render(ctx);
  if (rendered === '') {
    throw new NodeError('STORE_KEY_INVALID', `key '${key.source}' rendered empty`, {
      metadata: { store: store.name },
    });
  }
  return POLICY_KV + rendered;
}

/** Maps a store failure to the node's public codes; anything else propagates unchanged. */
export function storeFailure(err: unknown, store: Store, operation: string, key: string): unknown {
  if (!(err instanceof StoreError)) return err;
  const metadata = { store: store.name, operation, key: key.slice(POLICY_KV.length), reason: err.code };
  if (err.code === 'STORE_VALUE_INVALID') {
    return new NodeError('STORE_VALUE_INVALID', err.message, { metadata, cause: err });
  }
  return new NodeError('STORE_ERROR', err.message, { metadata, cause: err });
}
