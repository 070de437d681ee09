/** Thresholds and cooldowns of one breaker, as configured on its nodes. */
export interface BreakerPolicy {
  readonly unhealthyFailures: number;
  readonly healthySuccesses: number;
  readonly breakBaseMs: number;
  readonly maxBreakerMs: number;
}

/**
 * The shared state of one `api-breaker` id: consecutive failure and success
 * streaks and, while open, the instant it may let traffic through again.
 */
export class BreakerState {
  #failures = 0;
  #successes = 0;
  /** Trips in the current unhealthy spell; each one doubles the cooldown. */
  #trips = 0;
  /** Epoch ms until which the breaker rejects; 0 when closed. */
  openUntil = 0;

  /** Open and cooling down: reject. After the cooldown the breaker is half-open and lets requests probe. */
  isOpen(now: number): boolean {
    if (this.openUntil === 0) return false;
    if (now < this.openUntil) return true;
    this.openUntil = 0;
    return false;
  }

  recordSuccess(policy: BreakerPolicy): void {
    this.#failures = 0;
    if (++this.#successes >= policy.healthySuccesses) {
      this.#successes = 0;
      this.#trips = 0;
    }
  }

  recordFailure(policy: BreakerPolicy, now: number): void {
    this.#successes = 0;
    if (++this.#failures < policy.unhealthyFailures) return;
    this.#failures = 0;
    const cooldown = Math.min(
      policy.breakBaseMs * 2 ** Math.min(this.#trips, 16),
      Math.max(policy.maxBreakerMs, policy.breakBaseMs),
    );
    this.openUntil = now + cooldown;
    this.#trips++;
  }
}

/** Process-wide: every node naming the same id shares one state, across reloads. */
const breakers = new Map<string, BreakerState>();

export function breakerFor(id: string): BreakerState {
  let state = breakers.get(id);
  if (state === undefined) {
    state = new BreakerState();
    breakers.set(id, state);
  }
  return state;
}
