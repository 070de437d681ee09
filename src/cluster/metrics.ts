import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { WorkerMetrics } from './protocol.js';

type Metric = MetricObjectWithValues<MetricValue<string>>;
type Value = MetricValue<string> & { metricName?: string };

/** Counted by the primary alone: every worker applies the same document the primary applied once. */
const CONTROL_PLANE = /^gateway_config_/;
/** The primary's start: the summed counters reset only when the primary restarts. */
const START_TIME = 'process_start_time_seconds';

/**
 * How old a worker's latest snapshot may get while it answers requests before
 * it sends a new one unasked (src/cluster/worker.ts, checked every second):
 * about the most of its counts a worker killed with SIGKILL takes with it
 * (docs/workers.md#metrics-traces-sessions).
 */
export const METRICS_PUSH_MS = 5_000;
/**
 * A registry whose snapshot costs more than METRICS_PUSH_MS / this (100 ms: tens
 * of thousands of series) is pushed this many times its cost apart instead, so
 * pushes take at most 1/50 of a worker's time (and of the primary's per worker).
 */
export const METRICS_PUSH_COST_FACTOR = 50;

/** One worker process the primary keeps figures for. */
interface Tracked {
  /** Slot (the `worker` label) and process id. */
  worker: number;
  pid: number;
  /** Its latest registry (a scrape answer or a push); undefined until the first arrives. */
  snapshot: WorkerMetrics | undefined;
  /** The process exited: only its counters and histograms still count (until folded). */
  exited: boolean;
}

/** Counters and histograms of the workers that are gone, summed per series. */
interface Retired {
  metric: Omit<Metric, 'values'>;
  values: Map<string, Value>;
}

/** Only a summed counter or histogram keeps its meaning once its process is gone. */
function monotonic(metric: Metric): boolean {
  const type = metric.type as unknown as string;
  return (type === 'counter' || type === 'histogram') && (metric.aggregator ?? 'sum') === 'sum';
}

