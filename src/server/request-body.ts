import type { IncomingMessage } from 'node:http';
import { constants as h2, type Http2ServerRequest } from 'node:http2';
import type { Context } from '../core/context.js';
import { RequestBodyStream, requestStreamOf, type RequestBodySource } from '../outbound/request-stream.js';
import type { ServerRequest } from './server-request.js';
import { LeanRequest, RequestAborted, resetSocket } from './lean/lean-request.js';

export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`request body exceeds ${limit} bytes`);
  }
}

/**
 * True when the request has a body to read: in HTTP/1.1 when it announces one
 * (RFC 9112 §6.3); in HTTP/2 also when its HEADERS frame did not end the
 * stream, since a DATA frame needs no `content-length` (RFC 9113 §8.1).
 */
export function hasBody(req: ServerRequest): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined) return length !== '0';
  if ('stream' in req) return !req.stream.endAfterHeaders;
  return req.headers['transfer-encoding'] !== undefined;
}

/** The announced Content-Length, or undefined when absent or unreadable (chunked, HTTP/2 DATA only). */
export function announcedLength(req: ServerRequest): number | undefined {
  const raw = req.headers['content-length'];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/**
 * Buffers the whole request body, for policies where a node reads it
 * (docs/routing.md#request-bodies), rejecting with BodyTooLarge as soon as
 * `limit` is passed (or announced).
 */
export function readBody(req: ServerRequest, limit: number): Promise<Buffer> {
  const announced = Number(req.headers['content-length'] ?? NaN);
  if (announced > limit) return Promise.reject(new BodyTooLarge(limit));
  if (req instanceof LeanRequest) return req.readBody(limit, () => new BodyTooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        reject(new BodyTooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/**
 * The body as a stream for the upstream (docs/routing.md#request-bodies): read
 * from the client only as fast as the upstream takes it. Passing `limit`
 * mid-stream destroys the stream with BodyTooLarge (which aborts the upstream
 * request) and resets the client's connection (HTTP/2: its stream).
 * The caller answers an announced oversize with 413 before calling this.
 */
export function streamBody(req: ServerRequest, limit: number): RequestBodyStream {
  const announced = announcedLength(req);
  const tooLarge = () => new BodyTooLarge(limit);
  if (req instanceof LeanRequest) return req.openStream(limit, announced, tooLarge);
  return new NodeBodySource(req, limit, announced, tooLarge).stream;
}

/**
 * Called as the answer starts: a streamed body no upstream took is dropped
 * (the client is read to the end, as node:http does for an unread body);
 * a body an upstream is still taking is left to it.
 */
export function releaseRequestStream(ctx: Context): void {
  const stream = requestStreamOf(ctx);
  if (stream !== undefined && !stream.readableDidRead && !stream.destroyed) stream.destroy();
}

/** node:http's IncomingMessage or an HTTP/2 request, relayed with pause/resume. */
class NodeBodySource implements RequestBodySource {
  readonly stream: RequestBodyStream;
  readonly #req: IncomingMessage | Http2ServerRequest;
  readonly #limit: number;
  readonly #tooLarge: () => Error;
  #ended = false;
  #detached = false;

  constructor(
    req: IncomingMessage | Http2ServerRequest,
    limit: number,
    announced: number | undefined,
    tooLarge: () => Error,
  ) {
    this.#req = req;
    this.#limit = limit;
    this.#tooLarge = tooLarge;
    this.stream = new RequestBodyStream(this, announced);
    // Explicitly paused: adding the 'data' listener must not start the flow before a reader asks.
    req.pause();
    req.on('data', this.#onData);
    req.on('end', this.#onEnd);
    req.on('error', this.#onError);
    req.on('close', this.#onClose);
  }

  readonly #onData = (chunk: Buffer): void => {
    const stream = this.stream;
    stream.received += chunk.length;
    if (stream.received > this.#limit) {
      this.#overLimit();
      return;
    }
    if (!stream.push(chunk)) this.#req.pause();
  };

  readonly #onEnd = (): void => {
    this.#ended = true;
    this.stream.push(null);
  };

  readonly #onError = (err: Error): void => {
    if (!this.#ended) this.stream.destroy(err);
  };

  readonly #onClose = (): void => {
    if (!this.#ended && !this.stream.destroyed) this.stream.destroy(new RequestAborted());
  };

  #overLimit(): void {
    this.#detach();
    this.stream.destroy(this.#tooLarge());
    const req = this.#req;
    if ('stream' in req) {
      if (!req.stream.destroyed) req.stream.close(h2.NGHTTP2_CANCEL);
    } else {
      resetSocket(req.socket);
    }
  }

  resumeBody(): void {
    if (!this.#ended && !this.#detached) this.#req.resume();
  }

  bodyDestroyed(): void {
    if (this.#detached) return;
    this.#detach();
    // The rest of the body is read and dropped so the connection can serve its next request.
    if (!this.#ended) this.#req.resume();
  }

  #detach(): void {
    this.#detached = true;
    const req = this.#req;
    req.off('data', this.#onData);
    req.off('end', this.#onEnd);
    req.off('close', this.#onClose);
    // The error listener stays: an error while the rest is dropped must not crash the process.
  }
}
