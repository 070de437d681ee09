import type { ShownMismatch } from '../plugins/traffic/shadow-compare.js';
import type { DocumentPiece } from '../config/document-pieces.js';
import type { GatewayConfig } from '../config/gateway.js';
import type { StreamListenerConfig, SystemConfig } from '../config/system.js';
import type { ApplySource } from '../gateway.js';
import type { SecretValues } from '../config/secrets/relayed.js';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';

/**
 * Messages between the primary (control plane) and its workers (data plane),
 * JSON over the cluster IPC channel; bytes (cached bodies) travel as base64.
 * See docs/workers.md.
 */

/** A gateway-wide counter operation a worker asks the primary to run; `id` 0 expects no answer. */
export type SharedCall =
  /** limit-count / workflow: one request against a fixed window; the answer may carry a lease (LeasedWindow). */
  | [id: number, op: 'fw', key: string, limit: number, windowMs: number]
  /** rate-limit: one token from the bucket `key` of node `shared`. */
  | [id: number, op: 'tb', shared: string, rate: number, capacity: number, queue: number, key: string]
  /** limit-conn: take a slot under `key` unless `ceiling` are held. */
  | [id: number, op: 'cc+', key: string, ceiling: number]
  /** limit-conn: give one slot under `key` back. */
  | [id: 0, op: 'cc-', key: string]
  /** proxy-cache local: look up, store, purge a namespace. */
  | [id: number, op: 'cg', key: string]
  | [id: 0, op: 'cp', key: string, entry: WireResponse, ttlSeconds: number]
  | [id: number, op: 'cx', namespace: string]
  /** ai-rate-limit local: read the token window `key` (answer: TokenWindow of src/plugins/ai/ai-rate-limit-counter.ts). */
  | [id: number, op: 'tk?', key: string, windowMs: number]
  /** ai-rate-limit local: count `tokens` (negative: an estimate's correction) into the window `key`; answer: TokenWindow. */
  | [id: number, op: 'tk+', key: string, tokens: number, windowMs: number]
  /** ai-rate-limit local `estimate`: count `tokens` unless that carries the window over `limit`; answer: Reserved. */
  | [id: number, op: 'tk!', key: string, tokens: number, limit: number, windowMs: number];

/**
 * The answer to `fw`: the window's answer for this request, plus `lease`
 * further admissions of the same window the worker may hand out itself until
 * `until` (epoch ms, never after the window resets). See docs/workers.md.
 */
export interface LeasedWindow {
  allowed: boolean;
  remaining: number;
  resetSeconds: number;
  lease: number;
  until: number;
}

/** A cached response on the wire: the body base64-encoded. */
export interface WireResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: string;
  storedAt: number;
}

export type WorkerMetrics = MetricObjectWithValues<MetricValue<string>>[];

export type ToPrimary =
  /** The worker's message handler is installed: send `init`. */
  | { t: 'hello' }
  /** The worker listens: it serves the configuration of `init`. */
  | { t: 'ready' }
  /** After `stop`: its listeners are closed (no new connection reaches it); it drains the rest. */
  | { t: 'draining' }
  | { t: 'applied'; v: number; error?: string }
  | { t: 'calls'; c: SharedCall[] }
  /** A finished trace, v8-serialized (its snapshots may hold bytes) and base64-encoded. */
  | { t: 'trace'; v8: string }
  /** A proxy-mirror `compare` mismatch, already counted and redacted by the worker. */
  | { t: 'shadow'; p: string; n: string; m: ShownMismatch }
  /**
   * The worker's registry: the answer to `metrics?` `id`, or (`id` 0) a snapshot sent unasked every
   * METRICS_PUSH_MS while it answers requests and once more after it drained (src/cluster/metrics.ts).
   */
  | { t: 'metrics'; id: number; m: WorkerMetrics }
  /** The message `id` (a relayed ACME challenge) is in effect. */
  | { t: 'ack'; id: number }
  /** The answer to `reclaim`: `n` leased admissions were unused and are given back. */
  | { t: 'returned'; id: number; n: number };

export type ToWorker =
  | {
      t: 'init';
      worker: number;
      v: number;
      system: SystemConfig;
      config: GatewayConfig;
      gatewayPath: string | undefined;
      /** The `${secret:…}` values `config` holds, resolved by the primary (docs/secrets.md#workers). */
      secrets?: SecretValues;
    }
  /** One piece of configuration `v` (src/config/document-pieces.ts); `config` without a document follows. */
  | { t: 'config-piece'; v: number; piece: DocumentPiece }
  /** Apply configuration `v`: `config`, or the pieces sent before (src/cluster/config-pieces.ts). */
  | { t: 'config'; v: number; config?: GatewayConfig; source: ApplySource; secrets?: SecretValues }
  | { t: 'replies'; r: [id: number, value: unknown][] }
  | { t: 'metrics?'; id: number }
  /** A TLS-ALPN-01 answer the primary created for an order (removed when `pair` is absent); answer `ack`. */
  | { t: 'challenge'; id: number; domain: string; pair?: { key: string; cert: string } }
  /** SIGHUP re-read system.yaml: run these `stream:` listeners (docs/stream.md#reload). */
  | { t: 'stream'; stream: StreamListenerConfig[] }
  /** Give back the unused leased admissions of window `key` (another worker needs them). */
  | { t: 'reclaim'; id: number; key: string }
  /** Drain and exit (SIGTERM of the gateway). */
  | { t: 'stop' };
