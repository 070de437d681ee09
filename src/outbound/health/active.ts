import { classifyFailure } from '../classify.js';
import { exchange, type ExchangeLimits } from '../exchange.js';
import type { Target } from '../target.js';
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

/** A probe other than the HTTP GET (the gRPC check); it never rejects. */
export type TargetProbe = (target: Target, index: number, signal: AbortSignal) => Promise<ProbeVerdict>;

function onTick(checker: ActiveHealthChecker): void {
  checker.runRound();
}

/**
 * Probes every target on a timer and flips `target.probeUp` after the
 * configured streaks. One round at a time: the next starts `intervalMs` after
 * the previous one finished, so a slow target cannot pile probes up.
 * `close()` stops the timer and aborts probes in flight.
 */
export class ActiveHealthChecker {
  readonly #targets: readonly Target[];
  readonly #policy: ActivePolicy;
  readonly #limits: ExchangeLimits;
  readonly #hosts: readonly string[];
  readonly #abort = new AbortController();
  readonly #good: Int32Array;
  readonly #bad: Int32Array;
  readonly #custom: TargetProbe | null;
  #timer: NodeJS.Timeout | null = null;

  /** `hosts[i]` is the Host header sent to `targets[i]`; `probe` replaces the HTTP GET. */
  constructor(
    targets: readonly Target[],
    policy: ActivePolicy,
    hosts: readonly string[],
    probe: TargetProbe | null = null,
  ) {
    this.#targets = targets;
    this.#custom = probe;
    this.#policy = policy;
    this.#hosts = hosts;
    this.#limits = { deadlineMs: policy.timeoutMs, idleMs: policy.timeoutMs, streaming: false };
    this.#good = new Int32Array(targets.length);
    this.#bad = new Int32Array(targets.length);
  }

  /** Starts probing now; timers do not keep the process alive. */
  start(): void {
    if (this.#abort.signal.aborted || this.#timer !== null) return;
    this.#schedule(0);
  }

  close(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#abort.abort();
  }

  /** One probe of every target; used by the timer (and by tests that do not want to wait). */
  runRound(): void {
    this.#timer = null;
    if (this.#abort.signal.aborted) return;
    const probes = this.#targets.map((target, i) => this.#probe(target, i));
    Promise.all(probes).then(this.#next, this.#next);
  }

  readonly #next = (): void => {
    if (!this.#abort.signal.aborted) this.#schedule(this.#policy.intervalMs);
  };

  #schedule(delayMs: number): void {
    this.#timer = setTimeout(onTick, delayMs, this);
    this.#timer.unref();
  }

  async #probe(target: Target, i: number): Promise<void> {
    if (this.#custom !== null) {
      const verdict = await this.#custom(target, i, this.#abort.signal);
      if (!this.#abort.signal.aborted) this.#record(target, i, verdict.healthy, verdict.reason);
      return;
    }
    let healthy: boolean;
    let reason: string;
    try {
      const res = await exchange(
        target.pool,
        {
          method: 'GET',
          path: this.#policy.path,
          headers: ['host', this.#hosts[i]!, 'user-agent', USER_AGENT],
          body: null,
        },
        this.#limits,
        this.#abort.signal,
        null,
      );
      healthy = this.#policy.healthyStatuses.has(res.status);
      reason = `probe ${this.#policy.path} answered ${res.status}`;
    } catch (err) {
      if (this.#abort.signal.aborted) return;
      healthy = false;
      reason = `probe ${this.#policy.path} failed: ${classifyFailure(err).reason}`;
    }
    this.#record(target, i, healthy, reason);
  }

  #record(target: Target, i: number, healthy: boolean, reason: string): void {
    if (healthy) {
      this.#bad[i] = 0;
      this.#good[i]!++;
      if (!target.probeUp && this.#good[i]! >= this.#policy.healthyThreshold) target.setProbeUp(true, reason);
    } else {
      this.#good[i] = 0;
      this.#bad[i]!++;
      if (target.probeUp && this.#bad[i]! >= this.#policy.unhealthyThreshold)
        target.setProbeUp(false, reason);
    }
  }
}
