import { readFileSync, statSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { createRequire } from 'node:module';
import { collectDefaultMetrics, Counter, Gauge, type Registry } from 'prom-client';
import type { Runtime } from '../engine/compile.js';
import type { TlsConfig } from '../config/system.js';
import { UpstreamNode } from '../plugins/core/upstream.js';
import { TrafficSplitNode } from '../plugins/traffic/traffic-split.js';
import { DISCOVERY_FOLLOWERS } from '../outbound/discovery/followers.js';

/** What the scrape reads from a running gateway. */
export interface GatewaySource {
  /** The configuration serving new requests. */
  runtime(): Runtime;
  /** Requests running now (routed, not yet answered). */
  inflight(): number;
  /** system.yaml `tls`: its certificate files are watched for expiry. */
  tls: TlsConfig | undefined;
  /**
   * False in the primary of `workers: N`, which serves no requests: it then reports the Node and
   * process defaults without the event-loop lag series, whose monitor wakes the process every 10 ms
   * (docs/workers.md#what-it-costs). Default true.
   */
  eventLoopLag?: boolean;
}

const require = createRequire(import.meta.url);
/** prom-client's default metric that samples the event loop on a 10 ms timer. */
const EVENT_LOOP_LAG = 'eventLoopLag';

/**
 * prom-client's default metrics; without the event-loop lag ones when `lag` is false. prom-client
 * has no switch for that, so each default is registered from its own module (the same modules
 * `collectDefaultMetrics` runs, named by its `metricsList`).
 */
function registerDefaultMetrics(registry: Registry, lag: boolean): void {
  if (lag) {
    collectDefaultMetrics({ register: registry });
    return;
  }
  const config = { eventLoopMonitoringPrecision: 10 };
  for (const name of collectDefaultMetrics.metricsList) {
    if (name === EVENT_LOOP_LAG) continue;
    (require(`prom-client/lib/metrics/${name}`) as (r: Registry, c: object) => void)(registry, config);
  }
}

const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/**
 * The series only a running gateway has (docs/metrics.md): Node and process
 * defaults, build info, in-flight requests, upstream target health and the
 * expiry of file certificates. Everything stays in `registry`, so a cluster
 * aggregator merges it like any other prom-client metric.
 */
export function registerGatewaySeries(registry: Registry, source: GatewaySource): void {
  const registers = [registry];
  registerDefaultMetrics(registry, source.eventLoopLag !== false);
  new Gauge({
    name: 'gateway_build_info',
    help: 'Always 1; the labels name the Switchyard and Node.js versions serving.',
    labelNames: ['version', 'node_version'],
    aggregator: 'first',
    registers,
  }).set({ version: VERSION, node_version: process.version }, 1);
  new Gauge({
    name: 'gateway_requests_in_flight',
    help: 'Requests routed and not yet answered, on the configuration serving now.',
    registers,
    collect() {
      this.set(source.inflight());
    },
  });
  new Gauge({
    name: 'gateway_upstream_target_up',
    help: 'Upstream target health: 1 in rotation, 0 ejected by passive checks or marked down by active ones.',
    labelNames: ['policy', 'node_id', 'target'],
    // Workers keep their own passive health: a target any worker ejected counts as down.
    aggregator: 'min',
    registers,
    collect() {
      this.reset();
      for (const t of upstreamTargets(source.runtime())) this.labels(t.policy, t.node, t.target).set(t.up);
    },
  });
  new Gauge({
    name: 'gateway_upstream_target_in_flight',
    help: 'Requests in flight to each upstream target (bodies included).',
    labelNames: ['policy', 'node_id', 'target'],
    registers,
    collect() {
      this.reset();
      for (const t of upstreamTargets(source.runtime()))
        this.labels(t.policy, t.node, t.target).set(t.active);
    },
  });
  new Gauge({
    name: 'gateway_discovery_targets',
    help: 'Targets an upstream node has from its discovery source now (docs/service-discovery.md), by policy, node id and source.',
    labelNames: ['policy', 'node_id', 'source'],
    // Each worker resolves on its own: the fewest targets any of them has.
    aggregator: 'min',
    registers,
    collect() {
      this.reset();
      for (const d of discoveries(source.runtime())) this.labels(d.policy, d.node, d.source).set(d.targets);
    },
  });
  new Counter({
    name: 'gateway_discovery_errors_total',
    help: 'Failed discovery look-ups (resolver or registry unreachable, error or empty answer: the last targets are kept), by source.',
    labelNames: ['source'],
    registers,
    collect() {
      this.reset();
      const seen = new Map<string, number>();
      for (const d of discoveries(source.runtime())) seen.set(d.source, d.errors);
      for (const [label, errors] of seen) this.labels(label).inc(errors);
    },
  });
  const certs = new CertExpiry();
  new Gauge({
    name: 'gateway_tls_cert_not_after_timestamp_seconds',
    help: 'Expiry of each certificate file of system.yaml tls (cert_path, sni_certs[].cert_path), unix seconds.',
    labelNames: ['cert_path'],
    aggregator: 'min',
    registers,
    collect() {
      this.reset();
      for (const path of certPaths(source.tls)) {
        const notAfter = certs.notAfter(path);
        if (notAfter !== undefined) this.labels(path).set(notAfter);
      }
    },
  });
}

interface TargetHealth {
  policy: string;
  node: string;
  target: string;
  up: number;
  active: number;
}

/** Every target of every upstream node of `runtime`; config-bounded, so the labels are too. */
function* upstreamTargets(runtime: Runtime): Iterable<TargetHealth> {
  for (const policy of runtime.policies.values()) {
    for (const { id, node } of upstreamNodes(policy.nodes.values())) {
      for (const state of node.targetStates()) {
        yield {
          policy: policy.name,
          node: id,
          target: state.address,
          up: state.available ? 1 : 0,
          active: state.active,
        };
      }
    }
  }
}

/** A policy's upstream nodes, and those a traffic-split `config_ref` slot proxies through (node id `split/name`). */
function* upstreamNodes(
  nodes: Iterable<{ id: string; instance: unknown }>,
): Iterable<{ id: string; node: UpstreamNode }> {
  for (const node of nodes) {
    if (node.instance instanceof UpstreamNode) yield { id: node.id, node: node.instance };
    else if (node.instance instanceof TrafficSplitNode) yield* node.instance.innerUpstreams();
  }
}

/** The upstream nodes of `runtime` and the stream pools that follow a discovery source. */
function* discoveries(
  runtime: Runtime,
): Iterable<{ policy: string; node: string; source: string; targets: number; errors: number }> {
  for (const policy of runtime.policies.values()) {
    for (const { id, node } of upstreamNodes(policy.nodes.values())) {
      const state = node.discoveryState();
      if (state !== null) yield { policy: policy.name, node: id, ...state };
    }
  }
  // The stream pools of this process (system.yaml `stream:`): policy '', node_id the listener.
  for (const follower of DISCOVERY_FOLLOWERS) {
    const state = follower.state();
    if (state !== null) yield { policy: follower.policy, node: follower.node, ...state };
  }
}

function certPaths(tls: TlsConfig | undefined): string[] {
  if (tls === undefined) return [];
  const paths: string[] = [];
  if (tls.cert_path !== undefined) paths.push(tls.cert_path);
  for (const sni of tls.sni_certs) if (sni.cert_path !== undefined) paths.push(sni.cert_path);
  return paths;
}

/** Parses a certificate file again only when its modification time changes. */
class CertExpiry {
  readonly #cache = new Map<string, { mtimeMs: number; notAfter: number | undefined }>();

  notAfter(path: string): number | undefined {
    let mtimeMs: number;
    try {
      mtimeMs = statSync(path).mtimeMs;
    } catch {
      return undefined;
    }
    const cached = this.#cache.get(path);
    if (cached?.mtimeMs === mtimeMs) return cached.notAfter;
    let notAfter: number | undefined;
    try {
      notAfter = Date.parse(new X509Certificate(readFileSync(path)).validTo) / 1000;
    } catch {
      notAfter = undefined;
    }
    this.#cache.set(path, { mtimeMs, notAfter });
    return notAfter;
  }
}
