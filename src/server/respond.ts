import { ServerResponse, STATUS_CODES } from 'node:http';
import { Http2ServerResponse, type ServerHttp2Stream } from 'node:http2';
import { ERROR_CODES, invalidResponseBody } from '../core/errors.js';
import { classifyCause } from '../outbound/classify.js';
import { acceptsTrailers, relayTrailers } from '../outbound/upstream-body.js';
import type { Readable } from 'node:stream';
import type { Context, HeaderMap } from '../core/context.js';
import type { Reply } from '../core/transport.js';

/** What answering needs of a response (node:http, HTTP/2 compatibility, the lean front). */
export type { Reply } from '../core/transport.js';

/**
 * Fires `gone` when the client leaves before the answer is complete: an
 * HTTP/1.1 connection that closes first, or an HTTP/2 stream that a
 * RST_STREAM, a GOAWAY or a disconnect closes before we sent END_STREAM.
 * HTTP/2 reads the stream's own state: `Http2ServerResponse.writableFinished`
 * is true once a reset stream closed (node ends the writable side on close).
 */
export function watchClientGone(res: Reply, gone: { fire(): void }): void {
  if (res instanceof Http2ServerResponse) {
    const stream = res.stream;
    if (stream.closed || stream.destroyed) {
      if (streamAbandoned(res)) gone.fire();
      return;
    }
    // 'aborted' comes first, in the same turn as the RST_STREAM or the session's end.
    stream.once('aborted', () => gone.fire());
    res.once('close', () => {
      if (streamAbandoned(res)) gone.fire();
    });
    return;
  }
  res.once('close', () => {
    if (!res.writableFinished) gone.fire();
  });
}

/**
 * The stream closed before our answer was complete. node sets `aborted` when a
 * stream closes while its writable side is open (node 20 to 24 alike); a HEAD
 * stream's writable side is ended as it opens, so a stream closed before its
 * headers went out counts too.
 */
function streamAbandoned(res: { readonly stream: ServerHttp2Stream }): boolean {
  const stream = res.stream;
  return stream.aborted || !stream.headersSent;
}

/** Framing and connection-level headers: owned by the writer below, and forbidden in HTTP/2. */
const NOT_FORWARDED = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'upgrade',
  'http2-settings',
]);

/** Copies the defined end-to-end headers. */
function outgoingHeaders(headers: HeaderMap): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || NOT_FORWARDED.has(name)) continue;
    out[name] = value;
  }
  return out;
}

/**
 * Sends `ctx.response`: status 0 goes out as 200 (docs/configuration.md#gatewayyaml). A buffered body
 * gets an exact Content-Length; an upstream stream is relayed (see {@link relay}).
 */
export function sendResponse(res: Reply, ctx: Context, done: () => void): void {
  const r = ctx.response;
  const status = r.status === 0 ? 200 : r.status;
  const headers = outgoingHeaders(r.headers);
  const noContent = status === 204 || status === 304 || status < 200;
  const head = noContent || ctx.request.method === 'HEAD';
  const stream = r.stream;
  if (stream !== null) {
    const length = r.headers['content-length'];
    if (typeof length === 'string') headers['content-length'] = length;
    if (head) {
      stream.destroy();
      if (writeStatus(res, status, headers)) res.end();
      done();
      return;
    }
    relay(stream, res, status, headers, done, acceptsTrailers(ctx.request.headers.te));
    return;
  }
  if (!noContent) headers['content-length'] = String(r.body?.length ?? 0);
  if (writeStatus(res, status, headers)) {
    if (head || r.body === null) res.end();
    else res.end(r.body);
  }
  done();
}

/**
 * Writes the status line and headers; a header value Node refuses (CR, LF,
 * NUL, non-Latin-1: often a reflected request value) turns the answer into a
 * 502 instead. Returns false when it did.
 */
function writeStatus(res: Reply, status: number, headers: Record<string, string | string[]>): boolean {
  try {
    res.writeHead(status, headers);
    return true;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    sendJson(res, 502, invalidResponseBody(message));
    return false;
  }
}

/** A small JSON answer produced by the server itself (404 no route, 400, 413, 502). */
export function sendJson(res: Reply, status: number, payload: unknown, extra?: Record<string, string>): void {
  const body = JSON.stringify(payload);
  // A writeHead that threw on a bad header already set the reason phrase of its own status.
  if (res instanceof ServerResponse) res.statusMessage = STATUS_CODES[status] ?? 'unknown';
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...extra,
  });
  res.end(body);
}

/**
 * Relays an upstream body with backpressure; the status line goes out with
 * the first byte (or the end), so a body that fails before it still becomes a
 * proper error answer with the catalog code (`UPSTREAM_BODY_READ_ERROR` 502,
 * `UPSTREAM_TIMEOUT` 504) rather than an empty reply. A failure after the first
 * byte tears both sides down: the client sees an aborted connection, never a
 * truncated body that looks complete. Plain listeners instead of
 * `stream.pipeline`, which allocates an AbortController per call.
 */
function relay(
  stream: Readable,
  res: Reply,
  status: number,
  headers: Record<string, string | string[]>,
  done: () => void,
  trailers: boolean,
): void {
  let committed = false;
  let ended = false;
  let settled = false;
  const settle = (failed: boolean) => {
    if (settled) return;
    settled = true;
    if (failed) {
      stream.destroy();
      res.destroy();
    }
    done();
  };
  const commit = (): boolean => {
    committed = true;
    if (writeStatus(res, status, headers)) return true;
    stream.destroy();
    return false;
  };
  const fail = (err: unknown) => {
    if (committed) {
      settle(true);
      return;
    }
    committed = true;
    const failure = classifyCause(err, 'body');
    if (failure.code === 'UPSTREAM_CLIENT_ABORTED') {
      settle(true);
      return;
    }
    const { status: errorStatus, error } = ERROR_CODES[failure.code];
    sendJson(res, errorStatus, {
      error,
      code: failure.code,
      message: `upstream body failed before its first byte: ${failure.reason}`,
    });
  };
  stream.on('data', (chunk: Buffer) => {
    if (!committed && !commit()) return;
    if (!res.write(chunk)) stream.pause();
  });
  stream.once('end', () => {
    if (!committed && !commit()) return;
    if (trailers) relayTrailers(stream, res);
    ended = true;
    res.end();
  });
  stream.on('error', fail);
  res.on('drain', () => stream.resume());
  res.once('finish', () => settle(false));
  // A close before the body's end is the client leaving (or a reset); never read writableFinished,
  // which an HTTP/2 response reports as true once its reset stream closed.
  res.once('close', () => settle(!ended));
  // Failed (or was cut by the client) before we started listening.
  if (stream.errored !== null) fail(stream.errored);
  else if (stream.destroyed) settle(true);
}
