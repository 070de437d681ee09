import type { Context } from '../../core/context.js';
import { createBalancer, type BalancerKind } from '../balancer/index.js';
import type { HashKey } from '../balancer/chash.js';
import type { Balancer } from '../balancer/types.js';
import type { Target } from '../target.js';

/**
 * Priority groups (RFC 2782): the configured balancer runs within the lowest-priority group
 * while any target of it is in rotation and untried, and moves to the next group only when none
 * is; weights shape the share within a group. With one group it is the plain balancer.
 */
export function createPriorityBalancer(
  kind: BalancerKind,
  targets: readonly Target[],
  hashKey: HashKey,
): Balancer {
  const byPriority = new Map<number, Target[]>();
  for (const target of targets) {
    let group = byPriority.get(target.priority);
    if (group === undefined) byPriority.set(target.priority, (group = []));
    group.push(target);
  }
  if (byPriority.size <= 1) return createBalancer(kind, targets, hashKey);
  const groups = [...byPriority.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([, group]) => createBalancer(kind, group, hashKey));
  return new PriorityBalancer(groups);
}

class PriorityBalancer implements Balancer {
  readonly #groups: readonly Balancer[];

  constructor(groups: readonly Balancer[]) {
    this.#groups = groups;
  }

  pick(ctx: Context, now: number, tried: readonly Target[] | null, checkHealth: boolean): Target | undefined {
    for (const group of this.#groups) {
      const target = group.pick(ctx, now, tried, checkHealth);
      if (target !== undefined) return target;
    }
    return undefined;
  }
}
