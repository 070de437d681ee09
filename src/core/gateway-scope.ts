import { GatewayMetrics } from '../observability/metrics.js';

/** Lives as long as the gateway, not one runtime: system settings and state that survives reloads. */
export interface GatewayScope {
  /** system.yaml `cache.max_entries`: the bound of the in-process response cache. */
  readonly cacheMaxEntries: number;
  /** The gateway's own metrics registry. */
  readonly metrics: GatewayMetrics;
  /** The value kept under `key` for the gateway's lifetime; `create` runs on first use only. */
  shared<T>(key: string, create: () => T): T;
}

/** docs/security.md#limits-and-their-defaults: the local response cache holds at most this many entries unless system.yaml says otherwise. */
export const DEFAULT_CACHE_MAX_ENTRIES = 10000;

export interface GatewayScopeOptions {
  /** system.yaml `cache.max_entries`. */
  cacheMaxEntries?: number;
  /** The gateway's registry; a fresh one when compiling outside a gateway (`switchyard validate`, tests). */
  metrics?: GatewayMetrics;
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
export function createGatewayScope(options: GatewayScopeOptions = {}): GatewayScope {
  const values = new Map<string, unknown>();
  const wrap = options.wrapShared;
  return {
    cacheMaxEntries: options.cacheMaxEntries ?? DEFAULT_CACHE_MAX_ENTRIES,
    metrics: options.metrics ?? new GatewayMetrics(),
    shared<T>(key: string, create: () => T): T {
      if (values.has(key)) return values.get(key) as T;
      const value = wrap === undefined ? create() : (wrap(key, create()) as T);
      values.set(key, value);
      return value;
    },
  };
}
