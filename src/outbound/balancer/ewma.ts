import type { Context } from '../../core/context.js';
import type { LatencySink, Target } from '../target.js';
import { eligible, type Balancer } from './types.js';

/** Time constant of the latency average: a spike fades by 1/e in this many ms. */
const DECAY_MS = 10_000;

/**
 * Peak-sensitive moving average of time-to-headers: a slower response takes
 * effect at once, faster ones blend in over time, and the estimate decays
 * toward zero while the target gets no traffic, so it is tried again.
 */
export class LatencyEwma implements LatencySink {
  #value = 0;
  #at = 0;

  observe(elapsedMs: number, now: number): void {
    const prev = this.valueAt(now);
    const w = Math.exp(-Math.max(0, now - this.#at) / DECAY_MS);
    this.#value = elapsedMs > prev ? elapsedMs : prev * w + elapsedMs * (1 - w);
    this.#at = now;
  }

  valueAt(now: number): number {
    return this.#value === 0 ? 0 : this.#value * Math.exp(-Math.max(0, now - this.#at) / DECAY_MS);
  }
}

/**
 * Lowest expected latency × load: (ewma + 1) × (in flight + 1) / weight,
 * chosen by the power of two random choices, which avoids herding every
 * request onto the one target that looked fastest a moment ago.
 */
export class EwmaBalancer implements Balancer {
  readonly #targets: readonly Target[];
  readonly #latency: readonly LatencyEwma[];

  constructor(targets: readonly Target[]) {
    this.#targets = targets;
    this.#latency = targets.map((target) => {
      const estimate = new LatencyEwma();
      target.latency = estimate;
      return estimate;
    });
  }

  pick(
    _ctx: Context,
    now: number,
    tried: readonly Target[] | null,
    checkHealth: boolean,
  ): Target | undefined {
    const targets = this.#targets;
    const n = targets.length;
    if (n === 1) return eligible(targets[0]!, now, tried, checkHealth) ? targets[0] : undefined;
    const a = Math.floor(Math.random() * n);
    let b = Math.floor(Math.random() * (n - 1));
    if (b >= a) b++;
    const okA = eligible(targets[a]!, now, tried, checkHealth);
    const okB = eligible(targets[b]!, now, tried, checkHealth);
    if (okA && okB) return this.#score(a, now) <= this.#score(b, now) ? targets[a] : targets[b];
    if (okA) return targets[a];
    if (okB) return targets[b];
    let best = -1;
    let bestScore = Infinity;
    for (let i = 0; i < n; i++) {
      if (!eligible(targets[i]!, now, tried, checkHealth)) continue;
      const score = this.#score(i, now);
      if (score < bestScore) {
        best = i;
        bestScore = score;
      }
    }
    return best === -1 ? undefined : targets[best];
  }

  #score(i: number, now: number): number {
    const target = this.#targets[i]!;
    return ((this.#latency[i]!.valueAt(now) + 1) * (target.active + 1)) / target.weight;
  }
}
