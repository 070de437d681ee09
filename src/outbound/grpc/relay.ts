import {
  constants,
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http2';
import type { Context } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { grpcStreamProgressed } from './progress.js';
import { markRelayed } from '../websocket-relay.js';
import { classifyCause } from '../classify.js';
import { ClientAbortedError, DeadlineExceededError, type ExchangePhase } from '../errors.js';
import type { Target } from '../target.js';
import type { ClientCall } from './client-call.js';
import { formatGrpcTimeout, parseGrpcTimeout } from './timeout.js';

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR, NGHTTP2_REFUSED_STREAM, NGHTTP2_FLAG_END_STREAM } = constants;

/**
 * The client's messages are kept for a retry only while they fit in this many
 * bytes (docs/grpc.md, "Retries"); a call that sent more before the first
 * answer is not retried.
 */
export const REPLAY_MAX_BYTES = 64 * 1024;

/** What a relay needs of its upstream node. */
export interface RelayHost {
  /** `timeout_ms`: connect + response headers per attempt, and the cap of `grpc-timeout`. */
  readonly timeoutMs: number;
  /** Extra attempts on UNAVAILABLE before the first byte. */
  readonly retries: number;
  readonly logger: Logger;
  readonly where: Readonly<Record<string, string>>;
  pick(ctx: Context, tried: readonly Target[] | null): Target;
  session(target: Target): ClientHttp2Session;
  headers(ctx: Context, target: Target): OutgoingHttpHeaders;
}

/** A trailers-only UNAVAILABLE (grpc-status 14) from the target: a failure for passive health. */
class UnavailableAnswer extends Error {
  readonly code = 'SY_GRPC_UNAVAILABLE';
  constructor(message: string) {
    super(`answered UNAVAILABLE${message === '' ? '' : `: ${message}`}`);
  }
}

/** One attempt: a stream to one target. */
interface Attempt {
  target: Target;
  session: ClientHttp2Session | null;
  stream: ClientHttp2Stream | null;
  startedAt: number;
  phase: ExchangePhase;
  /** Told the target how the attempt ended (exactly once). */
  ended: boolean;
}

/**
 * Relays one gRPC call (docs/grpc.md, "The upstream leg"): stream to stream in
 * both directions with backpressure, trailers intact. Before the first byte
 * of the answer, UNAVAILABLE (a trailers-only grpc-status 14, or the
 * connection refused or reset) is retried on another target, replaying the
 * client's messages; the call's deadline (`grpc-timeout`, capped by
 * `timeout_ms`) goes upstream and is enforced here: when it passes the client
 * gets DEADLINE_EXCEEDED from the gateway and the upstream stream is reset
 * with CANCEL.
 */
export class GrpcRelay {
  readonly #host: RelayHost;
  readonly #ctx: Context;
  readonly #call: ClientCall;
  readonly #done: () => void;
  readonly #fail: (err: NodeError) => void;
  #attempt: Attempt | null = null;
  #attempts = 0;
  #tried: Target[] | null = null;
  /** The client's messages so far, while a retry may still need them. */
  #replay: Buffer[] | null = [];
  #replayBytes = 0;
  #clientEnded = false;
  /** Response headers went to the client: no more retries, failures are resets or trailers. */
  #answered = false;
  /** The promise is settled (done or fail called, or the answer is out and `done` awaits the close). */
  #settled = false;
  /** The call's deadline as `performance.now()` time, when the client sent `grpc-timeout`. */
  #deadlineAt = 0;
  #budgetMs = 0;
  #capped = false;
  #expired = false;
  #callTimer: NodeJS.Timeout | undefined;
  #headerTimer: NodeJS.Timeout | undefined;

  constructor(
    host: RelayHost,
    ctx: Context,
    call: ClientCall,
    done: () => void,
    fail: (err: NodeError) => void,
  ) {
    this.#host = host;
    this.#ctx = ctx;
    this.#call = call;
    this.#done = done;
    this.#fail = fail;
  }

