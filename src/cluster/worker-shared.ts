import type { Context } from '../core/context.js';
import type { CachedResponse, ResponseCache } from '../plugins/traffic/response-cache.js';
import {
  LocalTokenCounter,
  type Reserved,
  type TokenCounter,
  type TokenWindow,
} from '../plugins/ai/ai-rate-limit-counter.js';
import { HeldSlots, type SlotTable } from '../plugins/traffic/concurrency.js';
import { TokenBuckets, type BucketAnswer } from '../plugins/traffic/token-buckets.js';
import type { WindowCounter, WindowResult } from '../plugins/traffic/window-counter.js';
import type { PrimaryChannel } from './primary-channel.js';
import type { LeasedWindow, WireResponse } from './protocol.js';

/**
 * The `wrapShared` of a worker's gateway scope: the local counters and cache
 * every `policy: local` node shares are replaced by proxies to the primary's,
 * so a limit of 10 admits 10 across all workers. Keys are the ones the plugins
 * use (the limits and proxy-cache of src/plugins/traffic/, ai-rate-limit's token
 * windows); any other shared value stays per worker.
 */
export function workerSharedState(
  channel: PrimaryChannel,
  leases: WindowLeases = new WindowLeases(),
): (key: string, local: unknown) => unknown {
  return (key, local) => {
    if (key === 'limits.fixed-window') return windowCounter(channel, leases);
    if (key === 'limits.concurrency') return new WorkerSlotTable(channel);
    if (key === 'proxy-cache.local') return responseCache(channel);
    if (key === 'ai.token-windows' && local instanceof LocalTokenCounter) return tokenCounter(channel);
    if (key.startsWith('limits.rate-limit:') && local instanceof TokenBuckets)
      return tokenBuckets(channel, key, local);
    return local;
  };
}

interface Lease {
  limit: number;
  /** Admissions left to hand out. */
  left: number;
  /** The window's remaining count when the primary granted it (other workers' use is not seen). */
  remaining: number;
  /** Epoch ms after which the lease is void (at most the window's reset). */
  until: number;
}

/**
 * A worker's leases of fixed windows: admissions the primary already counted
 * and handed to this worker, used without a round trip (docs/workers.md).
 */
export class WindowLeases {
  readonly #leases = new Map<string, Lease>();

  /** One admission from the lease of `key`, or undefined when there is none to take. */
  take(key: string, limit: number, now: number): WindowResult | undefined {
    const lease = this.#leases.get(key);
    if (lease === undefined) return undefined;
    if (lease.limit !== limit || now >= lease.until) {
      // A reload changed the limit, or the window is ending: ask the primary again.
      this.#leases.delete(key);
      return undefined;
    }
    if (lease.left === 0) return undefined;
    lease.left--;
    if (lease.left === 0) this.#leases.delete(key);
    return {
      allowed: true,
      remaining: lease.remaining + lease.left,
      resetSeconds: Math.ceil((lease.until - now) / 1000) + 1,
    };
  }

  add(key: string, limit: number, answer: LeasedWindow): void {
    if (answer.lease <= 0) return;
    const lease = this.#leases.get(key);
    if (lease !== undefined && lease.limit === limit && Date.now() < lease.until) {
      lease.until = Math.min(lease.until, answer.until);
      lease.left += answer.lease;
      lease.remaining = answer.remaining;
    } else
      this.#leases.set(key, { limit, left: answer.lease, remaining: answer.remaining, until: answer.until });
  }

  /** The primary needs them for another worker: gives back (and forgets) the unused admissions of `key`. */
  reclaim(key: string): number {
    const lease = this.#leases.get(key);
    this.#leases.delete(key);
    return lease === undefined || Date.now() >= lease.until ? 0 : lease.left;
  }
}

/**
 * Fixed windows counted by the primary. Most requests are admitted from a
 * lease (admissions the primary counted and handed over) without a round trip.
 * A window the primary reports full stays full until it resets (rejections are
 * not counted, and unused leases were reclaimed before it refused), so the
 * worker answers those rejections itself, exactly: a flood over the limit
 * costs no IPC either.
 */
