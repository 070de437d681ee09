import { IncomingMessage, type IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';

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
}

/**
 * One HTTP/1.x request as the lean front parsed it: the fields of
 * IncomingMessage the data plane reads, and a buffered body read instead of a
 * stream (request bodies are buffered whole anyway, see ../request-body.ts).
 */
export class LeanRequest {
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
  #headers: IncomingHttpHeaders | undefined;
  #sink = Sink.Buffer;
  #chunks: Buffer[] = [];
  #size = 0;
  #limit = 0;
  #resolve: ((body: Buffer) => void) | null = null;
  #reject: ((err: Error) => void) | null = null;
  #aborted = false;

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

  discardBody(): void {
    this.#sink = Sink.Discard;
    this.#chunks = [];
  }

  // --- fed by the connection --------------------------------------------------

  pushBody(chunk: Buffer): void {
    if (this.#sink === Sink.Discard) return;
    this.#size += chunk.length;
    if (this.#sink === Sink.Collect && this.#size > this.#limit) {
      this.#fail(TOO_LARGE);
      return;
    }
    this.#chunks.push(chunk);
  }

  finishBody(): void {
    this.complete = true;
    if (this.#sink === Sink.Collect) this.#succeed();
  }

  /** The connection went away (or the body was malformed) before the body was complete. */
  abort(): void {
    if (this.complete) return;
    this.#aborted = true;
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
