/** Passive health policy: eject after `maxFails` consecutive failures for `failTimeoutMs`. */
export interface PassivePolicy {
  /** 0 disables passive checks. */
  readonly maxFails: number;
  readonly failTimeoutMs: number;
}

/**
 * Consecutive-failure counter of one target, fed by real traffic.
 *
 * After the ejection window the target is readmitted half-open: the counter
 * stays at its limit, so the next failure ejects it again at once while a
 * success clears it.
 */
export class PassiveHealth {
  readonly #policy: PassivePolicy;
  #fails = 0;
  /** Epoch ms until which the target is out; 0 when it was never ejected. */
  ejectedUntil = 0;

  constructor(policy: PassivePolicy) {
    this.#policy = policy;
  }

  get consecutiveFailures(): number {
    return this.#fails;
  }

  succeeded(): void {
    this.#fails = 0;
  }

  /** Returns true when this failure took the target out of rotation (it was in until now). */
  failed(now: number): boolean {
    if (this.#policy.maxFails === 0) return false;
    this.#fails++;
    if (this.#fails < this.#policy.maxFails) return false;
    const wasIn = !this.isEjected(now);
    this.ejectedUntil = now + this.#policy.failTimeoutMs;
    return wasIn;
  }

  isEjected(now: number): boolean {
    return this.ejectedUntil > now;
  }
}
