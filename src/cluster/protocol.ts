import type { GatewayConfig } from '../config/gateway.js';
import type { SystemConfig } from '../config/system.js';
import type { Trace } from '../debug/trace-types.js';
import type { ApplySource } from '../gateway.js';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';

/**
 * Messages between the primary (control plane) and its workers (data plane),
 * sent over the cluster IPC channel with `advanced` serialization so cached
 * bodies travel as bytes. See docs/workers.md.
 */

/** A gateway-wide counter operation a worker asks the primary to run; `id` 0 expects no answer. */
export type SharedCall =
  /** limit-count / workflow: one request against a fixed window. */
  | [id: number, op: 'fw', key: string, limit: number, windowMs: number]
  /** rate-limit: one token from the bucket `key` of node `shared`. */
  | [id: number, op: 'tb', shared: string, rate: number, capacity: number, queue: number, key: string]
  /** limit-conn: take a slot under `key` unless `ceiling` are held. */
  | [id: number, op: 'cc+', key: string, ceiling: number]
  /** limit-conn: give one slot under `key` back. */
  | [id: 0, op: 'cc-', key: string]
  /** proxy-cache local: look up, store, purge a namespace. */
  | [id: number, op: 'cg', key: string]
  | [id: 0, op: 'cp', key: string, entry: unknown, ttlSeconds: number]
  | [id: number, op: 'cx', namespace: string];

export type WorkerMetrics = MetricObjectWithValues<MetricValue<string>>[];

export type ToPrimary =
  /** The worker's message handler is installed: send `init`. */
  | { t: 'hello' }
  /** The worker listens: it serves the configuration of `init`. */
  | { t: 'ready' }
  | { t: 'applied'; v: number; error?: string }
  | { t: 'calls'; c: SharedCall[] }
  | { t: 'trace'; trace: Trace }
  | { t: 'metrics'; id: number; m: WorkerMetrics };

export type ToWorker =
  | {
      t: 'init';
      worker: number;
      v: number;
      system: SystemConfig;
      config: GatewayConfig;
      gatewayPath: string | undefined;
    }
  | { t: 'config'; v: number; config: GatewayConfig; source: ApplySource }
  | { t: 'replies'; r: [id: number, value: unknown][] }
  | { t: 'metrics?'; id: number }
  /** Drain and exit (SIGTERM of the gateway). */
  | { t: 'stop' };
