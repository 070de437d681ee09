import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';
import type { Registry } from 'prom-client';

/** What `gateway_cache_events_total` counts (docs/metrics.md); `invalid_entry` is a stored value that does not parse. */
export type CacheEvent =
  'hit' | 'miss' | 'backend_error' | 'eviction' | 'size_skip' | 'invalid_entry' | 'purge';

/** What nodes may record in the gateway's metrics registry (`GatewayMetrics`, src/observability/metrics.ts). */
export interface ScopeMetrics {
  /** Where a node registers a series of its own (the prometheus node). */
  readonly registry: Registry;
  cacheEvent(backend: string, store: string, event: CacheEvent): void;
}

const requireModule = createRequire(import.meta.url);

/**
 * Records nothing: for a compile outside a gateway (`switchyard validate`), whose metrics nobody
 * reads. Its registry is made (and prom-client loaded) only if a node asks for it.
 */
export const unreadMetrics = (): ScopeMetrics => {
  let registry: Registry | undefined;
  return {
    get registry(): Registry {
      registry ??= new (requireModule('prom-client') as typeof PromClient).Registry();
      return registry;
    },
    cacheEvent: () => undefined,
  };
};

/** Lives as long as the gateway, not one runtime: system settings and state that survives reloads. */
export interface GatewayScope<M extends ScopeMetrics = ScopeMetrics> {
  /** system.yaml `cache.max_entries`: the bound of the in-process response cache. */
  readonly cacheMaxEntries: number;
  /** The gateway's own metrics registry. */
  readonly metrics: M;
  /** The value kept under `key` for the gateway's lifetime; `create` runs on first use only. */
  shared<T>(key: string, create: () => T): T;
}

/** docs/security.md#limits-and-their-defaults: the local response cache holds at most this many entries unless system.yaml says otherwise. */
export const DEFAULT_CACHE_MAX_ENTRIES = 10000;

export interface GatewayScopeOptions<M extends ScopeMetrics = ScopeMetrics> {
  /** system.yaml `cache.max_entries`. */
  cacheMaxEntries?: number;
  /** The gateway's registry (src/observability/gateway-scope.ts gives it one). */
  metrics: M;
  /**
   * Replaces a shared value on first use: with `workers` each worker swaps its
   * local counters and cache for gateway-wide ones (src/cluster/, docs/workers.md).
   */
  wrapShared?: (key: string, local: unknown) => unknown;
}

/**
 * The scope one gateway hands every node it compiles. It outlives runtime
 * swaps, so local limit counters and the local response cache survive a
 * reload, and two gateways in one process never share them.
 *
 * @example
 * const counters = env.scope.shared('limit-count', () => new FixedWindowCounters());
 */
export function createScope<M extends ScopeMetrics>(options: GatewayScopeOptions<M>): GatewayScope<M> {
  const values = new Map<string, unknown>();
  const wrap = options.wrapShared;
  return {
    cacheMaxEntries: options.cacheMaxEntries ?? DEFAULT_CACHE_MAX_ENTRIES,
    metrics: options.metrics,
    shared<T>(key: string, create: () => T): T {
      if (values.has(key)) return values.get(key) as T;
      const value = wrap === undefined ? create() : (wrap(key, create()) as T);
      values.set(key, value);
      return value;
    },
  };
}
