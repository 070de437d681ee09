import type { ServerReply } from './data-plane.js';
import type { Readable } from 'node:stream';
import type { Context, HeaderMap } from '../engine/context.js';

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
 * Sends `ctx.response`: status 0 goes out as 200 (COMPAT §3.2). A buffered body
 * gets an exact Content-Length; an upstream stream is piped, and a failure after
 * the first byte aborts the connection rather than faking an error body.
 */
export function sendResponse(res: ServerReply, ctx: Context, done: () => void): void {
  const r = ctx.response;
  const status = r.status === 0 ? 200 : r.status;
  const headers = outgoingHeaders(r.headers);
  const noContent = status === 204 || status === 304 || status < 200;
  const head = noContent || ctx.request.method === 'HEAD';
  const stream = r.stream;
  try {
    if (stream !== null) {
      const length = r.headers['content-length'];
      if (typeof length === 'string') headers['content-length'] = length;
      res.writeHead(status, headers);
      if (head) {
        stream.destroy();
        res.end();
        done();
        return;
      }
      relay(stream, res, done);
      return;
    }
    if (!noContent) headers['content-length'] = String(r.body?.length ?? 0);
    res.writeHead(status, headers);
    if (head || r.body === null) res.end();
    else res.end(r.body);
  } catch (err) {
    stream?.destroy();
    if (!res.headersSent) {
      const message = err instanceof Error ? err.message : String(err);
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'bad_gateway', message: `invalid response: ${message}` }));
    } else res.destroy();
  }
  done();
}

/** A small JSON answer produced by the server itself (404 no route, 400, 413). */
export function sendJson(
  res: ServerReply,
  status: number,
  payload: unknown,
  extra?: Record<string, string>,
): void {
  const body = JSON.stringify(payload);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...extra,
  });
  res.end(body);
}

/**
 * Pipes an upstream body to the client with backpressure. Cheaper than
 * `stream.pipeline`, which allocates an AbortController (and a DOMException on
 * every completion) per call. A failure on either side tears both down: the
 * client sees an aborted connection, never an error body.
 */
function relay(stream: Readable, res: ServerReply, done: () => void): void {
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
  stream.on('error', () => settle(true));
  stream.once('end', () => {
    res.end();
  });
  res.once('finish', () => settle(false));
  res.once('close', () => settle(!res.writableFinished));
  stream.pipe(res as NodeJS.WritableStream, { end: false });
}
