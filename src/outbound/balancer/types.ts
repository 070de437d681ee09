import type { Context } from '../../core/context.js';
import type { Target } from '../target.js';

/**
 * Chooses the target of one attempt. `pick` must consider only targets for
 * which {@link eligible} holds and return undefined when there is none; the
 * caller relaxes the constraints and asks again.
 */
export interface Balancer {
  pick(ctx: Context, now: number, tried: readonly Target[] | null, checkHealth: boolean): Target | undefined;
}

/** What the weighted pickers read of a target: upstream targets and stream (L4) targets alike. */
export interface Weighted {
  readonly weight: number;
  /** Requests or connections in flight. */
  readonly active: number;
  isAvailable(now: number): boolean;
}

/** Not tried yet in this request and, when `checkHealth`, in rotation. */
export function eligible<T extends Weighted>(
  target: T,
  now: number,
  tried: readonly T[] | null,
  checkHealth: boolean,
): boolean {
  if (checkHealth && !target.isAvailable(now)) return false;
  return tried === null || !tried.includes(target);
}
