import type { GatewayScope } from '../core/plugin.js';
import { LocalTokenCounter } from '../plugins/ai/ai-rate-limit-counter.js';
import { LocalResponseCache } from '../plugins/traffic/local-cache.js';
import { TokenBuckets } from '../plugins/traffic/token-buckets.js';
import { LocalWindowCounters } from '../plugins/traffic/window-counter.js';
import type { LeasedWindow, SharedCall } from './protocol.js';

/**
 * The primary's side of the gateway-wide counters: it runs the workers' calls
 * against the same local backends a single process uses, kept in the primary
 * gateway's scope under the plugins' own keys — so the Admin API's cache purge
 * and debug sandbox (which run in the primary) see the same state.
 */
/** Most admissions one lease hands a worker. */
const LEASE_MAX = 64;

/** Leases of one fixed window: what each worker was handed, and what was given back. */
interface WindowLeases {
  /** The lease horizon: at most the window's reset (a new window starts with no leases). */
  until: number;
  held: Map<number, number>;
  /** Admissions given back by a reclaim, handed out again before the window is refused. */
  pool: number;
}

/** Asks worker `worker` to give back its unused admissions of window `key`; resolves with how many. */
export type Reclaim = (worker: number, key: string) => Promise<number>;

export class SharedService {
  readonly #scope: GatewayScope;
  readonly #workers: number;
  readonly #reclaim: Reclaim;
  readonly #leases = new Map<string, WindowLeases>();
  /** Windows whose leases are being reclaimed: their calls wait for it. */
  readonly #reclaiming = new Map<string, Promise<void>>();
  /** limit-conn slots held, per key, and per worker (given back when a worker dies). */
  readonly #slots = new Map<string, number>();
  readonly #heldBy = new Map<number, Map<string, number>>();

  constructor(scope: GatewayScope, workers = 1, reclaim: Reclaim = () => Promise.resolve(0)) {
    this.#scope = scope;
    this.#workers = workers;
    this.#reclaim = reclaim;
  }

  /** Runs one batch; answers in call order. A purge answers later, so the batch may be a promise. */
  run(worker: number, calls: SharedCall[]): [number, unknown][] | Promise<[number, unknown][]> {
    const replies: [number, unknown][] = [];
    let later: Promise<unknown>[] | undefined;
    const batch = new Map<string, LeasedWindow>();
    for (const call of calls) {
      const value =
        call[1] === 'fw' ? this.#window(worker, call[2], call[3], call[4], batch) : this.#one(worker, call);
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
    // Its leased admissions are lost with it (never handed out twice).
    for (const leases of this.#leases.values()) leases.held.delete(worker);
    const held = this.#heldBy.get(worker);
    this.#heldBy.delete(worker);
    if (held === undefined) return;
    for (const [key, n] of held) this.#adjust(key, -n);
  }

  /** Slots held under `key` across the gateway (tests, docs). */
  slots(key: string): number {
    return this.#slots.get(key) ?? 0;
  }

  /**
   * One request against a fixed window, answered with a lease of further
   * admissions when plenty remain: the window is counted here, exactly, and a
   * lease only hands out admissions already counted, so the limit holds across
   * workers. A full window first hands out admissions given back, then
   * reclaims unused leases from the workers holding them before it refuses.
   * `batch` holds this message's earlier answers, whose leases are not yet
   * delivered (a refusal takes from those first). See docs/workers.md.
   */
  #window(
    worker: number,
    key: string,
    limit: number,
    windowMs: number,
    batch: Map<string, LeasedWindow> | undefined,
  ): LeasedWindow | Promise<LeasedWindow> {
    const pending = this.#reclaiming.get(key);
    if (pending !== undefined)
      return pending.then(() => this.#window(worker, key, limit, windowMs, undefined));
    const now = Date.now();
    const windows = this.#windows();
    const result = windows.take(key, limit, windowMs, now);
    let leases = this.#leases.get(key);
    if (leases !== undefined && now >= leases.until) {
      this.#leases.delete(key);
      leases = undefined;
    }
    // The reset is known to the second: leases end a second early, so none outlives its window.
    // One horizon per window, so a worker adds a second lease to its first.
    const until = leases?.until ?? now + (result.resetSeconds - 1) * 1000;
    if (result.allowed) {
      const answer: LeasedWindow = { ...result, lease: 0, until };
      let extra = until > now ? Math.min(LEASE_MAX, Math.floor(result.remaining / (4 * this.#workers))) : 0;
      while (extra-- > 0) {
        const more = windows.take(key, limit, windowMs, now);
        if (!more.allowed) break;
        answer.lease++;
        answer.remaining = more.remaining;
      }
      if (answer.lease > 0) {
        leases ??= { until, held: new Map(), pool: 0 };
        this.#leases.set(key, leases);
        leases.held.set(worker, (leases.held.get(worker) ?? 0) + answer.lease);
        batch?.set(key, answer);
      }
      return answer;
    }
    const admitted: LeasedWindow = {
      allowed: true,
      remaining: 0,
      resetSeconds: result.resetSeconds,
      lease: 0,
      until,
    };
    if (leases === undefined) return { ...result, lease: 0, until };
    if (leases.pool > 0) {
      leases.pool--;
      return admitted;
    }
    // A lease granted earlier in this message has not reached the worker: take one back from it.
    const own = batch?.get(key);
    if (own !== undefined && own.lease > 0) {
      own.lease--;
      const held = (leases.held.get(worker) ?? 1) - 1;
      if (held > 0) leases.held.set(worker, held);
      else leases.held.delete(worker);
      return admitted;
    }
    const holders = [...leases.held.keys()];
    if (holders.length === 0) return { ...result, lease: 0, until };
    const window = leases;
    const reclaim = Promise.all(
      holders.map((holder) =>
        this.#reclaim(holder, key).then(
          (n) => {
            window.held.delete(holder);
            window.pool += n;
          },
          () => window.held.delete(holder),
        ),
      ),
    ).then(() => {
      this.#reclaiming.delete(key);
    });
    this.#reclaiming.set(key, reclaim);
    return reclaim.then(() => this.#window(worker, key, limit, windowMs, undefined));
  }

  #one(worker: number, call: SharedCall): unknown {
    switch (call[1]) {
      case 'fw':
        return this.#window(worker, call[2], call[3], call[4], undefined);
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
      case 'tk?':
        return this.#tokens().peek(call[2], call[3]);
      case 'tk+':
        return this.#tokens().add(call[2], call[3], call[4]);
      case 'tk!':
        return this.#tokens().reserve(call[2], call[3], call[4], call[5]);
    }
  }

  #adjust(key: string, delta: number): void {
    const next = (this.#slots.get(key) ?? 0) + delta;
    if (next <= 0) this.#slots.delete(key);
    else this.#slots.set(key, next);
  }

  // The same keys and constructors as src/plugins/traffic/fixed-window.ts and src/plugins/traffic/proxy-cache.ts.
  #windows(): LocalWindowCounters {
    return this.#scope.shared('limits.fixed-window', () => new LocalWindowCounters());
  }

  // The same key and constructor as src/plugins/ai/ai-rate-limit.ts: one budget per key across workers.
  #tokens(): LocalTokenCounter {
    return this.#scope.shared('ai.token-windows', () => new LocalTokenCounter());
  }

  #cache(): LocalResponseCache {
    const scope = this.#scope;
    return scope.shared(
      'proxy-cache.local',
      () => new LocalResponseCache(scope.cacheMaxEntries, scope.metrics),
    );
  }
}
