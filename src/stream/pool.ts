import type { StreamUpstreamConfig } from '../config/system.js';
import { leastLoaded, smoothWeighted } from '../outbound/balancer/weighted.js';

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
 * The targets of a stream listener (or of one SNI route) and the order in
 * which to try them for a new connection: the balancer's choice first, then
 * the others, so a connect failure can fall over. Targets of weight 0 are
 * never chosen.
 */
export class StreamPool {
  readonly targets: readonly StreamTarget[];
  readonly #kind: StreamUpstreamConfig['load_balancing'];
  /** Smooth weighted round robin state, one credit per target. */
  readonly #credit: Float64Array;
  #offset = 0;

  constructor(config: StreamUpstreamConfig) {
    this.targets = config.targets
      .map((t) => ({
        host: t.host,
        port: t.port,
        weight: t.weight,
        address: t.host.includes(':') ? `[${t.host}]:${t.port}` : `${t.host}:${t.port}`,
        active: 0,
        isAvailable: ALWAYS,
      }))
      .filter((t) => t.weight > 0);
    this.#kind = config.load_balancing;
    this.#credit = new Float64Array(this.targets.length);
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