  start(): void {
    const { req, res } = this.#call;
    const client = res.stream;
    const asked = parseGrpcTimeout(this.#ctx.request.headers['grpc-timeout']);
    if (asked !== undefined) {
      this.#capped = asked > this.#host.timeoutMs;
      this.#budgetMs = Math.min(asked, this.#host.timeoutMs);
      this.#deadlineAt = this.#ctx.startedAt + this.#budgetMs;
      this.#callTimer = setTimeout(this.#expire, Math.max(0, this.#deadlineAt - performance.now()));
      this.#callTimer.unref();
    }
    client.once('close', this.#clientClosed);
    if (client.destroyed || client.closed) {
      this.#clientClosed();
      return;
    }
    req.on('data', this.#clientData);
    req.once('end', this.#clientEnd);
    this.#next();
  }

  // --- the client's side --------------------------------------------------------

  readonly #clientData = (chunk: Buffer): void => {
    grpcStreamProgressed(this.#call.res.stream);
    if (this.#replay !== null) {
      this.#replayBytes += chunk.length;
      if (this.#replayBytes > REPLAY_MAX_BYTES) this.#replay = null;
      else this.#replay.push(chunk);
    }
    const stream = this.#attempt?.stream;
    if (stream == null || stream.destroyed) return;
    if (!stream.write(chunk)) this.#pauseUntilDrained(stream);
  };

  #pauseUntilDrained(stream: ClientHttp2Stream): void {
    const { req } = this.#call;
    req.pause();
    stream.once('drain', () => {
      if (this.#attempt?.stream === stream) req.resume();
    });
  }

  readonly #clientEnd = (): void => {
    this.#clientEnded = true;
    const stream = this.#attempt?.stream;
    if (stream != null && !stream.destroyed) stream.end();
  };

  readonly #clientClosed = (): void => {
    this.#clearTimers();
    const attempt = this.#attempt;
    if (attempt?.stream != null && !attempt.stream.closed && !attempt.stream.destroyed)
      attempt.stream.close(NGHTTP2_CANCEL);
    if (this.#answered) {
      if (attempt !== null) this.#endAttempt(attempt, null);
      this.#done();
      return;
    }
    if (attempt !== null) this.#endAttempt(attempt, new ClientAbortedError());
    this.#failWith(attempt, new ClientAbortedError());
  };

  // --- attempts -------------------------------------------------------------------

  #next(): void {
    const host = this.#host;
    const ctx = this.#ctx;
    const target = host.pick(ctx, this.#tried);
    const attempt: Attempt = {
      target,
      session: null,
      stream: null,
      startedAt: performance.now(),
      phase: 'connect',
      ended: false,
    };
    this.#attempt = attempt;
    this.#attempts++;
    target.exchangeStarted();
    const headers = host.headers(ctx, target);
    if (this.#deadlineAt > 0)
      headers['grpc-timeout'] = formatGrpcTimeout(this.#deadlineAt - performance.now());
    let stream: ClientHttp2Stream;
    try {
      attempt.session = host.session(target);
      stream = attempt.session.request(headers, { endStream: false });
    } catch (err) {
      this.#attemptFailed(attempt, err as Error);
      return;
    }
    attempt.stream = stream;
    attempt.phase = 'request';
    if (this.#deadlineAt === 0) {
      // Without grpc-timeout, timeout_ms bounds the wait for response headers only.
      this.#headerTimer = setTimeout(() => {
        if (this.#attempt !== attempt || this.#answered) return;
        stream.close(NGHTTP2_CANCEL);
        this.#attemptFailed(attempt, new DeadlineExceededError(host.timeoutMs));
      }, host.timeoutMs);
      this.#headerTimer.unref();
    }
    stream.once('response', (h: IncomingHttpHeaders, flags: number) => this.#response(attempt, h, flags));
    stream.on('error', (err: Error) => {
      if (this.#attempt !== attempt) return;
      if (!this.#answered) this.#attemptFailed(attempt, err);
      else this.#brokeMidCall(attempt, err);
    });
    stream.once('close', () => this.#upstreamClosed(attempt));

    // A retry replays what the client sent so far; then the client's messages flow on as they arrive.
    const { req } = this.#call;
    let full = false;
    for (const chunk of this.#replay ?? []) full = !stream.write(chunk) || full;
    if (this.#clientEnded) stream.end();
    else if (full) this.#pauseUntilDrained(stream);
    else if (req.isPaused()) req.resume();
  }

  #response(attempt: Attempt, headers: IncomingHttpHeaders, flags: number): void {
    if (this.#attempt !== attempt || this.#expired) return;
    clearTimeout(this.#headerTimer);
    const trailersOnly = (flags & NGHTTP2_FLAG_END_STREAM) !== 0;
    const target = attempt.target;
    if (trailersOnly && String(headers['grpc-status']) === '14' && this.#canRetry()) {
      const message =
        typeof headers['grpc-message'] === 'string' ? decodeURIComponent(headers['grpc-message']) : '';
      this.#retry(attempt, new UnavailableAnswer(message));
      return;
    }
    attempt.phase = 'body';
    this.#answered = true;
    this.#replay = null;
    target.exchangeHeaders(performance.now() - attempt.startedAt);
    const status = Number(headers[':status'] ?? 502);
    const ctx = this.#ctx;
    ctx.upstream = {
      where: this.#host.where,
      address: target.address,
      status,
      seconds: (performance.now() - attempt.startedAt) / 1000,
    };
    ctx.response.status = status;
    markRelayed(ctx);
    // From here the promise settles only through `done`, when the client stream closes.
    this.#settled = true;
    const { res } = this.#call;
    const client = res.stream;
    const upstream = attempt.stream!;
    // The client is gone, or the gateway already answered it (the listener's idle guard).
    if (client.destroyed || client.closed || client.headersSent) {
      upstream.close(NGHTTP2_CANCEL);
      return;
    }
    const out = responseHeaders(headers);
    res.statusCode = status;
    if (trailersOnly) {
      // Trailers-only: grpc-status is in this one HEADERS frame.
      this.#clearTimers();
      client.respond(out, { endStream: true });
      return;
    }
    client.respond(out, { waitForTrailers: true });
    // The compatibility response owns the stream's 'wantTrailers' and sends what addTrailers()
    // collected; the upstream's trailers arrive before its 'end', hence before client.end().
    let trailers = false;
    upstream.once('trailers', (t: IncomingHttpHeaders) => {
      trailers = true;
      res.addTrailers(responseHeaders(t, false));
    });
    upstream.once('end', () => {
      this.#clearTimers();
      // An upstream that ended its stream without trailers broke the gRPC protocol.
      if (!trailers && !this.#expired)
        res.addTrailers({
          'grpc-status': '13',
          'grpc-message': 'upstream ended the call without trailers',
        });
    });
    upstream.on('data', () => grpcStreamProgressed(client));
    upstream.pipe(client);
  }

  /** Mid-call: the client learns the call broke the way gRPC over HTTP/2 says (RST_STREAM). */
  #brokeMidCall(attempt: Attempt, err: Error): void {
    this.#call.req.off('data', this.#clientData);
    this.#endAttempt(attempt, err);
    const client = this.#call.res.stream;
    if (!this.#expired && !client.destroyed && !client.closed)
      client.close(attempt.stream?.rstCode ?? NGHTTP2_CANCEL);
  }

  #upstreamClosed(attempt: Attempt): void {
    if (this.#attempt !== attempt || attempt.ended) return;
    const stream = attempt.stream!;
    if (this.#answered) {
      const code = stream.rstCode;
      const client = this.#call.res.stream;
      // A reset after the answer (no END_STREAM from upstream): pass it on.
      if (
        !this.#expired &&
        code !== undefined &&
        code !== NGHTTP2_NO_ERROR &&
        !client.destroyed &&
        !client.closed
      )
        client.close(code);
      this.#endAttempt(attempt, null);
      return;
    }
    const session = attempt.session;
    const connectionGone = session === null || session.destroyed || session.closed;
    const refused = stream.rstCode === NGHTTP2_REFUSED_STREAM;
    const err = new Error(
      connectionGone
        ? 'connection closed before the answer'
        : `upstream reset the stream before answering (code ${stream.rstCode})`,
    );
    // A connection that went away, or a stream the server refused, never reached a handler.
    this.#attemptFailed(
      attempt,
      Object.assign(err, { code: connectionGone || refused ? 'ECONNRESET' : 'SY_RESET' }),
    );
  }

  /** The attempt failed before an answer: another target when UNAVAILABLE and allowed, else the call fails. */
  #attemptFailed(attempt: Attempt, err: Error): void {
    if (this.#attempt !== attempt || attempt.ended || this.#settled) return;
    clearTimeout(this.#headerTimer);
    const failure = classifyCause(causeOf(err), attempt.phase);
    // Connection refused or reset (not a timeout, not our own pool closing) means UNAVAILABLE.
    const unavailable =
      failure.code === 'UPSTREAM_CONNECTION_ERROR' && failure.targetFault && errCode(err) !== 'SY_RESET';
    if (unavailable && this.#canRetry()) {
      this.#retry(attempt, err);
      return;
    }
    this.#endAttempt(attempt, err);
    this.#failWith(attempt, err);
  }

  #canRetry(): boolean {
    return (
      !this.#answered &&
      !this.#expired &&
      this.#replay !== null &&
      this.#attempts <= this.#host.retries &&
      !this.#ctx.clientGone.aborted
    );
  }

  #retry(attempt: Attempt, err: Error): void {
    const stream = attempt.stream;
    if (stream !== null && !stream.closed && !stream.destroyed) stream.close(NGHTTP2_CANCEL);
    this.#endAttempt(attempt, err);
    const reason = classifyCause(causeOf(err), attempt.phase).reason;
    this.#host.logger.warn(
      { ...this.#host.where, target: attempt.target.address, reason, attempt: this.#attempts },
      'grpc upstream UNAVAILABLE before the answer; retrying on another target',
    );
    (this.#tried ??= []).push(attempt.target);
    this.#next();
  }

  /** `grpc-timeout` (capped by `timeout_ms`) passed: DEADLINE_EXCEEDED from the gateway, CANCEL upstream. */
  readonly #expire = (): void => {
    if (this.#expired) return;
    this.#expired = true;
    const attempt = this.#attempt;
    const { req, res } = this.#call;
    req.off('data', this.#clientData);
    const stream = attempt?.stream;
    if (stream != null) {
      stream.unpipe(res.stream);
      if (!stream.closed && !stream.destroyed) stream.close(NGHTTP2_CANCEL);
    }
    // The client's deadline is not the target's fault.
    if (attempt !== null) this.#endAttempt(attempt, null);
    const message = `deadline of ${this.#budgetMs} ms (grpc-timeout${this.#capped ? ' capped by timeout_ms' : ''}) exceeded`;
    if (!this.#answered) {
      if (this.#settled) return;
      this.#settled = true;
      clearTimeout(this.#headerTimer);
      const where = attempt === null ? '' : ` ${attempt.target.address}`;
      this.#fail(
        new NodeError('UPSTREAM_TIMEOUT', `grpc upstream${where}: ${message}`, {
          metadata: attempt === null ? {} : { target: attempt.target.address },
        }),
      );
      return;
    }
    const client = res.stream;
    if (client.destroyed || client.closed) return;
    res.addTrailers({ 'grpc-status': '4', 'grpc-message': message });
    client.end();
  };

  #failWith(attempt: Attempt | null, err: Error): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#clearTimers();
    this.#call.req.off('data', this.#clientData);
    const failure = classifyCause(causeOf(err), attempt?.phase ?? 'connect');
    const address = attempt?.target.address ?? '';
    this.#fail(
      new NodeError(failure.code, `grpc upstream ${address}: ${failure.reason}`, {
        metadata: { target: address },
        cause: err,
      }),
    );
  }

  #endAttempt(attempt: Attempt, err: Error | null): void {
    if (attempt.ended) return;
    attempt.ended = true;
    attempt.target.exchangeEnded(err, attempt.phase);
  }

  #clearTimers(): void {
    clearTimeout(this.#headerTimer);
    clearTimeout(this.#callTimer);
  }
}

/** Headers of the client's hop and hop-by-hop fields that never cross the gateway (RFC 9113 §8.2.2). */
export const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  'host',
  'te',
  'content-length',
]);

/** Response headers and trailers as the client may receive them: no pseudo-headers but `:status`. */
function responseHeaders(headers: IncomingHttpHeaders, withStatus = true): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const name in headers) {
    if (name.charCodeAt(0) === 58 || HOP.has(name)) continue;
    out[name] = headers[name];
  }
  if (withStatus) out[':status'] = Number(headers[':status'] ?? 200);
  return out;
}

/** Node wraps a failed session's error in the stream's; the socket error says what happened. */
function causeOf(err: unknown): unknown {
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause instanceof Error ? cause : err;
}

function errCode(err: unknown): unknown {
  return (causeOf(err) as { code?: unknown } | null)?.code;
}
