import type { Context } from '../../core/context.js';
import type { Target } from '../target.js';
import { hash32 } from './hash.js';
import { eligible, type Balancer } from './types.js';

/** Reads the hash key of a request (compiled once from `hash_on`). */
export type HashKey = (ctx: Context) => string;

/** Ring points per unit of weight; 160 is ketama's figure for a smooth spread. */
const POINTS_PER_WEIGHT = 160;
const MAX_POINTS = 160_000;

/**
 * Consistent hashing on a ring of virtual nodes (weight × 160 per target):
 * adding or removing a target moves only the keys of the arcs it gains or
 * loses. A key whose owner is unavailable walks clockwise to the next
 * available owner, so only that owner's keys move while it is out.
 */
export class ConsistentHashBalancer implements Balancer {
  readonly #targets: readonly Target[];
  readonly #key: HashKey;
  readonly #points: Uint32Array;
  readonly #owners: Uint32Array;

  constructor(targets: readonly Target[], key: HashKey) {
    this.#targets = targets;
    this.#key = key;
    const totalWeight = targets.reduce((sum, t) => sum + t.weight, 0);
    const scale = Math.min(POINTS_PER_WEIGHT, MAX_POINTS / totalWeight);
    const ring: { point: number; owner: number }[] = [];
    for (let i = 0; i < targets.length; i++) {
      const target = targets[i]!;
      const count = Math.max(1, Math.round(target.weight * scale));
      // Points derive from the target's address only, so its arcs do not depend on the other targets.
      for (let v = 0; v < count; v++) ring.push({ point: hash32(`${target.address}#${v}`), owner: i });
    }
    ring.sort((a, b) => a.point - b.point || a.owner - b.owner);
    this.#points = Uint32Array.from(ring, (r) => r.point);
    this.#owners = Uint32Array.from(ring, (r) => r.owner);
  }

  pick(ctx: Context, now: number, tried: readonly Target[] | null, checkHealth: boolean): Target | undefined {
    return this.pickByKey(this.#key(ctx), now, tried, checkHealth);
  }

  /** The owner of `key`; exposed for tests of ring stability. */
  pickByKey(
    key: string,
    now: number,
    tried: readonly Target[] | null,
    checkHealth: boolean,
  ): Target | undefined {
    const points = this.#points;
    const n = points.length;
    const start = lowerBound(points, hash32(key));
    const targets = this.#targets;
    for (let k = 0; k < n; k++) {
      const at = start + k < n ? start + k : start + k - n;
      const target = targets[this.#owners[at]!]!;
      if (eligible(target, now, tried, checkHealth)) return target;
    }
    return undefined;
  }
}

/** First index whose point is ≥ `h` (wrapping to 0 past the end). */
function lowerBound(points: Uint32Array, h: number): number {
  let lo = 0;
  let hi = points.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (points[mid]! < h) lo = mid + 1;
    else hi = mid;
  }
  return lo === points.length ? 0 : lo;
}
