import type { Context } from '../engine/context.js';
import type { CachedResponse, ResponseCache } from '../plugins/cache/response-cache.js';
import type { SlotTable } from '../plugins/limits/concurrency.js';
import { TokenBuckets, type BucketAnswer } from '../plugins/limits/token-buckets.js';
import type { WindowCounter, WindowResult } from '../plugins/limits/window-counter.js';
import type { PrimaryChannel } from './primary-channel.js';

/**
 * The `wrapShared` of a worker's gateway scope: the local counters and cache
 * every `policy: local` node shares are replaced by proxies to the primary's,
 * so a limit of 10 admits 10 across all workers. Keys are the ones the plugins
 * use (src/plugins/limits/*, src/plugins/cache/proxy-cache.ts); any other
 * shared value stays per worker.
 */
export function workerSharedState(channel: PrimaryChannel): (key: string, local: unknown) => unknown {
  return (key, local) => {
    if (key === 'limits.fixed-window') return windowCounter(channel);
    if (key === 'limits.concurrency') return new WorkerSlotTable(channel);
    if (key === 'proxy-cache.local') return responseCache(channel);
    if (key.startsWith('limits.rate-limit:') && local instanceof TokenBuckets)
      return tokenBuckets(channel, key, local);
    return local;
  };
}

function windowCounter(channel: PrimaryChannel): WindowCounter {
  return {
    take: (key, limit, windowMs) => channel.call<WindowResult>(['fw', key, limit, windowMs]),
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

function responseCache(channel: PrimaryChannel): ResponseCache {
  return {
    backend: 'local',
    store: '',
    async get(key) {
      const entry = await channel.call<CachedResponse | undefined>(['cg', key]);
      if (entry === undefined) return undefined;
      // The structured clone hands bytes back as a Uint8Array.
      const body = entry.body as Uint8Array;
      return { ...entry, body: Buffer.from(body.buffer, body.byteOffset, body.byteLength) };
    },
    put(key, entry, ttlSeconds) {
      channel.notify(['cp', key, entry, ttlSeconds]);
    },
    purge: (id) => channel.call<number>(['cx', id]),
  };
}

interface Slot {
  readonly key: string;
  released: boolean;
}

/**
 * limit-conn slots counted by the primary. The worker remembers which slots a
 * request holds (as the local table does) so the release node, or the
 * collector for a request dropped on an unwired path, gives back exactly those.
 */
class WorkerSlotTable implements SlotTable {
  readonly #channel: PrimaryChannel;
  readonly #held = new WeakMap<Context, Slot[]>();
  readonly #orphans = new FinalizationRegistry<Slot>((slot) => this.#free(slot));

  constructor(channel: PrimaryChannel) {
    this.#channel = channel;
  }

  async acquire(ctx: Context, key: string, ceiling: number): Promise<boolean> {
    if (!(await this.#channel.call<boolean>(['cc+', key, ceiling]))) return false;
    const slot: Slot = { key, released: false };
    const list = this.#held.get(ctx);
    if (list === undefined) this.#held.set(ctx, [slot]);
    else list.push(slot);
    this.#orphans.register(ctx, slot, slot);
    return true;
  }

  release(ctx: Context, prefix: string): void {
    const list = this.#held.get(ctx);
    if (list === undefined) return;
    for (const slot of list) {
      if (slot.released || !slot.key.startsWith(prefix)) continue;
      this.#orphans.unregister(slot);
      this.#free(slot);
    }
  }

  #free(slot: Slot): void {
    if (slot.released) return;
    slot.released = true;
    this.#channel.notify(['cc-', slot.key]);
  }
}
