import type { OutgoingHttpHeaders } from 'node:http2';
import { Readable, Writable } from 'node:stream';
import type { Context } from '../../core/context.js';
import { attachGrpcCall, type ClientCall } from '../../outbound/grpc/client-call.js';

/**
 * A gRPC call made by a node (grpc-web, grpc-transcode) rather than by an
 * HTTP/2 client: the `upstream` node with `scheme: grpc | grpcs` relays it as
 * it relays a client's call (docs/grpc.md). The request side is a stream of
 * gRPC frames; the answer side is a writable standing in for the client's
 * HTTP/2 stream, whose headers, messages and trailers go to an
 * {@link AnswerSink} that turns them into what the client speaks.
 *
 * The relay uses of the client's call: the request's `data`/`end` events
 * (pause/resume), and of the answer `stream.respond()`, `stream.close(code)`,
 * `stream.end()`, its `close` event and `destroyed`/`closed`, writes piped into
 * it, `res.statusCode` and `res.addTrailers()`; that is what this stands in for.
 */

/** Where the upstream's answer goes. */
export interface AnswerSink {
  /** The upstream's response headers (with `:status`); `trailersOnly` when they also carry grpc-status. */
  headers(headers: OutgoingHttpHeaders, trailersOnly: boolean): void;
  /** Part of the answer body (gRPC frames, cut anywhere); call `next` when more may come. */
  data(chunk: Buffer, next: (err?: Error | null) => void): void;
  /**
   * The answer is over: `trailers` the upstream's (or the gateway's, on a
   * deadline), `reset` the HTTP/2 code when the upstream reset the call
   * mid-answer instead.
   */
  end(trailers: OutgoingHttpHeaders | undefined, reset: number | undefined): void;
}

/** The stand-in for the client's HTTP/2 stream. */
class AnswerStream extends Writable {
  readonly #sink: AnswerSink;
  trailers: OutgoingHttpHeaders | undefined;
  #trailersOnly = false;
  #over = false;

  constructor(sink: AnswerSink) {
    super();
    this.#sink = sink;
    // A sink that refuses more (a bound) errs the stream: that ends the call, it is not a crash.
    this.on('error', () => {});
  }

  respond(headers: OutgoingHttpHeaders, options?: { endStream?: boolean }): void {
    if (options?.endStream === true) {
      this.#trailersOnly = true;
      this.#over = true;
      this.#sink.headers(headers, true);
      this.end();
      return;
    }
    this.#sink.headers(headers, false);
  }

  /** An HTTP/2 reset from the relay (the upstream broke the call mid-answer). */
  close(code?: number): void {
    if (!this.#over) {
      this.#over = true;
      this.#sink.end(undefined, code ?? 8);
    }
    this.destroy();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, next: (err?: Error | null) => void): void {
    this.#sink.data(chunk, next);
  }

  override _final(next: (err?: Error | null) => void): void {
    if (!this.#trailersOnly && !this.#over) {
      this.#over = true;
      this.#sink.end(this.trailers, undefined);
    }
    next();
  }
}

export interface NodeCall {
  /** Ends the call from the client's side (the client went away, or the node gave up): the relay cancels upstream. */
  abort(): void;
}

/**
 * Attaches a call to `ctx` whose request is `frames` (complete gRPC frames)
 * and whose answer goes to `sink`; the next `upstream` node relays it.
 */
export function attachNodeCall(ctx: Context, frames: Buffer, sink: AnswerSink): NodeCall {
  const req = new Readable({ read() {} });
  if (frames.length > 0) req.push(frames);
  req.push(null);
  const stream = new AnswerStream(sink);
  const res = {
    stream,
    statusCode: 200,
    addTrailers(trailers: OutgoingHttpHeaders) {
      stream.trailers = { ...stream.trailers, ...trailers };
    },
  };
  attachGrpcCall(ctx, { req, res } as unknown as ClientCall);
  return {
    abort: () => {
      if (!stream.destroyed) stream.destroy();
    },
  };
}

/** One gRPC frame: flag 0 (uncompressed message), 4-byte big-endian length, the message. */
export function messageFrame(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(5 + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

export interface Frame {
  flag: number;
  payload: Buffer;
}

/** Splits a body into gRPC frames; a string says what is wrong when it is not a sequence of whole frames. */
export function splitFrames(body: Buffer): Frame[] | string {
  const frames: Frame[] = [];
  let at = 0;
  while (at < body.length) {
    if (body.length - at < 5) return `truncated frame header at byte ${at}`;
    const length = body.readUInt32BE(at + 1);
    if (body.length - at - 5 < length)
      return `frame at byte ${at} announces ${length} bytes, has ${body.length - at - 5}`;
    frames.push({ flag: body[at] as number, payload: body.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  return frames;
}

/** The gRPC status a reset code means (as gRPC clients read RST_STREAM). */
export function statusOfReset(code: number): number {
  if (code === 8) return 1; // CANCEL → CANCELLED
  if (code === 7) return 14; // REFUSED_STREAM → UNAVAILABLE
  if (code === 11) return 8; // ENHANCE_YOUR_CALM → RESOURCE_EXHAUSTED
  return 13; // INTERNAL
}
