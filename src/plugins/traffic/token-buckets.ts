/** What one request got from its bucket. */
export type BucketAnswer =
  | { kind: 'now' }
  /** Passes after `waitMs`, once the token it borrowed has been refilled (`nodelay: false`). */
  | { kind: 'wait'; waitMs: number }
  | { kind: 'limited' };

interface Bucket {
  tokens: number;
  at: number;
}

/** Sweep idle buckets after this many new keys. */
const SWEEP_EVERY = 1024;

/**
 * Token buckets per key, refilled lazily at `rate` per second up to
 * `capacity`. With `queue > 0` a request finding the bucket empty may borrow
 * up to `queue` tokens ahead and wait for them; a bucket is never created
 * for more than it holds. A full bucket equals an absent one, so idle keys
 * are swept.
 */
export class TokenBuckets {
  readonly #buckets = new Map<string, Bucket>();
  #created = 0;

  constructor(
    readonly rate: number,
    readonly capacity: number,
    readonly queue: number,
  ) {}

  take(key: string, now: number = performance.now()): BucketAnswer {
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      if (++this.#created % SWEEP_EVERY === 0) this.#sweep(now);
      bucket = { tokens: this.capacity, at: now };
      this.#buckets.set(key, bucket);
    } else {
      bucket.tokens = Math.min(this.capacity, bucket.tokens + ((now - bucket.at) / 1000) * this.rate);
      bucket.at = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { kind: 'now' };
    }
    if (bucket.tokens - 1 < -this.queue) return { kind: 'limited' };
    bucket.tokens -= 1;
    return { kind: 'wait', waitMs: (-bucket.tokens / this.rate) * 1000 };
  }

  get size(): number {
    return this.#buckets.size;
  }

  #sweep(now: number): void {
    for (const [key, bucket] of this.#buckets) {
      if (bucket.tokens + ((now - bucket.at) / 1000) * this.rate >= this.capacity) this.#buckets.delete(key);
    }
  }
}
