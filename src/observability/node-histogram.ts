import type { Registry } from 'prom-client';
import { NODE_DURATION_BOUNDS_MS } from '../core/graph-types.js';

/** One node's counters as the scrape reads them. */
export interface NodeSample {
  policy: string;
  nodeId: string;
  type: string;
  runs: number;
  ms: number;
  /** Runs per bucket of NODE_DURATION_BOUNDS_MS, the last past the highest bound. */
  /** Null while the node has not run. */
  buckets: Float64Array | null;
}

const NAME = 'gateway_node_duration_seconds';
const BOUNDS_SECONDS = NODE_DURATION_BOUNDS_MS.map((ms) => ms / 1000);

/**
 * `gateway_node_duration_seconds{policy,node_id,type}`: a histogram of node run times, read from the
 * bucket counts the run loop keeps on each compiled node (no label lookups per request). Like the
 * other per-node series it restarts when a configuration is applied. docs/metrics.md.
 */
export function registerNodeDurationHistogram(
  registers: Registry[],
  samples: () => Iterable<NodeSample>,
): void {
  const metric = {
    name: NAME,
    help: 'Node run time since the running configuration was applied, by policy, node id and type.',
    type: 'histogram',
    aggregator: 'sum',
    labelNames: ['policy', 'node_id', 'type'],
    reset(): void {},
    get() {
      const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
      for (const n of samples()) {
        if (n.runs === 0) continue;
        const labels = { policy: n.policy, node_id: n.nodeId, type: n.type };
        let cumulative = 0;
        BOUNDS_SECONDS.forEach((le, i) => {
          cumulative += n.buckets?.[i] ?? 0;
          values.push({ labels: { ...labels, le }, value: cumulative, metricName: `${NAME}_bucket` });
        });
        values.push({ labels: { ...labels, le: '+Inf' }, value: n.runs, metricName: `${NAME}_bucket` });
        values.push({ labels, value: n.ms / 1000, metricName: `${NAME}_sum` });
        values.push({ labels, value: n.runs, metricName: `${NAME}_count` });
      }
      return Promise.resolve({ name: NAME, help: metric.help, type: 'histogram', aggregator: 'sum', values });
    },
  };
  for (const registry of registers) registry.registerMetric(metric as never);
}
