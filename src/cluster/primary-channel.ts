import type { SharedCall, ToPrimary } from './protocol.js';

type Pending = { resolve(value: unknown): void; reject(err: Error): void };

/** Drops the id slot of a call: `call` assigns it. */
type Op<C> = C extends [unknown, ...infer Rest] ? Rest : never;

/**
 * A worker's side of the shared-counter IPC: calls made in one event-loop turn
 * leave in one message, and one message brings their answers back, so a burst
 * of limited requests costs one round trip rather than one each.
 */
export class PrimaryChannel {
  readonly #send: (message: ToPrimary) => void;
  readonly #pending = new Map<number, Pending>();
  #queue: SharedCall[] = [];
  #next = 1;
  #scheduled = false;
  #closed: Error | undefined;

  constructor(send: (message: ToPrimary) => void) {
    this.#send = send;
  }

  call<T>(op: Op<Exclude<SharedCall, [0, ...unknown[]]>>): Promise<T> {
    if (this.#closed !== undefined) return Promise.reject(this.#closed);
    const id = this.#next++;
    this.#queue.push([id, ...op] as SharedCall);
    this.#schedule();
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: (value) => resolve(value as T), reject });
    });
  }

  /** Fire and forget (slot releases, cache stores). */
  notify(op: Op<Extract<SharedCall, [0, ...unknown[]]>>): void {
    if (this.#closed !== undefined) return;
    this.#queue.push([0, ...op] as SharedCall);
    this.#schedule();
  }

  replies(replies: [number, unknown][]): void {
    for (const [id, value] of replies) {
      const pending = this.#pending.get(id);
      if (pending === undefined) continue;
      this.#pending.delete(id);
      pending.resolve(value);
    }
  }

  /** The primary is gone: every waiting request fails (as a store failure would). */
  close(err: Error): void {
    this.#closed = err;
    this.#queue = [];
    for (const pending of this.#pending.values()) pending.reject(err);
    this.#pending.clear();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    const c = this.#queue;
    this.#queue = [];
    if (c.length > 0) this.#send({ t: 'calls', c });
  };
}
