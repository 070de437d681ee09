import { IncomingMessage, type IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { RequestBodyStream, type RequestBodySource } from '../../outbound/request-stream.js';

type AddHeaderLine = (
  this: { joinDuplicateHeaders: boolean },
  name: string,
  value: string,
  dest: object,
) => void;
/**
 * node:http's own rule for folding repeated fields into `req.headers`
 * (set-cookie as a list, first Host/Content-Type wins, others joined), so
 * policies see the same header object on either front.
 */
const addHeaderLine = (IncomingMessage.prototype as unknown as { _addHeaderLine: AddHeaderLine })
  ._addHeaderLine;
const FOLD_OPTIONS = { joinDuplicateHeaders: false };

/** Thrown into a body read when the connection closed before the body was complete. */
export class RequestAborted extends Error {
  constructor() {
    super('client closed the connection before the request body was complete');
  }
}

const enum Sink {
  /** Not read yet: chunks are kept (at most what one socket read delivers before dispatch). */
  Buffer,
  /** A body read is collecting up to its limit. */
  Collect,
  /** Nobody will read the body (answered already, or over the limit): chunks are dropped. */
  Discard,
  /** Relayed as it arrives through a RequestBodyStream, pausing the socket under backpressure. */
  Stream,
}

/** The connection's socket reading, paused and resumed for a streamed body's backpressure. */
export interface BodyFlow {
  pauseBody(): void;
  resumeBody(): void;
}

/**
 * One HTTP/1.x request as the lean front parsed it: the fields of
 * IncomingMessage the data plane reads, and its body either buffered whole
 * (`readBody`) or relayed with backpressure (`openStream`), see ../request-body.ts.
 */
export class LeanRequest implements RequestBodySource {
  readonly socket: Socket;
  readonly method: string;
  readonly url: string;
  readonly rawHeaders: string[];
  readonly httpVersionMajor: number;
  readonly httpVersionMinor: number;
  /** What the parser decided from the version and `Connection`. */
  readonly keepAlive: boolean;
  /** The whole message, body included, has been parsed. */
  complete = false;
  /**
   * The trailer fields of a chunked body, flat `[name, value…]` as node:http's
   * `req.rawTrailers`. They belong to this request only; the data plane does
   * not relay request trailers (src/outbound/proxy-headers.ts).
   */
  rawTrailers: string[] = [];
  #headers: IncomingHttpHeaders | undefined;
  #sink = Sink.Buffer;
  #chunks: Buffer[] = [];
  #size = 0;
  #limit = 0;
  #resolve: ((body: Buffer) => void) | null = null;
  #reject: ((err: Error) => void) | null = null;
  #aborted = false;
  #stream: RequestBodyStream | null = null;
  #tooLarge: (() => Error) | null = null;
  /** The socket was paused because the stream's buffer is full. */
  #pressured = false;
  /** Set by the connection: how a streamed body pauses and resumes the socket. */
  flow: BodyFlow | null = null;

  constructor(
    socket: Socket,
    method: string,
    url: string,
    rawHeaders: string[],
    major: number,
    minor: number,
    keepAlive: boolean,
  ) {
    this.socket = socket;
    this.method = method;
    this.url = url;
    this.rawHeaders = rawHeaders;
    this.httpVersionMajor = major;
    this.httpVersionMinor = minor;
    this.keepAlive = keepAlive;
  }

  get httpVersion(): string {
    return `${this.httpVersionMajor}.${this.httpVersionMinor}`;
  }

  /** Lowercased names, repeated fields folded the way node:http folds them; built on first use. */
  get headers(): IncomingHttpHeaders {
    if (this.#headers === undefined) {
      const dest: IncomingHttpHeaders = {};
      const raw = this.rawHeaders;
      for (let i = 0; i + 1 < raw.length; i += 2)
        addHeaderLine.call(FOLD_OPTIONS, raw[i]!, raw[i + 1]!, dest);
      this.#headers = dest;
    }
    return this.#headers;
  }

  /** The trailer fields, folded as node:http folds `req.trailers`. */
  get trailers(): IncomingHttpHeaders {
    const dest: IncomingHttpHeaders = {};
    const raw = this.rawTrailers;
    for (let i = 0; i + 1 < raw.length; i += 2) addHeaderLine.call(FOLD_OPTIONS, raw[i]!, raw[i + 1]!, dest);
    return dest;
  }

  /** node:http parity: the data plane resumes a request it answered without reading; the front drops the rest. */
  resume(): void {
    this.discardBody();
  }

  /**
   * The whole body, rejecting with `tooLarge()` as soon as more than `limit`
   * bytes arrived (the rest is then dropped, and the answer closes the connection).
   */
  readBody(limit: number, tooLarge: () => Error): Promise<Buffer> {
    if (this.#aborted) return Promise.reject(new RequestAborted());
    return new Promise((resolve, reject) => {
      this.#limit = limit;
      this.#sink = Sink.Collect;
      this.#resolve = resolve;
      this.#reject = (err) => reject(err === TOO_LARGE ? tooLarge() : err);
      if (this.#size > limit) this.#fail(TOO_LARGE);
      else if (this.complete) this.#succeed();
    });
  }

  /**
   * The body as a stream: chunks kept so far go first, later ones as the
   * socket delivers them. Past `limit` the stream is destroyed with
   * `tooLarge()` and the connection reset.
   */
  openStream(limit: number, announced: number | undefined, tooLarge: () => Error): RequestBodyStream {
    const stream = new RequestBodyStream(this, announced);
    this.#stream = stream;
    if (this.#aborted) {
      stream.destroy(new RequestAborted());
      return stream;
    }
    this.#limit = limit;
    this.#tooLarge = tooLarge;
    this.#sink = Sink.Stream;
    const kept = this.#chunks;
    this.#chunks = [];
    this.#size = 0;
    for (const chunk of kept) this.#streamChunk(chunk);
    if (this.complete && this.#sink === Sink.Stream) stream.push(null);
    return stream;
  }

  discardBody(): void {
    const streaming = this.#sink === Sink.Stream;
    this.#sink = Sink.Discard;
    this.#chunks = [];
    // Cut short: the upstream still waiting for the rest is aborted; the socket reads (and drops) on.
    if (streaming && !this.complete) this.#stream?.destroy(new RequestAborted());
    this.resumeBody();
  }

  // --- RequestBodySource --------------------------------------------------------

  resumeBody(): void {
    if (!this.#pressured) return;
    this.#pressured = false;
    this.flow?.resumeBody();
  }

  bodyDestroyed(): void {
    if (this.#sink === Sink.Stream) this.discardBody();
  }

  #streamChunk(chunk: Buffer): void {
    const stream = this.#stream!;
    this.#size += chunk.length;
    stream.received = this.#size;
    if (this.#size > this.#limit) {
      this.#sink = Sink.Discard;
      stream.destroy(this.#tooLarge?.() ?? TOO_LARGE);
      resetSocket(this.socket);
      return;
    }
    if (!stream.push(chunk) && !this.#pressured) {
      this.#pressured = true;
      this.flow?.pauseBody();
    }
  }

  // --- fed by the connection --------------------------------------------------

  pushBody(chunk: Buffer): void {
    if (this.#sink === Sink.Discard) return;
    if (this.#sink === Sink.Stream) {
      this.#streamChunk(chunk);
      return;
    }
    this.#size += chunk.length;
    if (this.#sink === Sink.Collect && this.#size > this.#limit) {
      this.#fail(TOO_LARGE);
      return;
    }
    this.#chunks.push(chunk);
  }

  addTrailers(raw: string[]): void {
    this.rawTrailers = this.rawTrailers.length === 0 ? raw : this.rawTrailers.concat(raw);
  }

  finishBody(): void {
    this.complete = true;
    if (this.#sink === Sink.Collect) this.#succeed();
    else if (this.#sink === Sink.Stream) this.#stream?.push(null);
  }

  /** The connection went away (or the body was malformed) before the body was complete. */
  abort(): void {
    if (this.complete) return;
    this.#aborted = true;
    if (this.#sink === Sink.Stream) {
      this.#sink = Sink.Discard;
      this.#stream?.destroy(new RequestAborted());
    }
    this.#fail(new RequestAborted());
  }

  #succeed(): void {
    const resolve = this.#resolve;
    const chunks = this.#chunks;
    this.#resolve = this.#reject = null;
    this.#chunks = [];
    this.#sink = Sink.Discard;
    resolve?.(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.#size));
  }

  #fail(err: Error): void {
    const reject = this.#reject;
    this.#resolve = this.#reject = null;
    this.discardBody();
    reject?.(err);
  }
}

/** Marker for "over the limit"; the caller's own error type is built from it. */
const TOO_LARGE = new Error('request body too large');

/** Closes the client connection with a TCP reset (TLS sockets: a plain destroy). */
export function resetSocket(socket: Socket): void {
  try {
    socket.resetAndDestroy();
  } catch {
    // Not a plain TCP handle (TLS): resetAndDestroy refuses it.
    socket.destroy();
  }
}
