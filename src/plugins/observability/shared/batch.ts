/** How a sender groups entries; built once from the BATCH keys. */
export interface BatchSettings {
  /** Ship as soon as this many entries wait. */
  readonly maxSize: number;
  /** Ship when no entry arrived for this long. */
  readonly inactiveMs: number;
  /** Ship when the oldest waiting entry is this old, however busy the node is. */
  readonly bufferDurationMs: number;
  /** Further attempts after a failed shipment before its entries are dropped. */
  readonly maxRetries: number;
  readonly retryDelayMs: number;
  /** Entries held while waiting; past it the oldest is dropped for the newest. */
  readonly maxPending: number;
}

/** Delivers one batch; rejects to have it retried (per `maxRetries`) or dropped. */
export type Ship<T> = (batch: T[]) => Promise<void>;

/** A failure no retry can fix (a 4xx answer, a rejected payload): the batch is dropped at once. */
export class Undeliverable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Undeliverable';
  }
}

export interface BatchStats {
  /** Entries waiting for a shipment. */
  readonly pending: number;
  readonly sent: number;
  /** Entries pushed out of a full buffer. */
  readonly dropped: number;
  /** Entries of shipments that failed for good. */
  readonly failed: number;
}

/** Told about losses; the sender calls it at most once per `WARN_INTERVAL_MS` per kind. */
export type LossReport = (kind: 'dropped' | 'failed', count: number, error?: Error) => void;

const WARN_INTERVAL_MS = 10_000;
/** Shutdown and reload wait this long at most for the last entries to leave. */
const CLOSE_GRACE_MS = 5_000;

/**
 * Collects entries and ships them in the background: a full batch at once,
 * otherwise after `inactiveMs` of quiet or `bufferDurationMs` of age. `push`
 * is synchronous and never throws or waits; one shipment is in flight at a
 * time, and when the buffer is full the oldest entry makes room. Timers are
 * unref'd: a sender never keeps the process alive.
 */
export class BatchSender<T> {
  readonly #settings: BatchSettings;
  readonly #ship: Ship<T>;
  readonly #report: LossReport;
  /** Waiting entries live in `#queue[#head…]`; the dead prefix is compacted now and then. */
  #queue: T[] = [];
  #head = 0;
  #timer: NodeJS.Timeout | null = null;
  /** When the armed timer fires (`performance.now()` scale). */
  #timerAt = 0;
  #lastPush = 0;
  #oldest = 0;
  #shipping: Promise<void> | null = null;
  #closed = false;
  #abandoned = false;
  #sent = 0;
  #dropped = 0;
  #failed = 0;
  readonly #lastWarn = { dropped: -Infinity, failed: -Infinity };
  readonly #unreported = { dropped: 0, failed: 0 };

  constructor(settings: BatchSettings, ship: Ship<T>, report: LossReport) {
    this.#settings = settings;
    this.#ship = ship;
    this.#report = report;
  }

  get stats(): BatchStats {
    return { pending: this.#pending, sent: this.#sent, dropped: this.#dropped, failed: this.#failed };
  }

  push(entry: T): void {
    if (this.#closed) return;
    const now = performance.now();
    if (this.#pending === 0) this.#oldest = now;
    if (this.#pending >= this.#settings.maxPending) {
      this.#head++;
      this.#dropped++;
      this.#loss('dropped', 1);
    }
    this.#queue.push(entry);
    this.#lastPush = now;
    if (this.#shipping !== null) return;
    if (this.#pending >= this.#settings.maxSize) {
      if (this.#timer === null || this.#timerAt > now) this.#arm(0);
    } else if (this.#timer === null) this.#arm(this.#firstWait);
  }

  /** Ships what is left (without retries) and stops; resolves within a bounded grace period. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#disarm();
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_GRACE_MS);
      timer.unref();
    });
    await Promise.race([this.#drain(), grace]);
    clearTimeout(timer);
    // Past the grace period whatever still waits is given up, not shipped behind our back.
    this.#abandoned = true;
  }

  /** The earliest a batch that just started can be due. */
  get #firstWait(): number {
    return Math.min(this.#settings.inactiveMs, this.#settings.bufferDurationMs);
  }

  get #pending(): number {
    return this.#queue.length - this.#head;
  }

  async #drain(): Promise<void> {
    if (this.#shipping !== null) await this.#shipping;
    while (this.#pending > 0 && !this.#abandoned) await this.#shipBatch(0);
  }

  #arm(delayMs: number): void {
    this.#disarm();
    this.#timerAt = performance.now() + delayMs;
    this.#timer = setTimeout(onTimer, delayMs, this);
    this.#timer.unref();
  }

  #disarm(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
  }

  /** The timer fired: ship if the batch is due, else sleep until it is. */
  tick(): void {
    this.#timer = null;
    if (this.#closed || this.#shipping !== null || this.#pending === 0) return;
    const { maxSize, inactiveMs, bufferDurationMs } = this.#settings;
    const due = Math.min(this.#lastPush + inactiveMs, this.#oldest + bufferDurationMs);
    const wait = due - performance.now();
    if (this.#pending < maxSize && wait > 1) {
      this.#arm(wait);
      return;
    }
    this.#shipping = this.#shipBatch(this.#settings.maxRetries).finally(() => {
      this.#shipping = null;
      if (this.#closed || this.#pending === 0) return;
      // What arrived meanwhile starts a new batch.
      this.#oldest = performance.now();
      this.#arm(this.#pending >= maxSize ? 0 : this.#firstWait);
    });
  }

  async #shipBatch(retries: number): Promise<void> {
    const batch = this.#take();
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#ship(batch);
        this.#sent += batch.length;
        return;
      } catch (err) {
        const error = err instanceof Error ? err : new Error(String(err));
        if (attempt >= retries || error instanceof Undeliverable) {
          this.#failed += batch.length;
          this.#loss('failed', batch.length, error);
          return;
        }
        await pause(this.#settings.retryDelayMs);
      }
    }
  }

  #take(): T[] {
    const end = Math.min(this.#head + this.#settings.maxSize, this.#queue.length);
    const batch = this.#queue.slice(this.#head, end);
    this.#head = end;
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    return batch;
  }

  #loss(kind: 'dropped' | 'failed', count: number, error?: Error): void {
    this.#unreported[kind] += count;
    const now = performance.now();
    if (now - this.#lastWarn[kind] < WARN_INTERVAL_MS) return;
    this.#lastWarn[kind] = now;
    const total = this.#unreported[kind];
    this.#unreported[kind] = 0;
    this.#report(kind, total, error);
  }
}

function onTimer<T>(sender: BatchSender<T>): void {
  sender.tick();
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
