import type { Context } from '../../engine/context.js';
import type { Target } from '../target.js';
import { eligible, type Balancer } from './types.js';

/**
 * Fewest requests in flight relative to weight, counting the one about to be
 * sent ((active + 1) / weight), so weights matter even when idle. The scan
 * starts one further on each call, so ties rotate instead of always landing on
 * the first target.
 */
export class LeastConnectionsBalancer implements Balancer {
  readonly #targets: readonly Target[];
  #offset = 0;

  constructor(targets: readonly Target[]) {
    this.#targets = targets;
  }

  pick(
    _ctx: Context,
    now: number,
    tried: readonly Target[] | null,
    checkHealth: boolean,
  ): Target | undefined {
    const targets = this.#targets;
    const n = targets.length;
    const start = this.#offset;
    this.#offset = start + 1 >= n ? 0 : start + 1;
    let best: Target | undefined;
    for (let k = 0; k < n; k++) {
      const i = start + k < n ? start + k : start + k - n;
      const target = targets[i]!;
      if (!eligible(target, now, tried, checkHealth)) continue;
      // (a+1)/wa < (b+1)/wb without division
      if (best === undefined || (target.active + 1) * best.weight < (best.active + 1) * target.weight)
        best = target;
    }
    return best;
  }
}
