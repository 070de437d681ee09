import { Counter, Gauge, Registry } from 'prom-client';
import type { Context } from '../core/context.js';
import type { CacheEvent, ScopeMetrics } from '../core/gateway-scope.js';
import type { ServerRequest } from '../server/data-plane.js';
import { statusClass, transferOf } from './request-facts.js';
import { FastCounter, FastHistogram, type CounterCell, type HistogramCell } from './fast-metrics.js';
import { registerNodeDurationHistogram, type NodeSample } from './node-histogram.js';

export type { NodeSample } from './node-histogram.js';

type CounterChild = ReturnType<Counter<string>['labels']>;

export type { CacheEvent } from '../core/gateway-scope.js';

/** Per-route cells, looked up on a route's first request (and again after a reload), then reused. */
interface RouteChildren {
  byStatus: Map<number, CounterCell>;
  errors: CounterCell;
  /** Indexed by method slot × 6 + status class (1 to 5; 0 for anything else). */
  duration: (HistogramCell | undefined)[];
  bytesIn: CounterCell;
  bytesOut: CounterCell;
  policy: string;
}

/** The data plane's completion call (docs/metrics.md, docs/logging.md): one per answered request. */
export type RequestFinished = (
  route: string,
  status: number,
  startedAt: number,
  nodeErrors?: number,
  req?: ServerRequest,
  ctx?: Context,
) => void;

/** Upper bounds in seconds: sub-millisecond local answers up to slow upstreams. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The `method` label values (docs/metrics.md): the RFC 9110 methods and PATCH; anything else is `OTHER`. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH', 'OTHER'];
const METHOD_SLOT = new Map(METHODS.map((m, i) => [m, i]));
const OTHER_SLOT = METHODS.length - 1;

/**
 * The gateway's Prometheus metrics on a registry of its own (never the global
 * one, so several gateways in one process do not collide). The hot-path
 * methods are bound arrow functions: pass them straight as data-plane hooks.
 * Label children are cached, so a request costs map lookups, not label objects.
 */
export class GatewayMetrics implements ScopeMetrics {
  readonly registry = new Registry();
  /** Requests answered so far: a cluster worker sends a metrics snapshot only when this moved. */
  answered = 0;
  // Per-request series: cells resolved once, plain additions per request (./fast-metrics.ts).
  readonly #requests: FastCounter<'route' | 'status'>;
  readonly #requestErrors: FastCounter<'route'>;
  readonly #duration: FastHistogram<'route' | 'policy' | 'method' | 'status_class'>;
  readonly #bytesIn: FastCounter<'route'>;
  readonly #bytesOut: FastCounter<'route'>;
  readonly #upstreamDuration: FastHistogram<'policy' | 'node_id' | 'target'>;
  readonly #upstreamChildren = new Map<string, HistogramCell>();
  readonly #reloads: Counter<'source' | 'result'>;
  readonly #lastReloadOk: Gauge;
  readonly #lastReloadAt: Gauge;
  readonly #lastSuccessAt: Gauge;
  readonly #nodeErrors: Counter<'policy' | 'node_id'>;
  readonly #upstreamErrors: Counter<'policy' | 'node_id' | 'code'>;
  /** Where the scrape reads per-node run counts and times (the live runtime's compiled nodes). */
  #nodeSource: () => Iterable<NodeSample> = () => [];
  readonly #applies: Counter<'source'>;
  readonly #rejections: Counter<'source'>;
  readonly #cacheEvents: Counter<'backend' | 'store' | 'event'>;
  readonly #cacheChildren = new Map<string, CounterChild>();
  readonly #routes = new Map<string, RouteChildren>();
  readonly #nodes = new Map<string, CounterChild>();

