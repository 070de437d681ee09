import type { GatewayScope } from '../../../src/core/plugin.js';
import type { GatewayMetrics } from '../../../src/observability/metrics.js';

/** `gateway_cache_events_total` of a scope's registry as `{"backend/store/event": count}`. */
export async function cacheEvents(scope: GatewayScope<GatewayMetrics>): Promise<Record<string, number>> {
  const metric = await scope.metrics.registry.getSingleMetric('gateway_cache_events_total')?.get();
  const out: Record<string, number> = {};
  for (const { labels, value } of metric?.values ?? []) {
    out[`${String(labels['backend'])}/${String(labels['store'])}/${String(labels['event'])}`] = value;
  }
  return out;
}
