import type { AbortLike } from '../core/context.js';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { OutboundDispatcher } from './pool-registry.js';
import { ClientAbortedError, DeadlineExceededError, ExchangeError, type ExchangePhase } from './errors.js';
import { UpstreamBody, type BodySource } from './upstream-body.js';
import { RequestBodyStream } from './request-stream.js';
import { deadlineQueue, type DeadlineQueue, type Deadlined } from './deadlines.js';
import { parseResponseHeaders } from './proxy-headers.js';

/** One outbound request. `headers` is a flat `[name, value, name, value…]` list. */
export interface ExchangeRequest {
  method: string;
  /** Path plus `?query`, as it goes on the request line. */
  path: string;
  headers: string[];
  /**
   * Buffered, or streamed from the client (docs/routing.md#request-bodies): then sent with the
   * client's Content-Length when it announced one, chunked otherwise.
   */
  body: Buffer | RequestBodyStream | null;
}

/** Per-upstream limits, built once at configuration time. */
export interface ExchangeLimits {
  /** Connect + request + response headers, per attempt; 0 disables. */
  readonly deadlineMs: number;
  /** Longest silence between body chunks, buffered or streamed; 0 disables. */
  readonly idleMs: number;
  /** Resolve at the headers with the body left flowing, instead of after reading it all. */
  readonly streaming: boolean;
  /** Drop hop-by-hop response fields (and those Connection lists) while parsing: the answer is relayed. */
  readonly dropHopByHop?: boolean;
}

export interface ExchangeResult {
  status: number;
  /** Lowercased names; repeated headers as arrays. */
  headers: IncomingHttpHeaders;
  /**
   * The whole body in buffered mode; in streaming mode too when it was complete
   * in the same socket read as the headers (then `stream` is null).
   */
  body: Buffer | null;
  /** The unread body in streaming mode (unless it came whole, see `body`), `null` in buffered mode. */
  stream: Readable | null;
}

/** Told about the life of each exchange, e.g. a target keeping health and load figures. */
export interface ExchangeObserver {
  exchangeStarted(): void;
  /** Response headers arrived `elapsedMs` after the start. */
  exchangeHeaders(elapsedMs: number): void;
  /** Called exactly once: `error` is null when the body completed. */
  exchangeEnded(error: Error | null, phase: ExchangePhase): void;
}

/**
 * Sends one request through `dispatcher` (a shared pool) and resolves with the
 * response. Rejects with an {@link ExchangeError} whose phase tells whether the
 * request ever reached the target. Aborting `signal` aborts the exchange at any
 * point, including while a streamed body is still flowing.
 */
export function exchange(
  dispatcher: OutboundDispatcher,
  request: ExchangeRequest,
  limits: ExchangeLimits,
  signal: AbortLike | null,
  observer: ExchangeObserver | null,
): Promise<ExchangeResult> {
  if (signal?.aborted === true) return Promise.reject(new ExchangeError('connect', new ClientAbortedError()));
  return new Exchange(limits, signal, observer).start(dispatcher, request);
}

function ignore(): void {}

function asBuffer(field: Buffer | string): Buffer {
  return typeof field === 'string' ? Buffer.from(field, 'latin1') : field;
}

function promote(exchange: Exchange): void {
  exchange.promote();
}

/** The undici dispatch handler of one attempt; methods on the prototype, no per-request closures. */
class Exchange implements Dispatcher.DispatchHandler, BodySource, Deadlined {
  readonly #limits: ExchangeLimits;
  readonly #signal: AbortLike | null;
  readonly #observer: ExchangeObserver | null;
  #resolve: ((result: ExchangeResult) => void) | null = null;
  #reject: ((err: ExchangeError) => void) | null = null;
  /** undici's abort and resume for this request (its raw-header handler interface). */
  #abortRequest: ((err?: Error) => void) | null = null;
  #resumeRead: (() => void) | null = null;
  /** The queue this exchange's deadline is armed in, while it is. */
  #deadlines: DeadlineQueue | null = null;
  deadlineAt = 0;
  deadlinePrev: Deadlined | null = null;
  deadlineNext: Deadlined | null = null;
  #phase: ExchangePhase = 'connect';
  /** Set when we abort (deadline, client gone); applied as soon as undici hands us a controller. */
  #abortReason: Error | null = null;
  /** Bookkeeping done: observer told, timer cleared, signal listener removed. */
  #ended = false;
  #startedAt = 0;
  #status = 0;
  #headers: IncomingHttpHeaders = {};
  #chunks: Buffer[] | null = null;
  #length = 0;
  #stream: UpstreamBody | null = null;
  #method = '';
  /** A request body streamed from the client: the deadline is suspended while it is sent. */
  #streamedBody: RequestBodyStream | null = null;

  constructor(limits: ExchangeLimits, signal: AbortLike | null, observer: ExchangeObserver | null) {
    this.#limits = limits;
    this.#signal = signal;
    this.#observer = observer;
  }

