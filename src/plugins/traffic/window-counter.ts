import type { StoreLayout } from '../../config/compat-names.js';
import type { Store } from '../../stores/index.js';

/** One request counted against a fixed window. */
export interface WindowResult {
  allowed: boolean;
  /** Requests still allowed in this window (0 when rejected). */
  remaining: number;
  /** Whole seconds until the window resets, rounded up. */
  resetSeconds: number;
}

/**
 * A fixed-window counter backend. The local one answers synchronously; a store
 * one answers with a promise that rejects (StoreError) when the store fails.
 */
export interface WindowCounter {
  take(key: string, limit: number, windowMs: number): WindowResult | Promise<WindowResult>;
}

/** Sweep expired windows after this many new keys, so a churning key space stays bounded. */
const SWEEP_EVERY = 1024;

/**
 * In-process windows, shared by every local limit node of one gateway
 * (keys carry the node's namespace). A window opens on its key's first
 * request and lasts `windowMs`; a rejected request is not counted.
 */
export class LocalWindowCounters implements WindowCounter {
  readonly #windows = new Map<string, { count: number; resetAt: number }>();
  #created = 0;

  take(key: string, limit: number, windowMs: number, now: number = Date.now()): WindowResult {
    let window = this.#windows.get(key);
    if (window === undefined || now >= window.resetAt) {
      if (window === undefined && ++this.#created % SWEEP_EVERY === 0) this.#sweep(now);
      window = { count: 0, resetAt: now + windowMs };
      this.#windows.set(key, window);
    }
    const resetSeconds = Math.ceil((window.resetAt - now) / 1000);
    if (window.count >= limit) return { allowed: false, remaining: 0, resetSeconds };
    window.count++;
    return { allowed: true, remaining: limit - window.count, resetSeconds };
  }

  /** Number of live windows (tests). */
  get size(): number {
    return this.#windows.size;
  }

  #sweep(now: number): void {
    for (const [key, window] of this.#windows) if (now >= window.resetAt) this.#windows.delete(key);
  }
}

/**
 * One round trip, atomic on the server: a key without a TTL (absent, or left
 * without expiry) opens a new window; a full window answers without counting.
 * Replies `{allowed 0|1, count, pttl}`.
 */
const FIXED_WINDOW_SCRIPT = `
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('SET', KEYS[1], 1, 'PX', ARGV[2])
  return {1, 1, tonumber(ARGV[2])}
end
local current = tonumber(redis.call('GET', KEYS[1]))
if current == nil or current >= tonumber(ARGV[1]) then
  return {0, current or 0, ttl}
end
return {1, redis.call('INCR', KEYS[1]), ttl}
`;

/**
 * Windows kept in a named store, so every gateway process sharing it enforces
 * one limit. Our layout opens a window on a key's first request
 * (`cnt:<key>`); the reference's (`compat.store_layout: reference`) aligns
 * windows to the wall clock, `cnt:<now / window>:<key>`, so counters a
 * reference deployment wrote keep counting.
 */
export class StoreWindowCounter implements WindowCounter {
  constructor(
    readonly store: Store,
    readonly layout: StoreLayout = 'switchyard',
  ) {}

  async take(key: string, limit: number, windowMs: number): Promise<WindowResult> {
    let storeKey = `cnt:${key}`;
    let windowLeftMs = windowMs;
    if (this.layout === 'reference') {
      const now = Date.now();
      const slot = Math.floor(now / windowMs);
      storeKey = `cnt:${slot}:${key}`;
      windowLeftMs = (slot + 1) * windowMs - now;
    }
    const reply = await this.store.eval(FIXED_WINDOW_SCRIPT, [storeKey], [limit, windowLeftMs]);
    if (!Array.isArray(reply) || reply.length !== 3) {
      throw new Error(`store '${this.store.name}': unexpected reply from the fixed-window script`);
    }
    const [allowed, count, pttl] = (reply as unknown[]).map(Number) as [number, number, number];
    return {
      allowed: allowed === 1,
      remaining: allowed === 1 ? Math.max(0, limit - count) : 0,
      resetSeconds: Math.ceil(Math.max(0, pttl) / 1000),
    };
  }
}
