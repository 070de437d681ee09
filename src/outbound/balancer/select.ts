import type { Context } from '../../core/context.js';
import type { Target } from '../target.js';
import type { Balancer } from './types.js';

/**
 * Picks the target of the next attempt, relaxing constraints in order: an
 * untried healthy target, an untried one even if ejected (all down → try
 * anyway rather than fail), then any target again once all were tried.
 */
export function selectTarget(balancer: Balancer, ctx: Context, tried: readonly Target[] | null): Target {
  const now = Date.now();
  const target =
    balancer.pick(ctx, now, tried, true) ??
    balancer.pick(ctx, now, tried, false) ??
    balancer.pick(ctx, now, null, true) ??
    balancer.pick(ctx, now, null, false);
  // Every balancer returns a target when nothing is excluded and the pool is not empty.
  if (target === undefined) throw new Error('balancer returned no target for a non-empty pool');
  return target;
}
