import type { ConfigIssue } from '../config/schema-validate.js';
import type { CachePairReport } from '../core/graph-types.js';
import type { CacheTarget } from '../core/plugin.js';

export type { CacheTarget } from '../core/plugin.js';

export interface CacheHalf {
  node: string;
  /** Config path of the node, for the issue. */
  path: string;
  target: CacheTarget | undefined;
}

const describe = (t: CacheTarget): string =>
  t.backend === 'local' ? "policy 'local'" : `policy '${t.backend}' (store '${t.store}')`;

const LONE: Record<CacheTarget['phase'], string> = {
  lookup: 'lookup half without a store half in this policy: nothing is ever cached for it',
  store: 'store half without a lookup half in this policy: entries are written but never served here',
  purge: 'purge half without a lookup/store pair with this id',
};

/**
 * docs/plugins/proxy-cache.md: the halves sharing an `id` in one policy
 * must name the same backend (an issue otherwise, so the policy is rejected);
 * a half without its counterpart is only reported, for `cache_pairs`.
 */
export function checkCachePairs(
  where: string,
  halves: CacheHalf[],
  issues: ConfigIssue[],
): CachePairReport[] {
  const groups = new Map<string, (CacheHalf & { target: CacheTarget })[]>();
  for (const half of halves) {
    if (half.target === undefined) continue;
    const group = groups.get(half.target.id) ?? [];
    group.push(half as CacheHalf & { target: CacheTarget });
    groups.set(half.target.id, group);
  }
  const reports: CachePairReport[] = [];
  for (const [id, group] of groups) {
    const [first, ...rest] = group;
    if (first === undefined) continue;
    for (const half of rest) {
      if (half.target.backend === first.target.backend && half.target.store === first.target.store) continue;
      issues.push({
        path: `${half.path}.config.policy`,
        message: `${where}: proxy-cache pair '${id}': node '${half.node}' uses ${describe(half.target)} but node '${first.node}' uses ${describe(first.target)}; both halves must name the same backend`,
      });
    }
    const phases = new Set(group.map((h) => h.target.phase));
    const paired = phases.has('lookup') && phases.has('store');
    if (paired) continue;
    for (const half of group) {
      if (half.target.phase === 'purge' && (phases.has('lookup') || phases.has('store'))) continue;
      reports.push({ id, node: half.node, message: LONE[half.target.phase] });
    }
  }
  return reports;
}
