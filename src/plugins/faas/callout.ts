import type { OutboundDispatcher } from '../../outbound/pool-registry.js';
import type { Context } from '../../core/context.js';
import { NodeError, type KnownErrorCode } from '../../core/errors.js';
import { classifyFailure } from '../../outbound/classify.js';
import {
  exchange,
  type ExchangeLimits,
  type ExchangeRequest,
  type ExchangeResult,
} from '../../outbound/exchange.js';
import { cleanResponseHeaders } from '../../outbound/proxy-headers.js';

/**
 * The deadline is ours (one timer for connect, request and the whole response
 * body), so the exchange's own per-phase limits stay off and the body is
 * always buffered.
 */
const BUFFERED: ExchangeLimits = { deadlineMs: 0, idleMs: 0, streaming: false };

/**
 * The error a function-as-a-service node reports, by cause: 504 past the
 * timeout, 503 when connecting to or exchanging with the endpoint failed, 502
 * when the request could not be built. One code per node type.
 */
export class CalloutErrors {
  readonly code: KnownErrorCode;
  readonly #type: string;

  constructor(type: string, code: KnownErrorCode) {
    this.#type = type;
    this.code = code;
  }

  /** The request could not be built (bad endpoint URI, unusable path segment…). */
  build(reason: string, cause?: unknown): NodeError {
    return this.#error(
      502,
      'bad_gateway',
      `${this.#type}: cannot build the callout request: ${reason}`,
      {},
      cause,
    );
  }

  timeout(endpoint: string, timeoutMs: number): NodeError {
    return this.#error(
      504,
      'gateway_timeout',
      `${this.#type}: callout exceeded its ${timeoutMs} ms timeout`,
      {
        endpoint,
      },
    );
  }

  /** Connecting or exchanging failed, or the reply was unusable. */
  failed(endpoint: string, reason: string, cause?: unknown): NodeError {
    return this.#error(
      503,
      'service_unavailable',
      `${this.#type}: callout failed: ${reason}`,
      { endpoint },
      cause,
    );
  }

  /** Maps an `exchange()` rejection; `expired` tells that our own whole-call timer fired. */
  fromExchange(err: unknown, endpoint: string, expired: boolean, timeoutMs: number): NodeError {
    if (expired) return this.timeout(endpoint, timeoutMs);
    const failure = classifyFailure(err);
    switch (failure.code) {
      case 'UPSTREAM_TIMEOUT':
        return this.timeout(endpoint, timeoutMs);
      case 'UPSTREAM_REQUEST_BUILD_ERROR':
        return this.build(failure.reason, err);
      case 'UPSTREAM_CLIENT_ABORTED':
        // Nobody will see this answer; 499 keeps it out of the 5xx figures.
        return this.#error(
          499,
          'client_closed_request',
          `${this.#type}: ${failure.reason}`,
          { endpoint },
          err,
        );
      default:
        return this.failed(endpoint, failure.reason, err);
    }
  }

  #error(
    status: number,
    error: string,
    message: string,
    metadata: Record<string, unknown>,
    cause?: unknown,
  ): NodeError {
    return new NodeError(this.code, message, {
      status,
      error,
      metadata,
      ...(cause === undefined ? {} : { cause }),
    });
  }
}

/**
 * Sends one callout under a whole-call deadline (connect, request and the full
 * response body) that also follows the client going away.
 */
export async function callOut(
  pool: OutboundDispatcher,
  endpoint: string,
  request: ExchangeRequest,
  timeoutMs: number,
  ctx: Context,
  errors: CalloutErrors,
): Promise<ExchangeResult> {
  const deadline = new Deadline(timeoutMs, ctx.signal);
  try {
    return await exchange(pool, request, BUFFERED, deadline.signal, null);
  } catch (err) {
    throw errors.fromExchange(err, endpoint, deadline.expired, timeoutMs);
  } finally {
    deadline.dispose();
  }
}

/** Puts the function's reply on the context: status unchanged, headers and buffered body. */
export function applyReply(ctx: Context, reply: ExchangeResult): void {
  const response = ctx.response;
  response.discardStream();
  response.status = reply.status;
  response.headers = cleanResponseHeaders(reply.headers);
  response.body = reply.body ?? Buffer.alloc(0);
}

/** One timer and one listener per callout; `handleEvent` avoids a closure per request. */
class Deadline {
  readonly #controller = new AbortController();
  readonly #client: AbortSignal;
  readonly #timer: NodeJS.Timeout;
  expired = false;

  constructor(timeoutMs: number, client: AbortSignal) {
    this.#client = client;
    this.#timer = setTimeout(expire, timeoutMs, this);
    if (client.aborted) this.#controller.abort();
    else client.addEventListener('abort', this);
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The client went away. */
  handleEvent(): void {
    this.#controller.abort();
  }

  expire(): void {
    this.expired = true;
    this.#controller.abort();
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#client.removeEventListener('abort', this);
  }
}

function expire(deadline: Deadline): void {
  deadline.expire();
}
