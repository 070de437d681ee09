import { Readable } from 'node:stream';
import { transportOf, type Context } from '../core/context.js';
import type { StreamedRequestBody } from '../core/transport.js';

/** The client side that feeds a {@link RequestBodyStream}: node:http, HTTP/2 or the lean front. */
export interface RequestBodySource {
  /** The consumer wants more: read the client again (backpressure lifted). */
  resumeBody(): void;
  /** The stream was destroyed before its end (upstream failed, limit passed): stop feeding it. */
  bodyDestroyed(err: Error | null): void;
}

/**
 * At most about this much of a request body waits in the gateway before the client is paused;
 * four socket reads, so the client is not paused and resumed on every read.
 */
const OPTIONS = { highWaterMark: 256 * 1024 };

/**
 * A request body relayed to the upstream as it arrives (docs/routing.md#request-bodies).
 * Backpressure reaches the client: when the upstream does not drain, `push` returns false
 * and the source stops reading the client's socket (or HTTP/2 stream) until `_read`.
 */
export class RequestBodyStream extends Readable implements StreamedRequestBody {
  readonly #source: RequestBodySource;
  /** The client's Content-Length, kept on the upstream request; undefined sends it chunked. */
  readonly announced: number | undefined;
  /** Bytes received from the client so far (access log, limit). */
  received = 0;
  /** The client's last byte was pushed. */
  #complete = false;
  #onPrimed: (() => void) | null = null;

  constructor(source: RequestBodySource, announced: number | undefined) {
    super(OPTIONS);
    this.#source = source;
    this.announced = announced;
    // Failures (limit passed, client gone) reach the upstream exchange through undici's own
    // listener; before an upstream took the body nobody else listens, and that is no crash.
    this.on('error', ignore);
  }

  override _read(): void {
    this.#source.resumeBody();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.#settlePrimed();
    this.#source.bodyDestroyed(err);
    callback(err);
  }

  override push(chunk: Buffer | null): boolean {
    const more = super.push(chunk);
    if (chunk === null) this.#complete = true;
    if (this.#onPrimed !== null && (this.#complete || !more)) this.#settlePrimed();
    return more;
  }

  /**
   * Resolves once the body is complete or a first full buffer (256 KiB) arrived: a body without
   * Content-Length that fits goes upstream with one (undici measures an ended stream), a longer
   * one chunked.
   */
  primed(): Promise<void> | undefined {
    if (this.#complete || this.destroyed || this.readableLength >= this.readableHighWaterMark)
      return undefined;
    const primed = new Promise<void>((resolve) => (this.#onPrimed = resolve));
    this.read(0); // starts the client reading without taking anything from the buffer
    return primed;
  }

  #settlePrimed(): void {
    const resolve = this.#onPrimed;
    this.#onPrimed = null;
    resolve?.();
  }

  /** True while no byte has left for an upstream: the request can still go to another target. */
  get replayable(): boolean {
    return !this.readableDidRead && !this.destroyed;
  }
}

/** Raised when a streamed body was already (partly) sent and a second send is attempted. */
export class BodyAlreadySent extends Error {
  constructor() {
    super('the request body was streamed to an upstream already and cannot be sent again');
  }
}

function ignore(): void {}

/** The server attaches the unread body of a policy that streams request bodies. */
export function attachRequestStream(ctx: Context, stream: RequestBodyStream): void {
  transportOf(ctx).requestStream = stream;
}

/** The streamed request body of `ctx`, or undefined when the body was buffered (or there is none). */
export function requestStreamOf(ctx: Context): RequestBodyStream | undefined {
  // Only attachRequestStream sets the field, always with a RequestBodyStream.
  return ctx.transport?.requestStream as RequestBodyStream | undefined;
}