function windowCounter(channel: PrimaryChannel, leases: WindowLeases): WindowCounter {
  const full = new Map<string, number>();
  let sweepAt = 0;
  return {
    take(key, limit, windowMs) {
      const now = Date.now();
      const leased = leases.take(key, limit, now);
      if (leased !== undefined) return leased;
      // A reload may raise the limit: a window full at 5 is not full at 10.
      const fullKey = `${limit}\u0000${key}`;
      const resetAt = full.get(fullKey);
      if (resetAt !== undefined) {
        if (now < resetAt)
          return { allowed: false, remaining: 0, resetSeconds: Math.ceil((resetAt - now) / 1000) };
        full.delete(fullKey);
      }
      if (now >= sweepAt) {
        sweepAt = now + 60_000;
        for (const [k, at] of full) if (at <= now) full.delete(k);
      }
      return channel.call<LeasedWindow>(['fw', key, limit, windowMs]).then((answer) => {
        leases.add(key, limit, answer);
        // Within a second of its reset the window may already be open again: ask next time.
        if (!answer.allowed && answer.resetSeconds > 1)
          full.set(fullKey, now + (answer.resetSeconds - 1) * 1000);
        return { allowed: answer.allowed, remaining: answer.remaining, resetSeconds: answer.resetSeconds };
      });
    },
  };
}

function tokenBuckets(
  channel: PrimaryChannel,
  shared: string,
  local: TokenBuckets,
): { take(key: string): Promise<BucketAnswer> } {
  const { rate, capacity, queue } = local;
  return { take: (key) => channel.call<BucketAnswer>(['tb', shared, rate, capacity, queue, key]) };
}

/**
 * ai-rate-limit's token windows counted by the primary: every read before a call
 * and every count after it is one round trip (batched per turn), so all workers
 * spend one budget per key, exactly as one process does (docs/plugins/ai-rate-limit.md#windows).
 * An estimate is checked and counted in one step (`tk!`). Nothing is leased ahead:
 * the tokens a call costs are known only after it.
 */
function tokenCounter(channel: PrimaryChannel): TokenCounter {
  return {
    backend: 'local',
    peek: (key, windowMs) => channel.call<TokenWindow>(['tk?', key, windowMs]),
    add: (key, tokens, windowMs) => channel.call<TokenWindow>(['tk+', key, tokens, windowMs]),
    reserve: (key, tokens, limit, windowMs) => channel.call<Reserved>(['tk!', key, tokens, limit, windowMs]),
  };
}

function responseCache(channel: PrimaryChannel): ResponseCache {
  return {
    backend: 'local',
    store: '',
    async get(key): Promise<CachedResponse | undefined> {
      // The IPC channel is JSON: the primary's `undefined` (a miss) arrives as null.
      const entry = await channel.call<WireResponse | null | undefined>(['cg', key]);
      return entry == null ? undefined : { ...entry, body: Buffer.from(entry.body, 'base64') };
    },
    put(key, entry, ttlSeconds) {
      channel.notify(['cp', key, { ...entry, body: entry.body.toString('base64') }, ttlSeconds]);
    },
    purge: (id) => channel.call<number>(['cx', id]),
  };
}

/**
 * limit-conn slots counted by the primary. The worker remembers which slots a
 * request holds (as the local table does) so the release node, or the
 * collector for a request dropped on an unwired path, gives back exactly those.
 */
class WorkerSlotTable implements SlotTable {
  readonly #channel: PrimaryChannel;
  readonly #slots: HeldSlots;

  constructor(channel: PrimaryChannel) {
    this.#channel = channel;
    this.#slots = new HeldSlots((key) => channel.notify(['cc-', key]));
  }

  async acquire(ctx: Context, key: string, ceiling: number): Promise<boolean> {
    if (!(await this.#channel.call<boolean>(['cc+', key, ceiling]))) return false;
    this.#slots.record(ctx, key);
    return true;
  }

  release(ctx: Context, prefix: string): void {
    this.#slots.release(ctx, prefix);
  }
}
