import type { Store } from '../../stores/index.js';
import {
  decodeEntry,
  encodeEntry,
  namespacePrefix,
  type CachedResponse,
  type ResponseCache,
} from './response-cache.js';

/** Keys removed per UNLINK round trip while purging; also the SCAN count hint. */
const PURGE_BATCH = 500;

/** UNLINK frees memory off the server's main thread, where DEL would block on large values. */
const UNLINK_SCRIPT = `
local n = 0
for _, key in ipairs(KEYS) do n = n + redis.call('UNLINK', key) end
return n
`;

/**
 * Entries in a named store under `cache:<id>\u0001<digest>`: one string per
 * entry with the store's own TTL, so no instance compares its clock with
 * another's. Every gateway naming the store shares the entries.
 */
export class StoreResponseCache implements ResponseCache {
  readonly backend = 'redis' as const;

  constructor(readonly storeHandle: Store) {}

  get store(): string {
    return this.storeHandle.name;
  }

  async get(key: string): Promise<CachedResponse | undefined | 'invalid'> {
    const text = await this.storeHandle.get(`cache:${key}`);
    return text === null ? undefined : decodeEntry(text);
  }

  async put(key: string, entry: CachedResponse, ttlSeconds: number): Promise<void> {
    await this.storeHandle.set(`cache:${key}`, encodeEntry(entry), ttlSeconds);
  }

  /** SCAN + UNLINK in batches: neither blocks the server; an entry written mid-purge may survive to its TTL. */
  async purge(id: string): Promise<number> {
    const prefix = `cache:${namespacePrefix(id)}`;
    let cursor = '0';
    let removed = 0;
    do {
      const page = await this.storeHandle.scan(prefix, cursor, PURGE_BATCH);
      cursor = page.cursor;
      if (page.keys.length > 0) removed += Number(await this.storeHandle.eval(UNLINK_SCRIPT, page.keys, []));
    } while (cursor !== '0');
    return removed;
  }
}
