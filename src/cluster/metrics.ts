import { AggregatorRegistry } from 'prom-client';
import type { WorkerMetrics } from './protocol.js';

/** What one worker reported for a scrape. */
export interface WorkerSample {
  worker: number;
  pid: number;
  metrics: WorkerMetrics;
}

/** Counted by the primary alone: every worker applies the same document the primary applied once. */
const CONTROL_PLANE = /^gateway_config_/;

/**
 * `/metrics` with `workers`: prom-client's AggregatorRegistry sums each metric
 * over the primary and every worker (the primary serves no requests, so its
 * request series are zero; configuration counters come from it alone), then
 * per-worker request counts and the cluster's own gauges are appended.
 */
export async function aggregateMetrics(
  primary: WorkerMetrics,
  workers: readonly WorkerSample[],
  cluster: { configured: number; restarts: number },
): Promise<{ contentType: string; body: string }> {
  const parts = [primary, ...workers.map((w) => w.metrics.filter((m) => !CONTROL_PLANE.test(m.name)))];
  const registry = AggregatorRegistry.aggregate(parts);
  const lines = [
    '# HELP gateway_cluster_workers Worker processes serving the data plane now (system.yaml workers).',
    '# TYPE gateway_cluster_workers gauge',
    `gateway_cluster_workers ${workers.length}`,
    '# HELP gateway_cluster_workers_configured Worker processes the gateway keeps running.',
    '# TYPE gateway_cluster_workers_configured gauge',
    `gateway_cluster_workers_configured ${cluster.configured}`,
    '# HELP gateway_cluster_worker_restarts_total Workers replaced after they exited or could not apply a configuration.',
    '# TYPE gateway_cluster_worker_restarts_total counter',
    `gateway_cluster_worker_restarts_total ${cluster.restarts}`,
    '# HELP gateway_cluster_worker_requests_total Requests answered by each worker process.',
    '# TYPE gateway_cluster_worker_requests_total counter',
    ...workers.map(
      (w) =>
        `gateway_cluster_worker_requests_total{worker="${w.worker}",pid="${w.pid}"} ${requestsOf(w.metrics)}`,
    ),
  ];
  const body = await registry.metrics();
  return {
    contentType: registry.contentType,
    body: `${body}${body.endsWith('\n') ? '' : '\n'}${lines.join('\n')}\n`,
  };
}

function requestsOf(metrics: WorkerMetrics): number {
  const total = metrics.find((m) => m.name === 'gateway_requests_total');
  return total === undefined ? 0 : total.values.reduce((sum, v) => sum + v.value, 0);
}
