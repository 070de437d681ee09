import type { StoreConfig } from '../config/gateway.js';
import type { ConfigIssue } from '../config/schema-validate.js';
import { StoreConnection } from './connection.js';
import type { Store, StoreLookup } from '../core/store.js';
import { RedisStore } from './redis-store.js';
import { resolveStoreConfig } from './resolve.js';

/** The stores of one compiled configuration; `release()` once when that configuration is retired. */
export interface StoreSet extends StoreLookup {
  readonly names: readonly string[];
  release(): void;
}

interface Entry {
  readonly connection: StoreConnection;
  refs: number;
}

/**
 * Process-wide connections keyed by the resolved connection spec. A reload
 * compiles the new configuration before the old one is released, so a store
 * whose resolved config did not change keeps its connection; one no longer
 * referenced by any configuration is closed.
 */
const connections = new Map<string, Entry>();

/**
 * Resolves every `stores:` entry (placeholders, URL, timeouts, CA file) and
 * takes a reference on its connection. Invalid entries add issues located at
 * `stores[i]…` and are left out. Nothing connects until the first operation.
 */
export function openStores(
  configs: readonly StoreConfig[],
  options: { env: NodeJS.ProcessEnv; configDir?: string | undefined },
  issues: ConfigIssue[],
): StoreSet {
  const stores = new Map<string, Store>();
  const held: string[] = [];
  configs.forEach((config, index) => {
    if (stores.has(config.name)) return;
    const resolved = resolveStoreConfig(config, `stores[${index}]`, options.env, options.configDir, issues);
    if (resolved === undefined) return;
    const key = resolved.connection.fingerprint;
    let entry = connections.get(key);
    if (entry === undefined) {
      entry = { connection: new StoreConnection(resolved.connection), refs: 0 };
      connections.set(key, entry);
    }
    entry.refs++;
    held.push(key);
    stores.set(config.name, new RedisStore(resolved.name, resolved.keyPrefix, entry.connection));
  });
  let released = false;
  return {
    names: [...stores.keys()],
    get: (name) => stores.get(name),
    release() {
      if (released) return;
      released = true;
      for (const key of held) {
        const entry = connections.get(key);
        if (entry === undefined) continue;
        entry.refs--;
        if (entry.refs > 0) continue;
        connections.delete(key);
        entry.connection.close();
      }
    },
  };
}

/** Number of open store connections (diagnostics and tests). */
export function openConnectionCount(): number {
  return connections.size;
}

/** Closes every store connection; for shutdown paths that bypass runtimes, and test teardown. */
export function closeAllStores(): Promise<void> {
  const all = [...connections.values()];
  connections.clear();
  for (const entry of all) entry.connection.close();
  return Promise.resolve();
}
