import { eligible, type Weighted } from './types.js';

/**
 * Smooth weighted round robin (the nginx algorithm): weights 5,1,1 give
 * a a b a c a a rather than a burst of five. `credit` holds one running
 * score per target. Skipped targets do not accumulate credit, so a
 * readmitted target does not get a burst either.
 */
export function smoothWeighted<T extends Weighted>(
  targets: readonly T[],
  credit: Float64Array,
  now: number,
  tried: readonly T[] | null,
  checkHealth: boolean,
): T | undefined {
  let best = -1;
  let total = 0;
  for (let i = 0; i < targets.length; i++) {
    const target = targets[i]!;
    if (!eligible(target, now, tried, checkHealth)) continue;
    credit[i]! += target.weight;
    total += target.weight;
    if (best === -1 || credit[i]! > credit[best]!) best = i;
  }
  if (best === -1) return undefined;
  credit[best]! -= total;
  return targets[best];
}

/**
 * Fewest in flight relative to weight, counting the one about to start
 * ((active + 1) / weight), so weights matter even when idle. The scan starts
 * at `start`, so callers that move it on each call rotate ties.
 */
export function leastLoaded<T extends Weighted>(
  targets: readonly T[],
  start: number,
  now: number,
  tried: readonly T[] | null,
  checkHealth: boolean,
): T | undefined {
  const n = targets.length;
  let best: T | undefined;
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
