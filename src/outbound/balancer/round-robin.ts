import type { Context } from '../../engine/context.js';
import type { Target } from '../target.js';
import { eligible, type Balancer } from './types.js';

/**
 * Smooth weighted round robin (the nginx algorithm): weights 5,1,1 give
 * a a b a c a a rather than a burst of five. Skipped targets do not
 * accumulate credit, so a readmitted target does not get a burst either.
 */
export class RoundRobinBalancer implements Balancer {
  readonly #targets: readonly Target[];
  readonly #current: Float64Array;

  constructor(targets: readonly Target[]) {
    this.#targets = targets;
    this.#current = new Float64Array(targets.length);
  }

  pick(
    _ctx: Context,
    now: number,
    tried: readonly Target[] | null,
    checkHealth: boolean,
  ): Target | undefined {
    const targets = this.#targets;
    const current = this.#current;
    let best = -1;
    let total = 0;
    for (let i = 0; i < targets.length; i++) {
      const target = targets[i]!;
      if (!eligible(target, now, tried, checkHealth)) continue;
      current[i]! += target.weight;
      total += target.weight;
      if (best === -1 || current[i]! > current[best]!) best = i;
    }
    if (best === -1) return undefined;
    current[best]! -= total;
    return targets[best];
  }
}
