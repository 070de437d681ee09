import type { Context } from '../../core/context.js';

/** What limit-conn asks of a table: the local one, or a `workers` worker's gateway-wide one. */
export interface SlotTable {
  acquire(ctx: Context, key: string, ceiling: number): boolean | Promise<boolean>;
  release(ctx: Context, prefix: string): void;
}

/** One slot a request holds; released once, by the release node or, failing that, by the collector. */
interface Slot {
  readonly key: string;
  released: boolean;
}

/**
 * The slots each request holds, remembered against its context, so the release node frees exactly
 * what the acquire node took even if the request was rewritten in between. A context that is
 * dropped without passing a release node (an unwired path) gives its slots back when it is
 * collected. `free` gives one slot's count back, once; the local table and a `workers` worker's
 * gateway-wide one share this bookkeeping.
 */
export class HeldSlots {
  readonly #held = new WeakMap<Context, Slot[]>();
  readonly #orphans = new FinalizationRegistry<Slot>((slot) => this.#free(slot));
  readonly #giveBack: (key: string) => void;

  constructor(giveBack: (key: string) => void) {
    this.#giveBack = giveBack;
  }

  /** Remembers that `ctx` now holds a slot under `key`. */
  record(ctx: Context, key: string): void {
    const slot: Slot = { key, released: false };
    const list = this.#held.get(ctx);
    if (list === undefined) this.#held.set(ctx, [slot]);
    else list.push(slot);
    this.#orphans.register(ctx, slot, slot);
  }

  /** Frees the slots this request holds under keys starting with `prefix` (one acquire/release pair). */
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
    this.#giveBack(slot.key);
  }
}

/** In-flight request counts per key, shared by the limit-conn nodes of one gateway. */
export class ConcurrencyTable {
  readonly #counts = new Map<string, number>();
  readonly #slots = new HeldSlots((key) => {
    const next = (this.#counts.get(key) ?? 1) - 1;
    if (next <= 0) this.#counts.delete(key);
    else this.#counts.set(key, next);
  });

  /** Takes a slot unless `ceiling` requests already hold one. */
  acquire(ctx: Context, key: string, ceiling: number): boolean {
    const current = this.#counts.get(key) ?? 0;
    if (current >= ceiling) return false;
    this.#counts.set(key, current + 1);
    this.#slots.record(ctx, key);
    return true;
  }

  /** Frees the slots this request holds under keys starting with `prefix`. */
  release(ctx: Context, prefix: string): void {
    this.#slots.release(ctx, prefix);
  }

  /** Requests currently holding a slot under `key`. */
  count(key: string): number {
    return this.#counts.get(key) ?? 0;
  }
}
