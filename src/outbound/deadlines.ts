/** Something with a deadline; the queue links it in place, so arming one allocates nothing. */
export interface Deadlined {
  deadlineAt: number;
  deadlinePrev: Deadlined | null;
  deadlineNext: Deadlined | null;
  /** Called once when the deadline passes while still queued. */
  expire(): void;
}

/**
 * Deadlines that all run for the same `ms`, so each new one expires last: a
 * linked list in expiry order under one timer. Arming and clearing are two
 * pointer updates, where a `setTimeout`/`clearTimeout` pair per upstream
 * exchange cost a few percent of a proxied request.
 */
export class DeadlineQueue {
  readonly #ms: number;
  #head: Deadlined | null = null;
  #tail: Deadlined | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(ms: number) {
    this.#ms = ms;
  }

  add(item: Deadlined): void {
    item.deadlineAt = Date.now() + this.#ms;
    item.deadlinePrev = this.#tail;
    item.deadlineNext = null;
    if (this.#tail === null) this.#head = item;
    else this.#tail.deadlineNext = item;
    this.#tail = item;
    if (this.#timer === null) this.#arm(this.#ms);
  }

  /** Takes `item` out; harmless when it is not queued (already expired or removed). */
  remove(item: Deadlined): void {
    const { deadlinePrev: prev, deadlineNext: next } = item;
    if (prev === null && this.#head !== item) return;
    if (prev === null) this.#head = next;
    else prev.deadlineNext = next;
    if (next === null) this.#tail = prev;
    else next.deadlinePrev = prev;
    item.deadlinePrev = item.deadlineNext = null;
  }

  #arm(delay: number): void {
    this.#timer = setTimeout(this.#fire, Math.max(1, delay));
    this.#timer.unref();
  }

  readonly #fire = (): void => {
    this.#timer = null;
    const now = Date.now();
    let item = this.#head;
    while (item !== null && item.deadlineAt <= now) {
      this.remove(item);
      item.expire();
      item = this.#head;
    }
    if (item !== null) this.#arm(item.deadlineAt - now);
  };
}

const queues = new Map<number, DeadlineQueue>();

/** The shared queue for deadlines of `ms` (one per distinct upstream timeout). */
export function deadlineQueue(ms: number): DeadlineQueue {
  let queue = queues.get(ms);
  if (queue === undefined) {
    queue = new DeadlineQueue(ms);
    queues.set(ms, queue);
  }
  return queue;
}
