import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';

/** The producer side of an {@link UpstreamBody}: the exchange that feeds it. */
export interface BodySource {
  /** The consumer wants more: lift backpressure on the upstream socket. */
  resumeBody(): void;
  /** The body was destroyed (by the consumer, or after the exchange ended). */
  bodyDestroyed(err: Error | null): void;
}

const OPTIONS = { highWaterMark: 64 * 1024 };

/**
 * A response body still arriving from the target. Backpressure reaches the
 * upstream socket (the exchange pauses it when `push` returns false), and
 * destroying the body aborts the upstream request.
 */
export class UpstreamBody extends Readable {
  readonly #source: BodySource;
  /** The target's trailer fields (chunked HTTP/1.1), set before the end; null when it sent none. */
  trailers: IncomingHttpHeaders | null = null;

  constructor(source: BodySource) {
    super(OPTIONS);
    this.#source = source;
  }

  override _read(): void {
    this.#source.resumeBody();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.#source.bodyDestroyed(err);
    callback(err);
  }
}

/** The client said it accepts trailer fields (`TE: trailers`, RFC 9110 §10.1.4). */
export function acceptsTrailers(te: string | string[] | undefined): boolean {
  const value = Array.isArray(te) ? te.join(',') : te;
  return value !== undefined && /(?:^|,)\s*trailers\s*(?:;|,|$)/i.test(value);
}

/**
 * Hands the target's trailers, if `body` carried any, to the client response
 * before its end (node:http and the lean front send them after the last chunk
 * of a chunked answer, HTTP/2 as a trailing HEADERS frame). docs/grpc.md,
 * "Trailers on HTTP/1.1".
 */
export function relayTrailers(body: Readable, res: object): void {
  const trailers = body instanceof UpstreamBody ? body.trailers : null;
  const add = (res as { addTrailers?: (headers: IncomingHttpHeaders) => void }).addTrailers;
  if (trailers === null || typeof add !== 'function') return;
  try {
    add.call(res, trailers);
  } catch {
    // A trailer value that cannot go on the wire is dropped, not a failed answer.
  }
}
