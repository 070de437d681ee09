import type { GatewayScope } from '../plugins/define.js';
import { LocalResponseCache } from '../plugins/cache/local-cache.js';
import { TokenBuckets } from '../plugins/limits/token-buckets.js';
import { LocalWindowCounters } from '../plugins/limits/window-counter.js';
import type { SharedCall } from './protocol.js';

/**
 * The primary's side of the gateway-wide counters: it runs the workers' calls
 * against the same local backends a single process uses, kept in the primary
 * gateway's scope under the plugins' own keys — so the Admin API's cache purge
 * and debug sandbox (which run in the primary) see the same state.
 */
export class SharedService {
  readonly #scope: GatewayScope;
  /** limit-conn slots held, per key, and per worker (given back when a worker dies). */
  readonly #slots = new Map<string, number>();
  readonly #heldBy = new Map<number, Map<string, number>>();

  constructor(scope: GatewayScope) {
    this.#scope = scope;
  }

  /** Runs one batch; answers in call order. A purge answers later, so the batch may be a promise. */
  run(worker: number, calls: SharedCall[]): [number, unknown][] | Promise<[number, unknown][]> {
    const replies: [number, unknown][] = [];
    let later: Promise<unknown>[] | undefined;
    for (const call of calls) {
      const value = this.#one(worker, call);
      if (call[0] === 0) continue;
      if (value instanceof Promise) {
        const at = replies.length;
        replies.push([call[0], undefined]);
        (later ??= []).push(
          (value as Promise<unknown>).then((v: unknown) => {
            (replies[at] as [number, unknown])[1] = v;
          }),
        );
      } else replies.push([call[0], value]);
    }
    return later === undefined ? replies : Promise.all(later).then(() => replies);
  }

  /** A worker exited: the slots its requests held are free again. */
  workerGone(worker: number): void {
    const held = this.#heldBy.get(worker);
    this.#heldBy.delete(worker);
    if (held === undefined) return;
    for (const [key, n] of held) this.#adjust(key, -n);
  }

  /** Slots held under `key` across the gateway (tests, docs). */
  slots(key: string): number {
    return this.#slots.get(key) ?? 0;
  }

  #one(worker: number, call: SharedCall): unknown {
    switch (call[1]) {
      case 'fw':
        return this.#windows().take(call[2], call[3], call[4]);
      case 'tb': {
        const [, , shared, rate, capacity, queue, key] = call;
        return this.#scope.shared(shared, () => new TokenBuckets(rate, capacity, queue)).take(key);
      }
      case 'cc+': {
        const [, , key, ceiling] = call;
        if (this.slots(key) >= ceiling) return false;
        this.#adjust(key, 1);
        const held = this.#heldBy.get(worker) ?? new Map<string, number>();
        this.#heldBy.set(worker, held);
        held.set(key, (held.get(key) ?? 0) + 1);
        return true;
      }
      case 'cc-': {
        const key = call[2];
        const held = this.#heldBy.get(worker);
        const n = held?.get(key) ?? 0;
        if (n <= 0) return undefined;
        if (n === 1) held?.delete(key);
        else held?.set(key, n - 1);
        this.#adjust(key, -1);
        return undefined;
      }
      case 'cg': {
        const entry = this.#cache().get(call[2]);
        return entry === undefined ? undefined : { ...entry, body: entry.body.toString('base64') };
      }
      case 'cp': {
        const entry = call[3];
        this.#cache().put(call[2], { ...entry, body: Buffer.from(entry.body, 'base64') }, call[4]);
        return undefined;
      }
      case 'cx':
        return this.#cache().purge(call[2]);
    }
  }

  #adjust(key: string, delta: number): void {
    const next = (this.#slots.get(key) ?? 0) + delta;
    if (next <= 0) this.#slots.delete(key);
    else this.#slots.set(key, next);
  }

  // The same keys and constructors as src/plugins/limits/fixed-window.ts and src/plugins/cache/proxy-cache.ts.
  #windows(): LocalWindowCounters {
    return this.#scope.shared('limits.fixed-window', () => new LocalWindowCounters());
  }

  #cache(): LocalResponseCache {
    const scope = this.#scope;
    return scope.shared(
      'proxy-cache.local',
      () => new LocalResponseCache(scope.cacheMaxEntries, scope.metrics),
    );
  }
}
