import {
  constants,
  createServer,
  type Http2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type Http2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import type { Http2Config } from '../config/system.js';
import { lastProgress } from '../outbound/grpc/progress.js';
import { isGrpcContentType, sendGrpcError } from './grpc-error.js';
import { badRequestBody, REQUEST_TIMEOUT_BODY } from '../core/errors.js';
import type { ThrottledLog } from './throttled-log.js';
import type { ClientBudget } from './connection-limit.js';

const { NGHTTP2_NO_ERROR, NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_REFUSED_STREAM } = constants;

export interface Http2GuardOptions {
  label: string;
  limits: Http2Config;
  /** A new session must open its first stream within this (`timeouts.connection_seconds`). */
  firstStreamMs: number;
  /**
   * A request body must be complete this long after its stream opened
   * (`connection_seconds + read_seconds`); a gRPC call's stream instead may
   * not stay this long without progress.
   */
  requestMs: number;
  log: ThrottledLog;
  /**
   * The listener's `max_connections` budget: each in-flight stream beyond the
   * first of its connection takes a unit; a stream over it gets RST_STREAM REFUSED_STREAM.
   */
  budget?: ClientBudget;
  /** The client address of a session (h2c sessions sit on a JS stream that has none). */
  peerAddress(session: Http2Session): string | undefined;
}

type Http2Handler = (req: Http2ServerRequest, res: Http2ServerResponse) => void;

const TIMEOUT_BODY = JSON.stringify(REQUEST_TIMEOUT_BODY);

/**
 * An HTTP/2 server (compatibility API) whose clients are bounded: the stream
 * cap is advertised in SETTINGS, a session must open a stream within the
 * header timeout, a request body must arrive within the request timeout (408,
 * then RST_STREAM), and a client resetting streams before their response
 * faster than `max_reset_streams` per window gets GOAWAY ENHANCE_YOUR_CALM
 * (CVE-2023-44487). Requests are handed to `onRequest` one macrotask late,
 * after the rest of the socket read is processed: a stream the client reset in
 * the same read as its HEADERS (the attack's shape) never runs its policy, so
 * it never opens an upstream connection.
 */
export function createGuardedHttp2Server(options: Http2GuardOptions, onRequest: Http2Handler): Http2Server {
  const server = createServer({
    settings: { enableConnectProtocol: true, maxConcurrentStreams: options.limits.max_concurrent_streams },
  });
  server.on('session', (session: Http2Session) => watchSession(session, options));
  const handle = (req: Http2ServerRequest, res: Http2ServerResponse) => {
    if (!admitStream(req.stream, options)) return;
    watchRequestBody(req, res, options.requestMs);
    setImmediate(dispatchOpen, req, res, onRequest);
  };
  server.on('request', handle);
  // The compatibility layer sends CONNECT (RFC 8441 WebSocket) to 'connect', and answers 405 without a listener.
  server.on('connect', handle);
  return server;
}

/** Streams in flight per session, for the stream budget. */
const inFlight = new WeakMap<Http2Session, number>();
/** Streams the gateway refused itself: no rapid reset by the client. */
const refused = new WeakSet<ServerHttp2Stream>();

/**
 * Counts a new stream against the listener's budget (the first stream of a
 * connection rides on the connection's own unit); a stream over the budget is
 * refused with RST_STREAM REFUSED_STREAM, which a client may retry (RFC 9113 §8.7).
 */
function admitStream(stream: ServerHttp2Stream, options: Http2GuardOptions): boolean {
  const budget = options.budget;
  const session = stream.session;
  if (budget === undefined || session === undefined) return true;
  const open = inFlight.get(session) ?? 0;
  const extra = open > 0;
  if (extra && !budget.takeStream()) {
    refused.add(stream);
    stream.close(NGHTTP2_REFUSED_STREAM);
    options.log.warn(
      'refused-stream',
      { listener: options.label, remote_address: options.peerAddress(session), max_connections: budget.max },
      `${options.label}: HTTP/2 stream refused, max_connections reached (connections and streams in flight)`,
    );
    return false;
  }
  inFlight.set(session, open + 1);
  stream.once('close', () => {
    inFlight.set(session, (inFlight.get(session) ?? 1) - 1);
    if (extra) budget.releaseStream();
  });
  return true;
}

function dispatchOpen(req: Http2ServerRequest, res: Http2ServerResponse, onRequest: Http2Handler): void {
  const stream = req.stream;
  if (stream.closed || stream.destroyed) return;
  const problem = pseudoHeaderProblem(req);
  if (problem !== undefined) {
    refuse(req, res, problem);
    return;
  }
  onRequest(req, res);
}

/**
 * What nghttp2 lets through and the gateway refuses (400), as HTTP/1.1 refuses
 * an absolute-form target with user info: `:authority` with user info (RFC 9113
 * §8.3.1 forbids it) and a `:scheme` other than `http`/`https`.
 */
function pseudoHeaderProblem(req: Http2ServerRequest): string | undefined {
  const authority = req.headers[':authority'];
  if (typeof authority === 'string' && authority.includes('@'))
    return ':authority must not include user info';
  const scheme = req.headers[':scheme'];
  if (typeof scheme === 'string' && !/^https?$/i.test(scheme)) return ':scheme must be http or https';
  return undefined;
}

function refuse(req: Http2ServerRequest, res: Http2ServerResponse, message: string): void {
  if (isGrpcContentType(req.headers['content-type'])) sendGrpcError(res, 400, message);
  else {
    const body = JSON.stringify(badRequestBody(message));
    res.writeHead(400, {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
    });
    res.end(body);
  }
  // The unread rest of a body is not wanted: RST_STREAM(NO_ERROR) once the answer is out (RFC 9113 §8.1).
  if (!req.stream.endAfterHeaders) req.stream.close(NGHTTP2_NO_ERROR);
}

/** How long a session told GOAWAY ENHANCE_YOUR_CALM has to flush it before it is destroyed. */
const GOAWAY_FLUSH_MS = 250;

function endSession(session: Http2Session): void {
  // The error carries the code of the final GOAWAY (destroy(undefined, code) would send NO_ERROR).
  if (!session.destroyed) session.destroy(new Error('HTTP/2 rapid reset'), NGHTTP2_ENHANCE_YOUR_CALM);
}

/** First-stream deadline and rapid-reset accounting of one client connection. */
function watchSession(session: Http2Session, options: Http2GuardOptions): void {
  const maxResets = options.limits.max_reset_streams;
  const windowMs = options.limits.reset_window_seconds * 1000;
  let firstStream: NodeJS.Timeout | undefined = setTimeout(() => {
    if (!session.destroyed) session.destroy();
  }, options.firstStreamMs);
  firstStream.unref();
  session.once('close', () => clearTimeout(firstStream));
  let windowStart = 0;
  let resets = 0;
  let calmed = false;
  session.on('stream', (stream: ServerHttp2Stream) => {
    if (firstStream !== undefined) {
      clearTimeout(firstStream);
      firstStream = undefined;
    }
    stream.once('close', () => {
      // Only streams that ended before any answer count: the reset cost us work and the client nothing.
      if (
        stream.rstCode === NGHTTP2_NO_ERROR ||
        stream.headersSent ||
        calmed ||
        session.destroyed ||
        refused.has(stream)
      )
        return;
      const now = Date.now();
      if (now - windowStart > windowMs) {
        windowStart = now;
        resets = 0;
      }
      if (++resets <= maxResets) return;
      calmed = true;
      options.log.warn(
        'rapid-reset',
        {
          listener: options.label,
          remote_address: options.peerAddress(session),
          max_reset_streams: maxResets,
          reset_window_seconds: options.limits.reset_window_seconds,
        },
        `${options.label}: HTTP/2 client reset too many streams (rapid reset); GOAWAY ENHANCE_YOUR_CALM`,
      );
      // Streams after the GOAWAY's last stream id are ignored from here on. The frame goes out on a
      // later turn, and destroying the session now (often inside this very read) would drop it.
      session.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
      setTimeout(endSession, GOAWAY_FLUSH_MS, session).unref();
    });
  });
}

/**
 * The session idle timeout cannot fire while a client trickles DATA frames,
 * so each stream with a body gets its own deadline; a CONNECT tunnel is
 * bidirectional for its whole life and is exempt. A gRPC call may stream for
 * as long as it makes progress (docs/grpc.md, "Long-lived streams").
 */
function watchRequestBody(req: Http2ServerRequest, res: Http2ServerResponse, ms: number): void {
  const stream = req.stream;
  if (stream.endAfterHeaders || req.method === 'CONNECT') return;
  if (isGrpcContentType(req.headers['content-type'])) {
    watchGrpcStream(req, res, ms);
    return;
  }
  const timer = setTimeout(requestTimedOut, ms, req, res);
  const clear = () => clearTimeout(timer);
  stream.once('end', clear);
  stream.once('close', clear);
}

function requestTimedOut(req: Http2ServerRequest, res: Http2ServerResponse): void {
  const stream = req.stream;
  // The body arrived (END_STREAM received) but was not read: the request is complete, not slow.
  if (stream.destroyed || stream.closed || stream.state.remoteClose === 1) return;
  if (stream.headersSent) {
    stream.close(NGHTTP2_CANCEL);
    return;
  }
  res.writeHead(408, { 'content-type': 'application/json', 'content-length': String(TIMEOUT_BODY.length) });
  res.end(TIMEOUT_BODY);
  // RST_STREAM(NO_ERROR) once the 408 is out (RFC 9113 §8.1): stop the client sending the rest.
  stream.close(NGHTTP2_NO_ERROR);
}

/**
 * A gRPC call whose client is still sending is bounded by progress, not by a
 * total deadline: it is cut when `ms` pass with no message relayed either way
 * (the client's DATA frames or the upstream's), and it is free once the
 * client has sent END_STREAM (as any request). The timer is re-armed lazily:
 * progress only records a time.
 */
function watchGrpcStream(req: Http2ServerRequest, res: Http2ServerResponse, ms: number): void {
  const stream = req.stream;
  const progress = { at: performance.now() };
  lastProgress.set(stream, progress);
  let timer: NodeJS.Timeout;
  const check = () => {
    const idleMs = performance.now() - progress.at;
    if (idleMs < ms) {
      timer = setTimeout(check, ms - idleMs);
      timer.unref();
      return;
    }
    lastProgress.delete(stream);
    grpcStreamIdle(req, res, ms);
  };
  timer = setTimeout(check, ms);
  timer.unref();
  const clear = () => {
    clearTimeout(timer);
    lastProgress.delete(stream);
  };
  stream.once('end', clear);
  stream.once('close', clear);
}

function grpcStreamIdle(req: Http2ServerRequest, res: Http2ServerResponse, ms: number): void {
  const stream = req.stream;
  if (stream.destroyed || stream.closed || stream.state.remoteClose === 1) return;
  if (stream.headersSent) {
    stream.close(NGHTTP2_CANCEL);
    return;
  }
  sendGrpcError(
    res,
    408,
    `gRPC stream idle for ${ms} ms (timeouts.connection_seconds + timeouts.read_seconds)`,
  );
  // RST_STREAM(NO_ERROR) once the answer is out (RFC 9113 §8.1): stop the client sending the rest.
  stream.close(NGHTTP2_NO_ERROR);
}

/**
 * HEADERS frames handed to nghttp2 per event-loop turn, at most (see {@link StreamOpenPacer}); under
 * Node's 100 refusals in a row, so one turn's refused streams can never end a session.
 */
const STREAMS_OPENED_PER_TURN = 64;
const PREFACE_LENGTH = 24;
const FRAME_HEADER_LENGTH = 9;
const HEADERS_FRAME = 0x1;

/**
 * Paces the bytes of a client connection fed to nghttp2 from JavaScript (h2c
 * after sniffing): at most {@link STREAMS_OPENED_PER_TURN} HEADERS frames per
 * event-loop turn. Node 22 and 24 (not 20) keep each stream that a read
 * opened and reset until the loop turns, and refuse new ones beyond
 * `max_concurrent_streams`; 100 refusals in a row end the session with GOAWAY
 * INTERNAL_ERROR (`maxSessionRejectedStreams`) before the rapid-reset guard
 * hears of any of those streams, which on a JS-fed session happens only after
 * the read. One read of a few KB (a client's rapid resets that piled up while
 * the loop was busy) is enough. Per turn the guard sees every reset, so it
 * answers with its own GOAWAY ENHANCE_YOUR_CALM.
 */
export class StreamOpenPacer {
  #preface = PREFACE_LENGTH;
  readonly #header = Buffer.alloc(FRAME_HEADER_LENGTH);
  #headerBytes = 0;
  #payloadLeft = 0;
  #opened = 0;

  /**
   * How many bytes of `chunk` may go to nghttp2 in this turn: all of it, or up
   * to the next HEADERS frame after this turn's quota (0: wait for the next turn).
   */
  admit(chunk: Buffer): number {
    let at = 0;
    while (at < chunk.length) {
      if (this.#preface > 0 || this.#payloadLeft > 0) {
        const skipped = Math.min(this.#preface || this.#payloadLeft, chunk.length - at);
        if (this.#preface > 0) this.#preface -= skipped;
        else this.#payloadLeft -= skipped;
        at += skipped;
        continue;
      }
      // Cut only before a HEADERS frame: a stream's RST_STREAM stays in the piece of its HEADERS.
      if (
        this.#headerBytes === 0 &&
        this.#opened >= STREAMS_OPENED_PER_TURN &&
        chunk[at + 3] === HEADERS_FRAME
      )
        return at;
      const copied = chunk.copy(
        this.#header,
        this.#headerBytes,
        at,
        at + FRAME_HEADER_LENGTH - this.#headerBytes,
      );
      this.#headerBytes += copied;
      at += copied;
      if (this.#headerBytes < FRAME_HEADER_LENGTH) break;
      this.#headerBytes = 0;
      this.#payloadLeft = this.#header.readUIntBE(0, 3);
      if (this.#header[3] === HEADERS_FRAME && this.#opened++ === 0) setImmediate(() => (this.#opened = 0));
    }
    return chunk.length;
  }
}