function seriesKey(metric: Metric, value: Value): string {
  const labels = Object.entries(value.labels)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${String(v)}`)
    .join('\u0000');
  return `${value.metricName ?? metric.name}\u0001${labels}`;
}

/**
 * `/metrics` with `workers` (docs/workers.md#metrics-traces-sessions): the
 * primary's registry and the latest snapshot of every worker process, summed
 * with prom-client's AggregatorRegistry. Counters and histograms are monotonic
 * across worker restarts: when a worker process ends, the counters and
 * histograms of its last snapshot are kept (summed into a retired part that
 * stays in every later scrape) and its replacement counts on top; its gauges
 * are dropped. A worker that does not answer a scrape in time is counted with
 * its previous snapshot. `process_start_time_seconds` is the primary's (the
 * summed counters reset only when it restarts); each worker's start time is
 * `gateway_cluster_worker_start_time_seconds{worker,pid}`.
 */
export class ClusterMetrics {
  /** By cluster worker id (unique per forked process). */
  readonly #tracked = new Map<number, Tracked>();
  readonly #retired = new Map<string, Retired>();

  /** A worker process was forked into slot `worker`. */
  track(id: number, worker: number, pid: number): void {
    this.#tracked.set(id, { worker, pid, snapshot: undefined, exited: false });
  }

  /** A snapshot arrived (scrape answer or push); messages of one worker arrive in the order it took them. */
  update(id: number, metrics: WorkerMetrics): void {
    const tracked = this.#tracked.get(id);
    if (tracked !== undefined) tracked.snapshot = metrics;
  }

  /**
   * The process exited: its gauges stop counting. Its IPC channel may still hold
   * a final snapshot, so the counters are folded once the channel is `closed`
   * (at once when it is closed already).
   */
  exited(id: number, channelClosed: boolean): void {
    const tracked = this.#tracked.get(id);
    if (tracked === undefined) return;
    tracked.exited = true;
    if (channelClosed) this.closed(id);
  }

  /** No message can come from the worker any more: its counters join the retired part for good. */
  closed(id: number): void {
    const tracked = this.#tracked.get(id);
    if (tracked === undefined) return;
    this.#tracked.delete(id);
    for (const metric of tracked.snapshot ?? []) {
      if (CONTROL_PLANE.test(metric.name) || !monotonic(metric)) continue;
      let retired = this.#retired.get(metric.name);
      if (retired === undefined) {
        const { values: _values, ...meta } = metric;
        retired = { metric: meta, values: new Map() };
        this.#retired.set(metric.name, retired);
      }
      for (const value of metric.values as Value[]) {
        const key = seriesKey(metric, value);
        const sum = retired.values.get(key);
        if (sum === undefined) retired.values.set(key, { ...value, labels: { ...value.labels } });
        else sum.value += value.value;
      }
    }
  }

  /** Worker processes that are running, with their slot and pid. */
  get running(): { id: number; worker: number; pid: number }[] {
    return [...this.#tracked].flatMap(([id, t]) => (t.exited ? [] : [{ id, worker: t.worker, pid: t.pid }]));
  }

  /** The exposition: `primary` (the primary's registry) first, then every worker process's figures. */
  async render(
    primary: WorkerMetrics,
    cluster: { serving: number; configured: number; restarts: number },
  ): Promise<{ contentType: string; body: string }> {
    const parts: WorkerMetrics[] = [
      primary.map((m) => (m.name === START_TIME ? { ...m, aggregator: 'first' } : m)),
    ];
    const live: Tracked[] = [];
    for (const t of this.#tracked.values()) {
      if (t.snapshot === undefined) continue;
      if (!t.exited) live.push(t);
      parts.push(
        t.snapshot.filter(
          (m) => !CONTROL_PLANE.test(m.name) && m.name !== START_TIME && (!t.exited || monotonic(m)),
        ),
      );
    }
    parts.push(
      [...this.#retired.values()].map(({ metric, values }) => ({
        ...metric,
        values: [...values.values()].map((v) => ({ ...v })),
      })),
    );
    const registry = AggregatorRegistry.aggregate(parts);
    live.sort((a, b) => a.worker - b.worker || a.pid - b.pid);
    const lines = [
      '# HELP gateway_cluster_workers Worker processes serving the data plane now (system.yaml workers).',
      '# TYPE gateway_cluster_workers gauge',
      `gateway_cluster_workers ${cluster.serving}`,
      '# HELP gateway_cluster_workers_configured Worker processes the gateway keeps running.',
      '# TYPE gateway_cluster_workers_configured gauge',
      `gateway_cluster_workers_configured ${cluster.configured}`,
      '# HELP gateway_cluster_worker_restarts_total Workers replaced after they exited or could not apply a configuration.',
      '# TYPE gateway_cluster_worker_restarts_total counter',
      `gateway_cluster_worker_restarts_total ${cluster.restarts}`,
      '# HELP gateway_cluster_worker_requests_total Requests answered by each running worker process.',
      '# TYPE gateway_cluster_worker_requests_total counter',
      ...live.map(
        (w) =>
          `gateway_cluster_worker_requests_total{worker="${w.worker}",pid="${w.pid}"} ${requestsOf(w.snapshot!)}`,
      ),
      '# HELP gateway_cluster_worker_start_time_seconds Start time of each running worker process since the Unix epoch, in seconds.',
      '# TYPE gateway_cluster_worker_start_time_seconds gauge',
      ...live.flatMap((w) => {
        const start = w.snapshot!.find((m) => m.name === START_TIME)?.values[0]?.value;
        return start === undefined
          ? []
          : [`gateway_cluster_worker_start_time_seconds{worker="${w.worker}",pid="${w.pid}"} ${start}`];
      }),
    ];
    const body = await registry.metrics();
    return {
      contentType: registry.contentType,
      body: `${body}${body.endsWith('\n') ? '' : '\n'}${lines.join('\n')}\n`,
    };
  }
}

function requestsOf(metrics: WorkerMetrics): number {
  const total = metrics.find((m) => m.name === 'gateway_requests_total');
  return total === undefined ? 0 : total.values.reduce((sum, v) => sum + v.value, 0);
}