  start(dispatcher: OutboundDispatcher, request: ExchangeRequest): Promise<ExchangeResult> {
    const promise = new Promise<ExchangeResult>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#startedAt = performance.now();
    this.#method = request.method;
    this.#observer?.exchangeStarted();
    if (this.#limits.deadlineMs > 0) {
      this.#deadlines = deadlineQueue(this.#limits.deadlineMs);
      this.#deadlines.add(this);
    }
    this.#signal?.addEventListener('abort', this);
    let headers = request.headers;
    const body = request.body;
    if (body instanceof RequestBodyStream) {
      this.#streamedBody = body;
      if (body.announced !== undefined) headers = [...headers, 'content-length', String(body.announced)];
      // The deadline counts again from the last body byte: an upload may take longer than timeout_ms.
      if (this.#limits.deadlineMs > 0) body.once('end', () => this.#bodySent());
    }
    dispatcher.dispatch(
      {
        method: request.method,
        path: request.path,
        headers,
        body,
        headersTimeout: 0,
        bodyTimeout: this.#limits.idleMs,
      },
      this,
    );
    return promise;
  }

  // --- undici handler (the raw-header interface: no wrapper, headers parsed once, here) ----

  onConnect(abort: (err?: Error) => void): void {
    this.#abortRequest = abort;
    if (this.#abortReason !== null) abort(this.#abortReason);
    else {
      this.#phase = 'request';
      if (this.#streamedBody !== null && !this.#streamedBody.readableEnded) this.#clearTimer();
    }
  }

  /** A streamed request body was sent whole: the deadline now covers the wait for the headers. */
  #bodySent(): void {
    if (this.#ended || this.#phase !== 'request' || this.#deadlines !== null) return;
    this.#deadlines = deadlineQueue(this.#limits.deadlineMs);
    this.#deadlines.add(this);
  }

  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    if (status < 200) return true; // 1xx informational: the real response follows
    this.#resumeRead = resume;
    this.#phase = 'body';
    this.#clearTimer();
    this.#observer?.exchangeHeaders(performance.now() - this.#startedAt);
    this.#status = status;
    this.#headers = parseResponseHeaders(raw, this.#limits.dropHopByHop === true);
    this.#chunks = [];
    if (this.#limits.streaming) this.#streamingStart(status);
    return true;
  }

  #streamingStart(status: number): void {
    // A HEAD or bodiless answer keeps its upstream framing headers: only a stream carries them as they are.
    if (this.#method === 'HEAD' || status === 204 || status === 304) {
      this.promote();
      return;
    }
    // undici parses a socket read in one go: a body that arrives with its headers (small answers)
    // ends before the next tick and is handed over whole, without a stream; the rest streams.
    process.nextTick(promote, this);
  }

  /** Streaming mode: unless already settled (whole body, or failed), the body flows through an {@link UpstreamBody}. */
  promote(): void {
    if (this.#resolve === null || this.#stream !== null) return;
    const stream = new UpstreamBody(this);
    for (const chunk of this.#chunks ?? []) stream.push(chunk);
    this.#chunks = null;
    this.#stream = stream;
    this.#settle({ status: this.#status, headers: this.#headers, body: null, stream });
  }

  onData(chunk: Buffer): boolean {
    if (this.#stream !== null) return this.#stream.push(chunk);
    if (this.#chunks !== null) {
      this.#chunks.push(chunk);
      this.#length += chunk.length;
    }
    return true;
  }

  onComplete(trailers?: Buffer[] | string[] | null): void {
    if (this.#ended) return;
    this.#end(null);
    // Chunked trailer fields travel with a streamed body (docs/grpc.md, "Trailers on HTTP/1.1"),
    // also when the whole body came in one read and would otherwise be handed over as a buffer.
    const withTrailers = trailers != null && trailers.length > 0;
    if (withTrailers && this.#limits.streaming) this.promote();
    if (this.#stream !== null) {
      if (withTrailers) this.#stream.trailers = parseResponseHeaders(trailers.map(asBuffer), true);
      this.#stream.push(null);
      return;
    }
    const chunks = this.#chunks ?? [];
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.#length);
    this.#chunks = null;
    this.#settle({ status: this.#status, headers: this.#headers, body, stream: null });
  }

  onError(err: Error): void {
    if (this.#ended) return;
    this.#failWith(this.#abortReason ?? err);
  }

  // --- body source ----------------------------------------------------------

  resumeBody(): void {
    this.#resumeRead?.();
  }

  bodyDestroyed(_err: Error | null): void {
    if (this.#ended) return;
    // Destroyed downstream before the target finished: the client side gave up.
    const reason = new ClientAbortedError();
    this.#abortReason = reason;
    this.#end(reason);
    this.#abortRequest?.(reason);
  }

  // --- aborts -----------------------------------------------------------------

  /** `ctx.signal` fired: the client went away. */
  handleEvent(): void {
    if (!this.#ended) this.#abort(new ClientAbortedError());
  }

  expire(): void {
    this.#deadlines = null;
    if (!this.#ended) this.#abort(new DeadlineExceededError(this.#limits.deadlineMs));
  }

  #abort(reason: Error): void {
    this.#abortReason = reason;
    // Once on a socket, undici reports the abort synchronously through onError.
    this.#abortRequest?.(reason);
    // Still connecting: undici will call onRequestStart later, where the reason is applied.
    if (!this.#ended) this.#failWith(reason);
  }

  #failWith(reason: Error): void {
    this.#end(reason);
    if (this.#stream !== null) {
      this.#stream.on('error', ignore);
      this.#stream.destroy(reason);
    } else if (this.#reject !== null) {
      const reject = this.#reject;
      this.#resolve = null;
      this.#reject = null;
      reject(new ExchangeError(this.#phase, reason));
    }
  }

  #settle(result: ExchangeResult): void {
    const resolve = this.#resolve;
    this.#resolve = null;
    this.#reject = null;
    resolve?.(result);
  }

  #end(error: Error | null): void {
    this.#ended = true;
    this.#clearTimer();
    this.#signal?.removeEventListener('abort', this);
    this.#observer?.exchangeEnded(error, this.#phase);
  }

  #clearTimer(): void {
    if (this.#deadlines !== null) {
      this.#deadlines.remove(this);
      this.#deadlines = null;
    }
  }
}
