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
