import { connect, type Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { HTTPParser, type NativeParser, type ParseError } from '../../runtime/native-http-parser.js';
import { deadlineQueue, type DeadlineQueue, type Deadlined } from '../deadlines.js';
import { LeanClientError, otherSideClosed } from './client-errors.js';
import { requestHead, type BodyFraming } from './request-head.js';

/** What a connection needs from its pool. */
export interface ConnectionOwner {
  readonly host: string;
  readonly port: number;
  /** `host[:port]` for the Host field when the caller sets none. */
  readonly authority: string;
  readonly connectTimeoutMs: number;
  /** The connection may take another request. */
  idle(connection: LeanConnection): void;
  /** The connection is gone (closed, failed or not reusable). */
  gone(connection: LeanConnection): void;
}

/** One request handed to the pool: undici's dispatch arguments. */
export interface Job {
  readonly options: Dispatcher.DispatchOptions;
  readonly handler: Dispatcher.DispatchHandler;
}

/**
 * How long an idle connection is kept: undici's default, below the 5 s of node:http servers, so the
 * gateway closes an idle connection before a typical target does and never writes into one it closed.
 */
const IDLE_MS = 4_000;
/** Subtracted from a target's `Keep-Alive: timeout=N`, so the gateway lets go of the connection first. */
const HINT_MARGIN_MS = 1_000;
const MAX_IDLE_MS = 600_000;
const CRLF = '\r\n';
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
/** The async resource the binding wants with `initialize`; one for all (a new object costs ~0.4 µs per exchange). */
const PARSER_RESOURCE = {};

const enum State {
  Connecting,
  Idle,
  Busy,
  Closed,
}

/**
 * One keep-alive HTTP/1.1 connection to a target, one request at a time: the head (and a buffered
 * body) written in one corked batch, a streamed body written with back-pressure, the response read
 * with node's own llhttp parser and handed to undici's handler interface (onConnect, onHeaders,
 * onData, onComplete, onError) with undici's error codes. A response ends the exchange: any byte
 * after it (same read, later read, or while idle) closes the connection and is never parsed as
 * another response; each exchange starts with a freshly initialised parser.
 */
export class LeanConnection implements Deadlined {
  deadlineAt = 0;
  deadlinePrev: Deadlined | null = null;
  deadlineNext: Deadlined | null = null;
  /** The queue this connection's idle or body-silence deadline is armed in, while it is. */
  #deadlines: DeadlineQueue | null = null;
  readonly #owner: ConnectionOwner;
  readonly #socket: Socket;
  readonly #parser: NativeParser;
  #state = State.Connecting;
  #job: Job | null = null;
  /** The handler has been told how the job ended (onComplete or onError). */
  #settled = true;
  #head = false;
  #status = 0;
  #informational = false;
  #complete = false;
  /**
   * The target sent bytes past the end of the answer (RFC 9112 §9.3: not a next response): the
   * parser started a message nobody asked for, so the connection is closed, never pooled.
   */
  #overrun = false;
  #keepAlive = true;
  #requestSent = false;
  #trailers: string[] | null = null;
  #paused = false;
  #bodyTimeoutMs = 0;
  #body: Readable | null = null;
  #bodyBytes = 0;
  #bodyFraming: BodyFraming = { kind: 'none' };
  #closeRequested = false;
  #connectTimer: NodeJS.Timeout | null = null;
  /** Bytes of the current request went out: failing it now leaves the connection unusable. */
  #written = false;
  #idleMs = IDLE_MS;
  /** Head fields the parser flushed before the head was complete (long heads). */
  #pendingRaw: string[] | null = null;
  /**
   * The answer's head has not started in an earlier read: when it ends inside this one, the parser
   * is given the head alone and a Content-Length body is sliced from the reads as they are (the
   * parser copies every body piece it hands out).
   */
  #headInOneRead = true;
  /** Bytes of a Content-Length body still to come when it is sliced here, else -1. */
  #bodyLeft = -1;
  /** Exchanges started on this connection (the parser is initialised afresh from the second on). */
  #exchanges = 0;

  constructor(owner: ConnectionOwner, first: Job) {
    this.#owner = owner;
    this.#job = first;
    // The first job waits on the connect: a failure there is reported to it.
    this.#settled = false;
    const parser = new HTTPParser();
    parser.initialize(HTTPParser.RESPONSE, PARSER_RESOURCE, 0, 0);
    parser[HTTPParser.kOnMessageBegin] = this.#onMessageBegin;
    parser[HTTPParser.kOnHeaders] = this.#onHeaders;
    parser[HTTPParser.kOnHeadersComplete] = this.#onHeadersComplete;
    parser[HTTPParser.kOnBody] = this.#onBody;
    parser[HTTPParser.kOnMessageComplete] = this.#onMessageComplete;
    this.#parser = parser;
    const socket = connect({ host: owner.host, port: owner.port, noDelay: true });
    this.#socket = socket;
    if (owner.connectTimeoutMs > 0) {
      this.#connectTimer = setTimeout(this.#onConnectTimeout, owner.connectTimeoutMs);
      this.#connectTimer.unref();
    }
    socket.once('connect', this.#onConnect);
    socket.on('data', this.#onData);
    socket.on('end', this.#onEnd);
    socket.on('error', this.#onError);
    socket.once('close', this.#onClose);
  }

  get busy(): boolean {
    return this.#state === State.Busy || this.#state === State.Connecting;
  }

  /** Runs `job` on this idle connection. */
  run(job: Job): void {
    this.#job = job;
    this.#start();
  }

  /** Closes the connection when idle (pool closing or shrinking). */
  closeIfIdle(): void {
    if (this.#state === State.Idle) this.#socket.destroy();
  }

  // --- one request ------------------------------------------------------------

  #start(): void {
    const job = this.#job!;
    this.#state = State.Busy;
    this.#disarm();
    this.#settled = false;
    this.#status = 0;
    this.#informational = false;
    this.#complete = false;
    this.#overrun = false;
    this.#keepAlive = true;
    this.#requestSent = false;
    this.#trailers = null;
    this.#pendingRaw = null;
    this.#body = null;
    this.#bodyBytes = 0;
    this.#written = false;
    this.#headInOneRead = true;
    this.#bodyLeft = -1;
    // A fresh parser for every exchange: nothing a previous answer left in it can reach this one.
    if (this.#exchanges++ > 0) this.#parser.initialize(HTTPParser.RESPONSE, PARSER_RESOURCE, 0, 0);
    const { options, handler } = job;
    this.#head = options.method === 'HEAD';
    this.#bodyTimeoutMs = options.bodyTimeout ?? 0;
    handler.onConnect?.(this.#abort);
    // Aborted from within onConnect: nothing was written, so the connection serves the next one.
    if (this.#settled || this.#job !== job) {
      this.#releaseLater();
      return;
    }
    const body = options.body as Buffer | Readable | null | undefined;
    const buffered = body == null ? null : Buffer.isBuffer(body) ? body : null;
    let head;
    try {
      head = requestHead(
        options.method,
        options.path,
        (options.headers ?? []) as string[],
        this.#owner.authority,
        body == null ? null : buffered !== null ? buffered.length : endedLength(body as Readable),
      );
    } catch (err) {
      // Refused before a byte was written: the connection stays good.
      this.#fail(err as Error, false);
      this.#releaseLater();
      return;
    }
    this.#closeRequested = head.close;
    this.#bodyFraming = head.framing;
    this.#written = true;
    const socket = this.#socket;
    if (buffered !== null || head.framing.kind === 'none' || body == null) {
      if (buffered !== null && buffered.length > 0) {
        socket.cork();
        socket.write(head.text, 'latin1');
        socket.write(buffered);
        socket.uncork();
      } else socket.write(head.text, 'latin1');
      this.#requestSent = true;
      return;
    }
    socket.write(head.text, 'latin1');
    this.#streamBody(body as Readable);
  }

  #streamBody(body: Readable): void {
    this.#body = body;
    body.on('data', this.#onBodyChunk);
    body.once('end', this.#onBodyEnd);
    body.once('error', this.#onBodyError);
    this.#socket.on('drain', this.#onDrain);
    if (body.isPaused()) body.resume();
  }

  readonly #onBodyChunk = (chunk: Buffer | string): void => {
    const data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (data.length === 0) return;
    this.#bodyBytes += data.length;
    let ok: boolean;
    if (this.#bodyFraming.kind === 'chunked') {
      this.#socket.cork();
      this.#socket.write(`${data.length.toString(16)}${CRLF}`, 'latin1');
      this.#socket.write(data);
      ok = this.#socket.write(CRLF, 'latin1');
      this.#socket.uncork();
    } else ok = this.#socket.write(data);
    if (!ok) this.#body?.pause();
  };

  readonly #onDrain = (): void => {
    this.#body?.resume();
  };

  readonly #onBodyEnd = (): void => {
    const framing = this.#bodyFraming;
    this.#detachBody();
    if (framing.kind === 'chunked') this.#socket.write(`0${CRLF}${CRLF}`, 'latin1');
    else if (framing.kind === 'length' && this.#bodyBytes !== framing.length) {
      this.#fail(
        new LeanClientError(
          'Request body length does not match content-length header',
          'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH',
        ),
        true,
      );
      return;
    }
    this.#requestSent = true;
    if (this.#complete) this.#finish();
  };

  readonly #onBodyError = (err: Error): void => {
    this.#detachBody();
    this.#fail(err, true);
  };

  #detachBody(): void {
    const body = this.#body;
    if (body === null) return;
    this.#body = null;
    body.off('data', this.#onBodyChunk);
    body.off('end', this.#onBodyEnd);
    body.off('error', this.#onBodyError);
    this.#socket.off('drain', this.#onDrain);
  }

  /** undici's abort function: ends the exchange with `err` and drops the connection. */
  readonly #abort = (err?: Error): void => {
    if (this.#settled) return;
    const reason = err ?? new LeanClientError('Request aborted', 'UND_ERR_ABORTED');
    // Nothing written yet (aborted from onConnect): the connection is still clean.
    this.#fail(reason, this.#written || this.#state !== State.Busy);
  };

  readonly #resume = (): void => {
    if (!this.#paused || this.#state === State.Closed) return;
    this.#paused = false;
    this.#socket.resume();
    if (this.#bodyTimeoutMs > 0 && !this.#complete) this.#arm(this.#bodyTimeoutMs);
  };

  #pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    this.#socket.pause();
    // undici's body timeout counts silence from the target, not time the reader holds it back.
    this.#disarm();
  }

  // --- parser callbacks -------------------------------------------------------

  readonly #onMessageBegin = (): void => {
    // A message after the final answer: whatever it is, it is not this exchange's (and no one else's).
    if (this.#complete || this.#job === null || this.#settled) this.#overrun = true;
  };

  readonly #onHeaders = (raw: string[]): void => {
    if (this.#overrun) return;
    // After the head: chunked trailer fields.
    if (this.#status !== 0 && !this.#informational)
      this.#trailers = this.#trailers === null ? raw : this.#trailers.concat(raw);
    else this.#pendingRaw = this.#pendingRaw === null ? raw : this.#pendingRaw.concat(raw);
  };

  readonly #onHeadersComplete = (
    _major: number,
    _minor: number,
    headers: string[] | undefined,
    _method: unknown,
    _url: unknown,
    status: number,
    statusText: string | undefined,
    upgrade: boolean,
    keepAlive: boolean,
  ): number => {
    let raw = headers ?? [];
    if (this.#pendingRaw !== null) {
      raw = this.#pendingRaw.concat(raw);
      this.#pendingRaw = null;
    }
    const job = this.#job;
    if (this.#overrun || job === null || this.#settled) {
      // A response nobody asked for: stop the parser here (execute returns an error), drop the connection.
      this.#overrun = true;
      return -1;
    }
    if (status < 100) {
      // llhttp takes any three digits; undici refuses a status below 100 at once (else: a wait for timeout_ms).
      this.#fail(
        new LeanClientError(`Parse Error: invalid status code ${status}`, 'HPE_INVALID_STATUS'),
        true,
      );
      return -1;
    }
    if (upgrade || status === 101) {
      this.#fail(new LeanClientError('unexpected upgrade from the target', 'UND_ERR_SOCKET'), true);
      return 0;
    }
    this.#status = status;
    const text = statusText ?? '';
    if (status < 200) {
      this.#informational = true;
      job.handler.onHeaders?.(status, raw as unknown as Buffer[], this.#resume, text);
      return 0;
    }
    this.#informational = false;
    this.#keepAlive = keepAlive;
    if (keepAlive) this.#idleMs = idleTimeOf(raw);
    if (job.handler.onHeaders?.(status, raw as unknown as Buffer[], this.#resume, text) === false)
      this.#pause();
    if (this.#bodyTimeoutMs > 0 && !this.#paused) this.#arm(this.#bodyTimeoutMs);
    // A HEAD answer has no body whatever its framing fields say.
    if (this.#head) return 1;
    if (this.#headInOneRead && status !== 204 && status !== 304) {
      const length = contentLengthOf(raw);
      if (length > 0) {
        // The parser ends the message at its head; the body is sliced from the reads (#onData).
        this.#bodyLeft = length;
        return 1;
      }
    }
    // Chunked or close-delimited: the parser reads this answer to its end.
    this.#headInOneRead = false;
    return 0;
  };

  readonly #onBody = (chunk: Buffer): void => {
    if (this.#settled || this.#overrun) return;
    if (this.#job?.handler.onData?.(chunk) === false) this.#pause();
  };

  readonly #onMessageComplete = (): void => {
    if (this.#overrun) return;
    if (this.#informational) {
      this.#informational = false;
      this.#status = 0;
      return;
    }
    // A sliced body completes when its last byte is taken.
    if (this.#bodyLeft <= 0) this.#complete = true;
  };

  /** Hands the next bytes of a sliced Content-Length body to the handler; returns what follows it. */
  #takeBody(data: Buffer): Buffer {
    const n = Math.min(this.#bodyLeft, data.length);
    const piece = n === data.length ? data : data.subarray(0, n);
    this.#bodyLeft -= n;
    if (this.#bodyLeft === 0) this.#complete = true;
    this.#onBody(piece);
    return n === data.length ? EMPTY : data.subarray(n);
  }

  /** Runs the parser over `data`; false (and the job failed) when the target broke the protocol. */
  #execute(data: Buffer): boolean {
    const result = this.#parser.execute(data);
    if (typeof result === 'number') return true;
    // Refused bytes past a complete answer: the answer stands (as with undici), the connection goes.
    if (this.#complete) {
      this.#overrun = true;
      return true;
    }
    this.#fail(parseFailure(result), true);
    return false;
  }

  // --- socket events ------------------------------------------------------------

  readonly #onConnect = (): void => {
    this.#clearConnectTimer();
    this.#start();
  };

  readonly #onConnectTimeout = (): void => {
    this.#connectTimer = null;
    this.#socket.destroy(new LeanClientError('Connect Timeout Error', 'UND_ERR_CONNECT_TIMEOUT'));
  };

  readonly #onData = (data: Buffer): void => {
    if (this.#state !== State.Busy) {
      // Bytes from the target while nothing is asked: the connection cannot be trusted.
      this.#socket.destroy();
      return;
    }
    // Bytes from the target restart the silence allowed in a body.
    if (this.#deadlines !== null && this.#status !== 0) this.#arm(this.#bodyTimeoutMs);
    let rest = data;
    while (rest.length > 0 && !this.#settled && this.#state === State.Busy) {
      if (this.#bodyLeft > 0) {
        rest = this.#takeBody(rest);
        continue;
      }
      if (this.#complete) {
        // Bytes past the answer (nothing was pipelined): the connection is not reused.
        this.#overrun = true;
        break;
      }
      if (this.#headInOneRead) {
        const end = rest.indexOf(HEAD_END);
        if (end !== -1) {
          const head = end + 4 === rest.length ? rest : rest.subarray(0, end + 4);
          rest = head === rest ? EMPTY : rest.subarray(end + 4);
          if (!this.#execute(head)) return;
          continue;
        }
        this.#headInOneRead = false;
      }
      if (!this.#execute(rest)) return;
      rest = EMPTY;
    }
    if (this.#complete) this.#finish();
  };

  readonly #onEnd = (): void => {
    if (this.#state === State.Busy && !this.#settled) {
      // A body delimited by the end of the connection ends here.
      const result = this.#parser.finish();
      if (result !== undefined && typeof result !== 'number') {
        this.#fail(parseFailure(result), true);
        return;
      }
      if (this.#complete) {
        this.#keepAlive = false;
        this.#finish();
        return;
      }
      this.#fail(otherSideClosed(), true);
      return;
    }
    this.#socket.destroy();
  };

  /** The idle keep-alive time ran out, or the target was silent too long in the middle of a body. */
  expire(): void {
    this.#deadlines = null;
    if (this.#state === State.Idle) {
      this.#socket.destroy();
      return;
    }
    if (this.#state === State.Busy && !this.#settled && this.#status !== 0)
      this.#fail(new LeanClientError('Body Timeout Error', 'UND_ERR_BODY_TIMEOUT'), true);
  }

  #arm(ms: number): void {
    this.#disarm();
    this.#deadlines = deadlineQueue(ms);
    this.#deadlines.add(this);
  }

  #disarm(): void {
    if (this.#deadlines !== null) {
      this.#deadlines.remove(this);
      this.#deadlines = null;
    }
  }

  readonly #onError = (err: Error): void => {
    this.#clearConnectTimer();
    if (!this.#settled) this.#fail(err, true);
  };

  readonly #onClose = (): void => {
    this.#clearConnectTimer();
    this.#state = State.Closed;
    this.#disarm();
    this.#detachBody();
    this.#parser.close();
    if (!this.#settled) this.#notifyError(otherSideClosed());
    this.#job = null;
    this.#owner.gone(this);
  };

  // --- endings ------------------------------------------------------------------

  /** The response is complete: tell the handler, then keep or drop the connection. */
  #finish(): void {
    const job = this.#job;
    if (job === null || this.#settled) return;
    if (!this.#requestSent && this.#body !== null) {
      // Answered before the body was sent whole: the rest can no longer go out on this connection.
      this.#detachBody();
      this.#keepAlive = false;
    }
    this.#settled = true;
    this.#disarm();
    const trailers = this.#trailers;
    this.#trailers = null;
    const reusable = this.#keepAlive && !this.#overrun && !this.#closeRequested && this.#requestSent;
    job.handler.onComplete?.(trailers);
    if (this.#state !== State.Busy) return;
    if (reusable) this.#release();
    else this.#socket.destroy();
  }

  /**
   * Releases the connection from a job that ended before anything was written. Not at once: the
   * next queued job would start inside this one, and a long queue of refused requests would nest
   * as deep as it is long.
   */
  #releaseLater(): void {
    queueMicrotask(() => {
      if (this.#state === State.Busy && this.#settled) this.#release();
    });
  }

  #release(): void {
    this.#job = null;
    this.#state = State.Idle;
    this.#paused = false;
    this.#arm(this.#idleMs);
    this.#owner.idle(this);
  }

  /** Ends the job with `err`; `dirty` when bytes of it went out, so the connection is dropped. */
  #fail(err: Error, dirty: boolean): void {
    if (!this.#settled) this.#notifyError(err);
    if (dirty && this.#state !== State.Closed) this.#socket.destroy();
  }

  #notifyError(err: Error): void {
    this.#settled = true;
    this.#detachBody();
    const job = this.#job;
    job?.handler.onError?.(err);
  }

  #clearConnectTimer(): void {
    if (this.#connectTimer !== null) {
      clearTimeout(this.#connectTimer);
      this.#connectTimer = null;
    }
  }
}

/**
 * The length of a stream body that has already ended (its bytes all buffered), else -1: then, as
 * undici does, it goes out with a Content-Length instead of chunked.
 */
function endedLength(body: Readable): number {
  const state = (
    body as Readable & { _readableState?: { ended: boolean; objectMode: boolean; length: number } }
  )._readableState;
  return state !== undefined && state.ended && !state.objectMode && body.readableLength === state.length
    ? state.length
    : -1;
}

/** The idle keep-alive time an answer's `Keep-Alive: timeout=N` allows (undici's reading), else the default. */
function idleTimeOf(raw: readonly string[]): number {
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length !== 10 || raw[i]!.toLowerCase() !== 'keep-alive') continue;
    const seconds = /timeout=(\d+)/i.exec(raw[i + 1]!)?.[1];
    if (seconds === undefined) break;
    return Math.min(MAX_IDLE_MS, Math.max(HINT_MARGIN_MS, Number(seconds) * 1000 - HINT_MARGIN_MS));
  }
  return IDLE_MS;
}

const EMPTY = Buffer.alloc(0);

/** The Content-Length of an answer whose framing is a length (no Transfer-Encoding), else -1. */
function contentLengthOf(raw: readonly string[]): number {
  let length = -1;
  for (let i = 0; i < raw.length; i += 2) {
    const size = raw[i]!.length;
    if (size !== 14 && size !== 17) continue;
    const name = raw[i]!.toLowerCase();
    if (name === 'transfer-encoding') return -1;
    // The parser already refused a malformed or repeated one.
    if (name === 'content-length') length = Number(raw[i + 1]);
  }
  return Number.isSafeInteger(length) ? length : -1;
}

function parseFailure(err: ParseError): LeanClientError {
  return new LeanClientError(`Parse Error: ${err.message}`, err.code || 'HPE_INVALID');
}
