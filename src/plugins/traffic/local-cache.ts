import { LRUCache } from 'lru-cache';
import type { ScopeMetrics } from '../../core/gateway-scope.js';
import { namespacePrefix, type CachedResponse, type ResponseCache } from './response-cache.js';

/**
 * The in-process backend: one LRU per gateway, shared by every `policy: local`
 * node and bounded by system.yaml `cache.max_entries`. Entries expire by their
 * own TTL; at capacity the least recently used one is evicted and counted.
 */
export class LocalResponseCache implements ResponseCache {
  readonly backend = 'local' as const;
  readonly store = '';
  readonly #entries: LRUCache<string, CachedResponse>;

  constructor(maxEntries: number, metrics: ScopeMetrics) {
    this.#entries = new LRUCache<string, CachedResponse>({
      max: maxEntries,
      ttlAutopurge: false,
      dispose: (_value, _key, reason) => {
        if (reason === 'evict') metrics.cacheEvent('local', '', 'eviction');
      },
    });
  }

  get(key: string): CachedResponse | undefined {
    return this.#entries.get(key);
  }

  put(key: string, entry: CachedResponse, ttlSeconds: number): void {
    this.#entries.set(key, entry, { ttl: ttlSeconds * 1000 });
  }

  purge(id: string): Promise<number> {
    return Promise.resolve(this.purgeNow(id));
  }

  purgeNow(id: string): number {
    const prefix = namespacePrefix(id);
    const doomed: string[] = [];
    for (const key of this.#entries.keys()) if (key.startsWith(prefix)) doomed.push(key);
    for (const key of doomed) this.#entries.delete(key);
    return doomed.length;
  }

  get size(): number {
    return this.#entries.size;
  }
}
