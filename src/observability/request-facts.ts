import type { Socket } from 'node:net';
import type { Context } from '../core/context.js';
import type { ServerRequest } from '../server/data-plane.js';
import { requestStreamOf } from '../outbound/request-stream.js';

const CLASSES = ['other', '1xx', '2xx', '3xx', '4xx', '5xx'] as const;

/** `2xx`…`5xx` (`other` outside 100–599): the bounded status label of duration histograms. */
export function statusClass(status: number): string {
  return status >= 100 && status < 600 ? CLASSES[(status / 100) | 0]! : 'other';
}

/** Bytes one request moved (docs/metrics.md#bytes). */
export interface Transfer {
  in: number;
  out: number;
}

/** Per HTTP/1.x connection: the socket counters at the previous answer, and that answer's figures. */
interface Tally extends Transfer {
  read: number;
  written: number;
  /** The request the figures belong to: metrics and the access log read them once each. */
  req: object | undefined;
}

const tallies = new WeakMap<Socket, Tally>();

/**
 * What a finished request moved on the wire. HTTP/1.x: the connection's byte
 * counters since the previous answer on it — request line, headers and body
 * each way, like nginx's `$request_length` and `$bytes_sent` (pipelined
 * requests may shift bytes between neighbours; the sum stays exact). HTTP/2
 * multiplexes one connection, so there it is the bodies: the declared or
 * buffered request body, and the buffered or announced response body.
 * Calling it again for the same request returns the same figures.
 */
export function transferOf(req: ServerRequest, ctx: Context | undefined, status: number): Transfer {
  const socket = req.socket as Socket | null | undefined;
  if (req.httpVersionMajor === 2 || socket === null || socket === undefined) {
    return { in: requestBodyBytes(req, ctx), out: ctx === undefined ? 0 : responseBodyBytes(ctx, status) };
  }
  let tally = tallies.get(socket);
  if (tally === undefined) {
    tally = { read: 0, written: 0, req: undefined, in: 0, out: 0 };
    tallies.set(socket, tally);
  }
  if (tally.req === req) return tally;
  const read = socket.bytesRead;
  const written = socket.bytesWritten;
  tally.in = Math.max(0, read - tally.read);
  tally.out = Math.max(0, written - tally.written);
  tally.read = read;
  tally.written = written;
  tally.req = req;
  return tally;
}

/**
 * The declared Content-Length, else the buffered body, else what a streamed body
 * (docs/routing.md#request-bodies) received; 0 without a body.
 */
function requestBodyBytes(req: ServerRequest, ctx: Context | undefined): number {
  const declared = req.headers['content-length'];
  if (declared !== undefined) {
    const n = Number(declared);
    if (Number.isSafeInteger(n) && n >= 0) return n;
  }
  if (ctx === undefined) return 0;
  return ctx.request.body?.length ?? requestStreamOf(ctx)?.received ?? 0;
}

/** The buffered body, else what a streamed body announced; HEAD and 1xx/204/304 carry none. */
function responseBodyBytes(ctx: Context, status: number): number {
  if (status < 200 || status === 204 || status === 304 || ctx.request.method === 'HEAD') return 0;
  const r = ctx.response;
  if (r.body !== null) return r.body.length;
  if (r.stream === null) return 0;
  const announced = r.headers['content-length'];
  const n = typeof announced === 'string' ? Number(announced) : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}
