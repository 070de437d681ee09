import type { Dispatcher } from 'undici';
import { LeanClientError } from './client-errors.js';
import { LeanConnection, type ConnectionOwner, type Job } from './lean-connection.js';

/**
 * The lean upstream client of a cleartext HTTP/1.1 target (`upstream.http1_client: lean`,
 * docs/configuration.md): keep-alive connections, at most `connections` of them,
 * one request at a time each, requests beyond that queued in order. It speaks undici's dispatch
 * interface, so src/outbound/exchange.ts drives it exactly as it drives an undici Pool.
 */
export class LeanPool implements ConnectionOwner {
  readonly host: string;
  readonly port: number;
  readonly authority: string;
  readonly connectTimeoutMs: number;
  readonly #max: number;
  readonly #all = new Set<LeanConnection>();
  /** Idle connections, the most recently used last (reused first: its socket is warm). */
  readonly #idle: LeanConnection[] = [];
  readonly #queue: Job[] = [];
  #queueHead = 0;
  #closing = false;
  #closed: Promise<void> | null = null;
  #onDrained: (() => void) | null = null;

  constructor(origin: string, options: { connections: number; connectTimeoutMs: number }) {
    const url = new URL(origin);
    this.host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    this.port = url.port === '' ? 80 : Number(url.port);
    this.authority = url.host;
    this.connectTimeoutMs = options.connectTimeoutMs;
    this.#max = options.connections;
  }

  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    if (this.#closing) {
      handler.onError?.(new LeanClientError('The client is closed', 'UND_ERR_CLOSED'));
      return false;
    }
    const job: Job = { options, handler };
    const idle = this.#idle.pop();
    if (idle !== undefined) idle.run(job);
    else if (this.#all.size < this.#max) this.#all.add(new LeanConnection(this, job));
    else this.#queue.push(job);
    return true;
  }

  /** Waits for every request dispatched so far, then closes the connections. */
  close(): Promise<void> {
    if (this.#closed !== null) return this.#closed;
    this.#closing = true;
    this.#closed = new Promise((resolve) => {
      this.#onDrained = resolve;
      this.#drainIfDone();
    });
    return this.#closed;
  }

  // --- ConnectionOwner -----------------------------------------------------------

  idle(connection: LeanConnection): void {
    const next = this.#nextJob();
    if (next !== undefined) {
      connection.run(next);
      return;
    }
    this.#idle.push(connection);
    if (this.#closing) {
      connection.closeIfIdle();
    }
  }

  gone(connection: LeanConnection): void {
    this.#all.delete(connection);
    const at = this.#idle.lastIndexOf(connection);
    if (at !== -1) this.#idle.splice(at, 1);
    // A queued request takes the freed slot.
    const next = this.#nextJob();
    if (next !== undefined) this.#all.add(new LeanConnection(this, next));
    this.#drainIfDone();
  }

  #nextJob(): Job | undefined {
    if (this.#queueHead >= this.#queue.length) return undefined;
    const job = this.#queue[this.#queueHead];
    this.#queue[this.#queueHead++] = undefined as unknown as Job;
    if (this.#queueHead === this.#queue.length) {
      this.#queue.length = 0;
      this.#queueHead = 0;
    }
    return job;
  }

  #drainIfDone(): void {
    if (!this.#closing || this.#onDrained === null) return;
    for (const connection of this.#all) {
      if (connection.busy) return;
    }
    for (const connection of [...this.#all]) connection.closeIfIdle();
    if (this.#all.size > 0) return;
    const done = this.#onDrained;
    this.#onDrained = null;
    done();
  }
}