  constructor() {
    const registers = [this.registry];
    this.#requests = new FastCounter({
      name: 'gateway_requests_total',
      help: 'Requests answered by the data plane, by route ("" when no route matched) and status.',
      labelNames: ['route', 'status'],
      registers,
    });
    this.#requestErrors = new FastCounter({
      name: 'gateway_request_errors_total',
      help: 'Requests during which a node failed (outcome-port exits are not errors).',
      labelNames: ['route'],
      registers,
    });
    this.#duration = new FastHistogram({
      name: 'gateway_request_duration_seconds',
      help: 'Time from receiving a request to finishing its response, by route, policy, method (OTHER for non-standard ones) and status class (2xx…).',
      labelNames: ['route', 'policy', 'method', 'status_class'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#bytesIn = new FastCounter({
      name: 'gateway_request_bytes_total',
      help: 'Bytes received from clients (HTTP/1.x: request line, headers and body; HTTP/2: bodies), by route.',
      labelNames: ['route'],
      registers,
    });
    this.#bytesOut = new FastCounter({
      name: 'gateway_response_bytes_total',
      help: 'Bytes sent to clients (HTTP/1.x: status line, headers and body; HTTP/2: bodies), by route.',
      labelNames: ['route'],
      registers,
    });
    this.#upstreamDuration = new FastHistogram({
      name: 'gateway_upstream_duration_seconds',
      help: 'Time an upstream target took to answer (headers when streaming, the whole body when buffered), by policy, node id and target.',
      labelNames: ['policy', 'node_id', 'target'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#nodeErrors = new Counter({
      name: 'gateway_node_errors_total',
      help: 'Node runs that left through the error port, by policy and node id.',
      labelNames: ['policy', 'node_id'],
      registers,
    });
    this.#upstreamErrors = new Counter({
      name: 'gateway_upstream_errors_total',
      help: 'Upstream failures (connect, timeout, body read), by policy, node id and error code.',
      labelNames: ['policy', 'node_id', 'code'],
      registers,
    });
    // Per-node figures are plain counters on the compiled nodes, read only when scraped.
    const nodeSource = () => this.#nodeSource();
    new Counter({
      name: 'gateway_node_executions_total',
      help: 'Node runs since the running configuration was applied, by policy, node id and type.',
      labelNames: ['policy', 'node_id', 'type'],
      registers,
      collect() {
        this.reset();
        for (const n of nodeSource()) if (n.runs > 0) this.labels(n.policy, n.nodeId, n.type).inc(n.runs);
      },
    });
    registerNodeDurationHistogram(registers, nodeSource);
    new Counter({
      name: 'gateway_node_duration_seconds_total',
      help: 'Total node run time since the running configuration was applied, by policy, node id and type.',
      labelNames: ['policy', 'node_id', 'type'],
      registers,
      collect() {
        this.reset();
        for (const n of nodeSource())
          if (n.runs > 0) this.labels(n.policy, n.nodeId, n.type).inc(n.ms / 1000);
      },
    });
    this.#applies = new Counter({
      name: 'gateway_config_applies_total',
      help: 'Gateway configurations compiled and swapped in, by source (startup, file, signal, admin).',
      labelNames: ['source'],
      registers,
    });
    this.#rejections = new Counter({
      name: 'gateway_config_rejections_total',
      help: 'Gateway configurations rejected (the previous one kept serving), by source.',
      labelNames: ['source'],
      registers,
    });
    this.#reloads = new Counter({
      name: 'gateway_config_reloads_total',
      help: 'Configuration loads after startup (file, signal, admin, etcd), by source and result (success, failure).',
      labelNames: ['source', 'result'],
      registers,
    });
    this.#lastReloadOk = new Gauge({
      name: 'gateway_config_last_reload_successful',
      help: '1 when the last configuration load (startup included) was applied, 0 when it was rejected.',
      aggregator: 'min',
      registers,
    });
    this.#lastReloadAt = new Gauge({
      name: 'gateway_config_last_reload_timestamp_seconds',
      help: 'Unix seconds of the last configuration load, applied or rejected.',
      aggregator: 'max',
      registers,
    });
    this.#lastSuccessAt = new Gauge({
      name: 'gateway_config_last_reload_success_timestamp_seconds',
      help: 'Unix seconds of the last configuration applied.',
      aggregator: 'max',
      registers,
    });
    this.#cacheEvents = new Counter({
      name: 'gateway_cache_events_total',
      help: 'Response-cache events (hit, miss, backend_error, eviction, size_skip, purge), by backend and store.',
      labelNames: ['backend', 'store', 'event'],
      registers,
    });
  }

  /** Counts one response-cache event; `store` is '' for the local backend. */
  readonly cacheEvent = (backend: string, store: string, event: CacheEvent): void => {
    const key = `${backend}\u0000${store}\u0000${event}`;
    let counter = this.#cacheChildren.get(key);
    if (counter === undefined) {
      counter = this.#cacheEvents.labels(backend, store, event);
      this.#cacheChildren.set(key, counter);
    }
    counter.inc();
  };

  /**
   * Data-plane `onFinished` hook. `nodeErrors` is the number of error records
   * the request collected; when the caller cannot tell, a 5xx counts as one.
   * `req` and `ctx` give bytes, policy and the upstream answer when present.
   */
  readonly requestFinished: RequestFinished = (route, status, startedAt, nodeErrors, req, ctx) => {
    this.answered++;
    let children = this.#routes.get(route);
    if (children === undefined) {
      children = {
        byStatus: new Map(),
        errors: this.#requestErrors.cell(route),
        duration: [],
        bytesIn: this.#bytesIn.cell(route),
        bytesOut: this.#bytesOut.cell(route),
        policy: ctx?.policy ?? '',
      };
      this.#routes.set(route, children);
    }
    let counter = children.byStatus.get(status);
    if (counter === undefined) {
      counter = this.#requests.cell(route, String(status));
      children.byStatus.set(status, counter);
    }
    counter.value++;
    const cls = status >= 100 && status < 600 ? (status / 100) | 0 : 0;
    const method = METHOD_SLOT.get(req?.method ?? ctx?.request.method ?? '') ?? OTHER_SLOT;
    let duration = children.duration[method * 6 + cls];
    if (duration === undefined) {
      // A route keeps its policy until a reload rewires it; the label follows the first request seen.
      if (ctx !== undefined && ctx.policy !== '') children.policy = ctx.policy;
      duration = this.#duration.cell(route, children.policy, METHODS[method]!, statusClass(status));
      children.duration[method * 6 + cls] = duration;
    }
    duration.observe((performance.now() - startedAt) / 1000);
    if (nodeErrors === undefined ? status >= 500 : nodeErrors > 0) children.errors.value++;
    if (req !== undefined) {
      const moved = transferOf(req, ctx, status);
      children.bytesIn.value += moved.in;
      children.bytesOut.value += moved.out;
    }
    const upstream = ctx?.upstream;
    if (upstream !== undefined) this.#upstreamObserve(upstream.where, upstream.address, upstream.seconds);
  };

  #upstreamObserve(where: Readonly<Record<string, string>>, address: string, seconds: number): void {
    const policy = where.policy ?? '';
    const node = where.node ?? '';
    const key = `${policy}\u0000${node}\u0000${address}`;
    let child = this.#upstreamChildren.get(key);
    if (child === undefined) {
      child = this.#upstreamDuration.cell(policy, node, address);
      this.#upstreamChildren.set(key, child);
    }
    child.observe(seconds);
  }

  /** Run-loop `nodeError` hook; codes of the `UPSTREAM_` family also count as upstream errors. */
  readonly nodeError = (policy: string, nodeId: string, code: string): void => {
    const key = `${policy}\u0000${nodeId}`;
    let counter = this.#nodes.get(key);
    if (counter === undefined) {
      counter = this.#nodeErrors.labels(policy, nodeId);
      this.#nodes.set(key, counter);
    }
    counter.inc();
    // Client aborts are the caller's doing, not an upstream failure.
    if (code.startsWith('UPSTREAM_') && code !== 'UPSTREAM_CLIENT_ABORTED') {
      this.#upstreamErrors.labels(policy, nodeId, code).inc();
    }
  };

  /** Sets where per-node run counts come from; the gateway points it at its current runtime. */
  setNodeSource(source: () => Iterable<NodeSample>): void {
    this.#nodeSource = source;
  }

  configApplied(source: string): void {
    // Routes may now run other policies: their children are looked up again (the series persist).
    this.#routes.clear();
    this.#applies.labels(source).inc();
    if (source !== 'startup') this.#reloads.labels(source, 'success').inc();
    const now = Date.now() / 1000;
    this.#lastReloadOk.set(1);
    this.#lastReloadAt.set(now);
    this.#lastSuccessAt.set(now);
  }

  configRejected(source: string): void {
    this.#rejections.labels(source).inc();
    if (source !== 'startup') this.#reloads.labels(source, 'failure').inc();
    this.#lastReloadOk.set(0);
    this.#lastReloadAt.set(Date.now() / 1000);
  }

  /** The Prometheus text exposition and its content type. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
