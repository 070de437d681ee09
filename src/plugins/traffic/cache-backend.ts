import { ConfigError, type PluginEnv } from '../../core/plugin.js';
import { LocalResponseCache } from './local-cache.js';
import type { ResponseCache } from './response-cache.js';
import { StoreResponseCache } from './store-cache.js';

/**
 * The backend of a cache node pair (proxy-cache, ai-cache): the gateway's one in-process LRU
 * (one bound, cache.max_entries, and one purge per id) or a named store.
 */
export function resolveCacheBackend(
  config: { policy: string; store?: string },
  env: PluginEnv,
): ResponseCache {
  if (config.policy === 'local') {
    if (config.store !== undefined) env.warn('store', "ignored: policy is 'local'");
    return env.scope.shared(
      'proxy-cache.local',
      () => new LocalResponseCache(env.scope.cacheMaxEntries, env.scope.metrics),
    );
  }
  if (config.store === undefined)
    throw new ConfigError('store', `is required when policy is '${config.policy}'`);
  const store = env.stores.get(config.store);
  if (store === undefined) throw new ConfigError('store', `unknown store '${config.store}'`);
  return new StoreResponseCache(store);
}
