import type { Logger } from '../../core/logger.js';

/** One backend a discovery source found. `priority`: lower is preferred (SRV); 0 elsewhere. */
export interface DiscoveredTarget {
  readonly host: string;
  readonly port: number;
  readonly weight: number;
  readonly priority: number;
}

/** What one successful look-up found and when to look again. */
export interface Answer {
  readonly targets: readonly DiscoveredTarget[];
  /** Delay before the next look-up (the clamped TTL, the poll interval; 0 for a blocking query). */
  readonly nextMs: number;
}

/** Told each time the set of targets changes (and once on subscribing, when an answer is known). */
export type TargetsListener = (targets: readonly DiscoveredTarget[]) => void;

/** First retry after a failure; doubled on each further one up to the source's own interval. */
const FIRST_RETRY_MS = 1000;

/**
 * A background look-up loop shared by every upstream node with the same `discovery:` block
 * (./registry.ts): asks, publishes a changed answer, waits, asks again. A failure (resolver or
 * registry unreachable, an error answer, an empty answer) keeps the last good targets, is
 * counted in `errors` and logged once until the next success; retries back off from 1 s up to
 * `maxRetryMs`. Timers do not keep the process alive.
 */
export abstract class DiscoverySource {
  /** The `source` label of the metrics: `<type>:<name>`. */
  readonly label: string;
  #targets: readonly DiscoveredTarget[] | null = null;
  #key = '';
  #errors = 0;
  #failing = false;
  #retryMs = FIRST_RETRY_MS;
  #timer: NodeJS.Timeout | null = null;
  readonly #listeners = new Set<TargetsListener>();
  readonly #abort = new AbortController();
  readonly #logger: Logger;
  #started = false;

  protected constructor(label: string, logger: Logger) {
    this.label = label;
    this.#logger = logger;
  }

  /** The last good answer; null until the first one. */
  get targets(): readonly DiscoveredTarget[] | null {
    return this.#targets;
  }

  /** Failed look-ups so far (`gateway_discovery_errors_total`). */
  get errors(): number {
    return this.#errors;
  }

  get stopped(): boolean {
    return this.#abort.signal.aborted;
  }

  /** Listens for changes; the first subscriber starts the loop. Returns the unsubscribe function. */
  subscribe(listener: TargetsListener): () => void {
    this.#listeners.add(listener);
    if (this.#targets !== null) listener(this.#targets);
    if (!this.#started) {
      this.#started = true;
      this.#schedule(0);
    }
    return () => this.#listeners.delete(listener);
  }

  get subscribers(): number {
    return this.#listeners.size;
  }

  stop(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#abort.abort();
  }

  /** One look-up; rejects on failure. `signal` aborts when the source stops. */
  protected abstract lookup(signal: AbortSignal): Promise<Answer>;

  /** The longest wait between retries after failures (the source's normal interval). */
  protected abstract get maxRetryMs(): number;

  #schedule(delayMs: number): void {
    if (this.stopped) return;
    this.#timer = setTimeout(() => void this.#run(), delayMs);
    this.#timer.unref();
  }

  async #run(): Promise<void> {
    this.#timer = null;
    let answer: Answer;
    try {
      answer = await this.lookup(this.#abort.signal);
      if (answer.targets.length === 0) throw new Error('the answer has no targets');
    } catch (err) {
      if (this.stopped) return;
      this.#errors++;
      if (!this.#failing) {
        this.#failing = true;
        this.#logger.warn(
          { source: this.label, error: (err as Error).message, kept: this.#targets?.length ?? 0 },
          'service discovery failed; keeping the last targets',
        );
      }
      const delay = this.#retryMs;
      this.#retryMs = Math.min(this.#retryMs * 2, Math.max(FIRST_RETRY_MS, this.maxRetryMs));
      this.#schedule(delay);
      return;
    }
    if (this.stopped) return;
    if (this.#failing) {
      this.#failing = false;
      this.#logger.info(
        { source: this.label, targets: answer.targets.length },
        'service discovery recovered',
      );
    }
    this.#retryMs = FIRST_RETRY_MS;
    const sorted = [...answer.targets].sort(compareTargets);
    const key = JSON.stringify(sorted);
    if (key !== this.#key) {
      this.#key = key;
      this.#targets = sorted;
      this.#logger.info({ source: this.label, targets: sorted.length }, 'service discovery targets changed');
      for (const listener of [...this.#listeners]) listener(sorted);
    }
    this.#schedule(answer.nextMs);
  }
}

function compareTargets(a: DiscoveredTarget, b: DiscoveredTarget): number {
  return (
    a.priority - b.priority ||
    (a.host < b.host ? -1 : a.host > b.host ? 1 : 0) ||
    a.port - b.port ||
    a.weight - b.weight
  );
}

/** Rejects when `signal` aborts; for waits inside a look-up. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('stopped'));
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(new Error('stopped'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
