import type { Context } from '../../core/context.js';
import type { Target } from '../target.js';
import type { Balancer } from './types.js';
import { leastLoaded } from './weighted.js';

/**
 * Fewest requests in flight relative to weight (see {@link leastLoaded}). The
 * scan starts one further on each call, so ties rotate instead of always
 * landing on the first target.
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
    const n = this.#targets.length;
    const start = this.#offset;
    this.#offset = start + 1 >= n ? 0 : start + 1;
    return leastLoaded(this.#targets, start, now, tried, checkHealth);
  }
}
