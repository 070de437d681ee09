import type { StreamUpstreamConfig } from '../config/system.js';
import type { Logger } from '../core/logger.js';
import { leastLoaded, smoothWeighted } from '../outbound/balancer/weighted.js';
import { DiscoveryRegistry, type SourceLease } from '../outbound/discovery/registry.js';
import { resolveDiscovery } from '../outbound/discovery/spec.js';
import { toTargetSpecs } from '../outbound/discovery/targets.js';
import { DISCOVERY_FOLLOWERS, type DiscoveryFollower } from '../outbound/discovery/followers.js';

/** One backend of a stream pool, with the live connection count least_connections reads. */
export interface StreamTarget {
  readonly host: string;
  readonly port: number;
  readonly weight: number;
  /** `host:port`, bracketed for IPv6 literals: for logs. */
  readonly address: string;
  /** Connections (TCP) or datagram sessions (UDP) open to it now. */
  active: number;
  /** Stream targets have no health checks: always in rotation. */
  isAvailable(now: number): boolean;
}

const ALWAYS = (): boolean => true;

/**
 * The discovery sources of the stream listeners of this process: one per distinct block, shared
 * by every pool that declares it, kept running across a reload that keeps the block (the new
 * pool acquires it before the old one releases it).
 */
const STREAM_DISCOVERY = new DiscoveryRegistry();

interface PoolTarget {
  readonly host: string;
  readonly port: number;
  readonly weight: number;
}

/**
 * The targets of a stream listener (or of one SNI route) and the order in
 * which to try them for a new connection: the balancer's choice first, then
 * the others, so a connect failure can fall over. Targets of weight 0 are
 * never chosen. With `discovery` the pool starts empty (connections are
 * refused until the first answer) and follows the source in the background
 * (`setTargets`); `close()` stops following it.
 */
export class StreamPool {
  #targets: readonly StreamTarget[] = [];
  readonly #kind: StreamUpstreamConfig['load_balancing'];
  /** Smooth weighted round robin state, one credit per target. */
  #credit = new Float64Array(0);
  #offset = 0;
  #lease: SourceLease | null = null;
  #unsubscribe: (() => void) | null = null;
  #follower: DiscoveryFollower | null = null;

  /**
   * `logger` is needed with `discovery`; a bad `discovery` block throws a ConfigError at its key.
   * `name`: the `node_id` of its discovery metrics (the listener, and the SNI route's name).
   */
  constructor(config: StreamUpstreamConfig, logger?: Logger, name = '') {
    this.#kind = config.load_balancing;
    if (config.discovery === undefined) {
      this.setTargets(config.targets);
      return;
    }
    const spec = resolveDiscovery(config.discovery);
    if (logger === undefined) throw new Error('a stream pool with discovery needs a logger');
    const lease = STREAM_DISCOVERY.acquire(spec, logger);
    this.#lease = lease;
    // No health checks here, so the lowest SRV priority group is always "up": only it is used.
    this.#unsubscribe = lease.source.subscribe((found) => {
      const specs = toTargetSpecs(found);
      const lowest = Math.min(...specs.map((t) => t.priority ?? 0));
      this.setTargets(specs.filter((t) => (t.priority ?? 0) === lowest));
    });
    const follower: DiscoveryFollower = {
      policy: '',
      node: name,
      state: () => {
        const held = this.#lease;
        return held === null
          ? null
          : { source: held.source.label, targets: this.#targets.length, errors: held.source.errors };
      },
    };
    this.#follower = follower;
    DISCOVERY_FOLLOWERS.add(follower);
  }

  get targets(): readonly StreamTarget[] {
    return this.#targets;
  }

  /** The discovery source's label (`dns:db.internal`), or null with static targets. */
  get source(): string | null {
    return this.#lease?.source.label ?? null;
  }

  /**
   * Replaces the targets while connections run: a target kept (same host, port and weight)
   * keeps its live connection count; open tunnels to a removed one stay up.
   */
  setTargets(targets: readonly PoolTarget[]): void {
    const old = new Map(this.#targets.map((t) => [`${t.address}/${t.weight}`, t]));
    this.#targets = targets
      .filter((t) => t.weight > 0)
      .map((t) => {
        const address = t.host.includes(':') ? `[${t.host}]:${t.port}` : `${t.host}:${t.port}`;
        return (
          old.get(`${address}/${t.weight}`) ?? {
            host: t.host,
            port: t.port,
            weight: t.weight,
            address,
            active: 0,
            isAvailable: ALWAYS,
          }
        );
      });
    this.#credit = new Float64Array(this.#targets.length);
    this.#offset = 0;
  }

  /** Stops following the discovery source (the last pool using it stops it). */
  close(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    if (this.#follower !== null) DISCOVERY_FOLLOWERS.delete(this.#follower);
    this.#follower = null;
    this.#lease?.release();
    this.#lease = null;
  }

  /** Targets in the order to try them for a client at `clientIp`. */
  order(clientIp: string): StreamTarget[] {
    const first = this.#choose(clientIp);
    const rest = this.targets.filter((t) => t !== first);
    return first === undefined ? rest : [first, ...rest];
  }

  #choose(clientIp: string): StreamTarget | undefined {
    const targets = this.targets;
    if (targets.length <= 1) return targets[0];
    switch (this.#kind) {
      case 'round_robin':
        return this.#roundRobin();
      case 'least_connections':
        return this.#leastConnections();
      case 'ip_hash':
        return weightedSlot(targets, fnv1a(clientIp));
    }
  }

  #roundRobin(): StreamTarget | undefined {
    return smoothWeighted(this.targets, this.#credit, 0, null, false);
  }

  #leastConnections(): StreamTarget | undefined {
    const start = this.#offset;
    this.#offset = (start + 1) % this.targets.length;
    return leastLoaded(this.targets, start, 0, null, false);
  }
}

/** The target owning slot `hash mod total weight`, so weights hold for hashed clients too. */
function weightedSlot(targets: readonly StreamTarget[], hash: number): StreamTarget | undefined {
  let total = 0;
  for (const t of targets) total += t.weight;
  let slot = hash % total;
  for (const t of targets) {
    if (slot < t.weight) return t;
    slot -= t.weight;
  }
  return targets[0];
}

/** 32-bit FNV-1a of a string's UTF-16 code units: stable across restarts and instances. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
