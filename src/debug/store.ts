import type { Trace, TraceSource, TraceSummary } from './trace-types.js';
import { summarize } from './trace-types.js';

/** How much history the buffer holds; sent with every listing so an empty list is never ambiguous. */
export interface Retention {
  max_traces: number;
  /** Traces held now. */
  retained: number;
  /** Traces dropped to make room since startup (a clear is not an eviction). */
  evicted: number;
  /** Sequence number of the oldest trace held; null when empty. */
  oldest_seq: number | null;
  /** True when `limit` cut this listing short. */
  truncated: boolean;
}

export interface TraceFilter {
  route?: string;
  policy?: string;
  status?: number;
  source?: TraceSource;
  limit?: number;
}

/**
 * A fixed-capacity ring of traces, oldest overwritten first. `max_traces: 0`
 * keeps nothing. Single-threaded: the event loop serializes every access.
 */
export class TraceStore {
  readonly capacity: number;
  readonly #ring: (Trace | undefined)[];
  readonly #byId = new Map<string, Trace>();
  /** Index the next trace is written to. */
  #head = 0;
  #evicted = 0;
  #seq = 0;

  constructor(capacity: number) {
    this.capacity = Math.max(0, Math.floor(capacity));
    this.#ring = new Array<Trace | undefined>(this.capacity).fill(undefined);
  }

  get size(): number {
    return this.#byId.size;
  }

  /** Monotonic sequence numbers give a newest-first order that clock changes cannot disturb. */
  nextSeq(): number {
    return ++this.#seq;
  }

  /**
   * Set in a `workers` worker: finished traces go to the primary's store, so
   * the Admin API lists every worker's traces in one place (docs/workers.md).
   */
  forward: ((trace: Trace) => void) | undefined;

  add(trace: Trace): void {
    if (this.forward !== undefined) return this.forward(trace);
    if (this.capacity === 0) return;
    const old = this.#ring[this.#head];
    if (old !== undefined) {
      this.#byId.delete(old.id);
      this.#evicted++;
    }
    this.#ring[this.#head] = trace;
    this.#byId.set(trace.id, trace);
    this.#head = (this.#head + 1) % this.capacity;
  }

  get(id: string): Trace | undefined {
    return this.#byId.get(id);
  }

  /** Drops every trace; returns how many were held. */
  clear(): number {
    const removed = this.#byId.size;
    this.#ring.fill(undefined);
    this.#byId.clear();
    this.#head = 0;
    return removed;
  }

  /** Newest first. */
  *newest(): Generator<Trace> {
    for (let i = 1; i <= this.capacity; i++) {
      const trace = this.#ring[(this.#head - i + this.capacity) % this.capacity];
      if (trace === undefined) return;
      yield trace;
    }
  }

  /** Summaries newest first, filters ANDed, `limit` applied last. */
  list(filter: TraceFilter = {}): { traces: TraceSummary[]; retention: Retention } {
    const traces: TraceSummary[] = [];
    let truncated = false;
    for (const trace of this.newest()) {
      if (filter.route !== undefined && trace.route !== filter.route) continue;
      if (filter.policy !== undefined && trace.policy !== filter.policy) continue;
      if (filter.status !== undefined && trace.status !== filter.status) continue;
      if (filter.source !== undefined && trace.source !== filter.source) continue;
      if (filter.limit !== undefined && traces.length >= filter.limit) {
        truncated = true;
        break;
      }
      traces.push(summarize(trace));
    }
    return { traces, retention: this.retention(truncated) };
  }

  retention(truncated = false): Retention {
    let oldest: number | null = null;
    for (const trace of this.newest()) oldest = trace.seq;
    return {
      max_traces: this.capacity,
      retained: this.#byId.size,
      evicted: this.#evicted,
      oldest_seq: oldest,
      truncated,
    };
  }
}
