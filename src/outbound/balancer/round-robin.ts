import type { Context } from '../../core/context.js';
import type { Target } from '../target.js';
import type { Balancer } from './types.js';
import { smoothWeighted } from './weighted.js';

/** Smooth weighted round robin over the upstream's targets (see {@link smoothWeighted}). */
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
    return smoothWeighted(this.#targets, this.#current, now, tried, checkHealth);
  }
}
