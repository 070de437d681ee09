import { classifyFailure } from '../classify.js';
import { exchange, type ExchangeLimits } from '../exchange.js';
import type { OutboundDispatcher } from '../pool-registry.js';
import type { ProbeVerdict } from './grpc-check.js';

/**
 * Active health policy: every `intervalMs`, a GET on `path` judged by status
 * (`type: http`), or a `grpc.health.v1.Health/Check` call (`type: grpc`,
 * ./grpc-check.ts).
 */
export interface ActivePolicy {
  readonly type: 'http' | 'grpc';
  /** `type: grpc`: the service asked about ('' = the whole server). */
  readonly grpcService: string;
  readonly path: string;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly healthyStatuses: ReadonlySet<number>;
  /** Consecutive failed probes that take a target out of rotation. */
  readonly unhealthyThreshold: number;
  /** Consecutive good probes that bring it back. */
  readonly healthyThreshold: number;
}

export const USER_AGENT = 'switchyard-health-check';

/** One probe of one target; never rejects (a failure is an unhealthy verdict). */
export type TargetProbe = (signal: AbortSignal) => Promise<ProbeVerdict>;

/** An upstream node's target watching a shared check (./registry.ts). */
export interface CheckSubscriber {
  /** Probes the target over this subscriber's own connections. */
  readonly probe: TargetProbe;
  /** The shared verdict flipped (logs and metrics of the subscriber's policy and node). */
  changed(up: boolean, reason: string): void;
}

/**
 * What identifies a check: the probe (kind, path or gRPC service, Host or authority, interval,
 * timeout, statuses, thresholds) and the target it goes to (scheme, address, TLS material).
 * Upstream nodes whose keys are equal share one check, in any policy and across reloads.
 */
export function checkKey(
  target: string,
  scheme: string,
  tls: string,
  host: string,
  policy: ActivePolicy,
): string {
  const what =
    policy.type === 'grpc'
      ? `grpc ${policy.grpcService}`
      : `http ${policy.path} ${[...policy.healthyStatuses].sort((a, b) => a - b).join(',')}`;
  return [
    scheme,
    target,
    tls,
    host,
    what,
    policy.intervalMs,
    policy.timeoutMs,
    policy.unhealthyThreshold,
    policy.healthyThreshold,
  ].join('\u0000');
}

/** A GET of `policy.path` through `pool`, healthy when the status is one of `healthyStatuses`. */
export function httpProbe(pool: OutboundDispatcher, policy: ActivePolicy, host: string): TargetProbe {
  const limits: ExchangeLimits = { deadlineMs: policy.timeoutMs, idleMs: policy.timeoutMs, streaming: false };
  const headers = ['host', host, 'user-agent', USER_AGENT];
  return async (signal) => {
    try {
      const res = await exchange(
        pool,
        { method: 'GET', path: policy.path, headers: [...headers], body: null },
        limits,
        signal,
        null,
      );
      return {
        healthy: policy.healthyStatuses.has(res.status),
        reason: `probe ${policy.path} answered ${res.status}`,
      };
    } catch (err) {
      return { healthy: false, reason: `probe ${policy.path} failed: ${classifyFailure(err).reason}` };
    }
  };
}

function onTick(check: TargetCheck): void {
  check.runProbe();
}

/**
 * The active health of one target under one probe definition, shared by every upstream node
 * that subscribes with the same `checkKey` (./registry.ts): one probe at a time, the next
 * `intervalMs` after the previous one ended, so a slow target cannot pile probes up. The probe
 * goes through the newest subscriber's connections; a probe whose subscriber left meanwhile is
 * not counted (its connections may be closing) and the next one, an interval later, goes through
 * another one. Flips
 * `up` after the configured streaks and tells every subscriber. Starts with the first
 * subscriber; `stop()` (the registry calls it when the last one leaves) ends the timer and
 * aborts a probe in flight.
 */
export class TargetCheck {
  readonly #policy: ActivePolicy;
  readonly #subscribers: CheckSubscriber[] = [];
  readonly #abort = new AbortController();
  #up = true;
  #good = 0;
  #bad = 0;
  #timer: NodeJS.Timeout | null = null;
  #probing = false;
  /** Probes sent (diagnostics and tests). */
  probes = 0;

  constructor(policy: ActivePolicy) {
    this.#policy = policy;
  }

  /** False while failed probes hold the target out of rotation. */
  get up(): boolean {
    return this.#up;
  }

  get subscribers(): number {
    return this.#subscribers.length;
  }

  get stopped(): boolean {
    return this.#abort.signal.aborted;
  }

  /** Adds a subscriber; the first one starts the probes (timers do not keep the process alive). */
  subscribe(subscriber: CheckSubscriber): void {
    this.#subscribers.push(subscriber);
    if (!this.#probing && this.#timer === null && !this.stopped) this.#schedule(0);
  }

  /** Removes a subscriber; returns how many are left. */
  unsubscribe(subscriber: CheckSubscriber): number {
    const at = this.#subscribers.indexOf(subscriber);
    if (at !== -1) this.#subscribers.splice(at, 1);
    return this.#subscribers.length;
  }

  stop(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#abort.abort();
  }

  /** One probe now; used by the timer (and by tests that do not want to wait). */
  runProbe(): void {
    this.#timer = null;
    const by = this.#subscribers.at(-1);
    if (this.stopped || by === undefined || this.#probing) return;
    this.#probing = true;
    this.probes++;
    by.probe(this.#abort.signal).then(
      (verdict) => this.#ended(by, verdict),
      (err: unknown) => this.#ended(by, { healthy: false, reason: `probe failed: ${String(err)}` }),
    );
  }

  #ended(by: CheckSubscriber, verdict: ProbeVerdict): void {
    this.#probing = false;
    if (this.stopped) return;
    if (!this.#subscribers.includes(by)) {
      // The probe reached the target: the next one keeps the interval, so a reload never bursts.
      this.#schedule(this.#policy.intervalMs);
      return;
    }
    this.#record(verdict.healthy, verdict.reason);
    this.#schedule(this.#policy.intervalMs);
  }

  #schedule(delayMs: number): void {
    this.#timer = setTimeout(onTick, delayMs, this);
    this.#timer.unref();
  }

  #record(healthy: boolean, reason: string): void {
    if (healthy) {
      this.#bad = 0;
      this.#good++;
      if (!this.#up && this.#good >= this.#policy.healthyThreshold) this.#flip(true, reason);
    } else {
      this.#good = 0;
      this.#bad++;
      if (this.#up && this.#bad >= this.#policy.unhealthyThreshold) this.#flip(false, reason);
    }
  }

  #flip(up: boolean, reason: string): void {
    this.#up = up;
    for (const subscriber of [...this.#subscribers]) subscriber.changed(up, reason);
  }
}
