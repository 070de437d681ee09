import type { OutboundDispatcher } from './pool-registry.js';
import { classifyCause } from './classify.js';
import type { ExchangePhase } from './errors.js';
import type { ExchangeObserver } from './exchange.js';
import { PassiveHealth, type PassivePolicy } from './health/passive.js';

export interface TargetSpec {
  host: string;
  port: number;
  weight: number;
  /** Lower is preferred: the balancer uses the lowest group with a target in rotation (SRV). Default 0. */
  priority?: number;
}

/** Told when a target leaves or rejoins the rotation (for logs and metrics). */
export interface HealthListener {
  targetHealthChanged(target: Target, up: boolean, check: 'passive' | 'active', reason: string): void;
}

/** Something that learns from response latencies (the ewma balancer's estimate). */
export interface LatencySink {
  observe(elapsedMs: number, now: number): void;
}

/**
 * One backend of an upstream: identity, its shared connection pool, and the
 * live figures balancers and health checks read (in-flight count, passive and
 * active health, latency estimate). It observes every exchange sent to it.
 */
export class Target implements ExchangeObserver {
  readonly index: number;
  readonly host: string;
  readonly port: number;
  readonly weight: number;
  /** Lower is preferred (./discovery/priority.ts); 0 unless discovered from SRV records. */
  readonly priority: number;
  /** `host:port`, with brackets for IPv6 literals: the error metadata and the default Host. */
  readonly address: string;
  readonly pool: OutboundDispatcher;
  /** May be shared with this target's successor on reload (./health/registry.ts). */
  readonly passive: PassiveHealth;
  /** Requests sent and not finished (body included). */
  active = 0;
  latency: LatencySink | null = null;
  readonly #listener: HealthListener | null;
  #check: { readonly up: boolean } | null = null;

  /** `passive`: a state of its own made from the policy, or one kept across reloads. */
  constructor(
    index: number,
    spec: TargetSpec,
    pool: OutboundDispatcher,
    passive: PassivePolicy | PassiveHealth,
    listener: HealthListener | null,
  ) {
    this.index = index;
    this.host = spec.host;
    this.port = spec.port;
    this.weight = spec.weight;
    this.priority = spec.priority ?? 0;
    this.address = formatAddress(spec.host, spec.port);
    this.pool = pool;
    this.passive = passive instanceof PassiveHealth ? passive : new PassiveHealth(passive);
    this.#listener = listener;
  }

  /** In rotation: not ejected by passive checks and not marked down by active ones. */
  isAvailable(now: number): boolean {
    return this.probeUp && !this.passive.isEjected(now);
  }

  exchangeStarted(): void {
    this.active++;
  }

  exchangeHeaders(elapsedMs: number): void {
    this.passive.succeeded();
    this.latency?.observe(elapsedMs, Date.now());
  }

  exchangeEnded(error: Error | null, phase: ExchangePhase): void {
    this.active--;
    if (error === null) return;
    const failure = classifyCause(error, phase);
    if (!failure.targetFault) return;
    if (this.passive.failed(Date.now())) {
      this.#listener?.targetHealthChanged(
        this,
        false,
        'passive',
        `${this.passive.consecutiveFailures} consecutive failures, last: ${failure.reason}`,
      );
    }
  }

  /** False while the active check of this target holds it down (true without one). */
  get probeUp(): boolean {
    return this.#check === null || this.#check.up;
  }

  /** Follows a (shared) active check from now on (./health/registry.ts). */
  useCheck(check: { readonly up: boolean }): void {
    this.#check = check;
  }

  /** The active check flipped: the listener hears about it (logs with this node's coordinates). */
  probeChanged(up: boolean, reason: string): void {
    this.#listener?.targetHealthChanged(this, up, 'active', reason);
  }
}

export function formatAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Live state of one target, for metrics, the Admin API and tests. */
export interface UpstreamTargetState {
  address: string;
  weight: number;
  /** In rotation now (not ejected, not marked down). */
  available: boolean;
  /** Epoch ms until which passive checks keep it out (0: never ejected). */
  ejectedUntil: number;
  consecutiveFailures: number;
  /** False while active checks hold it down. */
  probeUp: boolean;
  /** Requests in flight. */
  active: number;
}

/** The live state of each target, in order. */
export function targetStatesOf(targets: readonly Target[]): UpstreamTargetState[] {
  const now = Date.now();
  return targets.map((t) => ({
    address: t.address,
    weight: t.weight,
    available: t.isAvailable(now),
    ejectedUntil: t.passive.ejectedUntil,
    consecutiveFailures: t.passive.consecutiveFailures,
    probeUp: t.probeUp,
    active: t.active,
  }));
}
