import type { StreamUpstreamConfig } from '../config/system.js';

/** One backend of a stream pool, with the live connection count least_connections reads. */
export interface StreamTarget {
  readonly host: string;
  readonly port: number;
  readonly weight: number;
  /** `host:port`, bracketed for IPv6 literals: for logs. */
  readonly address: string;
  /** Connections (TCP) or datagram sessions (UDP) open to it now. */
  active: number;
}

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

  /** nginx's smooth weighted round robin: weights 5,1,1 give a a b a c a a. */
  #roundRobin(): StreamTarget | undefined {
    const credit = this.#credit;
    let best = 0;
    let total = 0;
    for (let i = 0; i < this.targets.length; i++) {
      const weight = this.targets[i]!.weight;
      credit[i]! += weight;
      total += weight;
      if (credit[i]! > credit[best]!) best = i;
    }
    credit[best]! -= total;
    return this.targets[best];
  }

  /** Fewest open connections per unit of weight; ties rotate. */
  #leastConnections(): StreamTarget | undefined {
    const n = this.targets.length;
    const start = this.#offset;
    this.#offset = (start + 1) % n;
    let best: StreamTarget | undefined;
    for (let k = 0; k < n; k++) {
      const t = this.targets[(start + k) % n]!;
      if (best === undefined || (t.active + 1) * best.weight < (best.active + 1) * t.weight) best = t;
    }
    return best;
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
