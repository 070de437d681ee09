import { transportOf, type Context, type HeaderMap } from '../core/context.js';
import type { GrpcWebClient } from '../core/transport.js';
import { encodeGrpcMessage, errorMessage, grpcStatusFor } from './grpc-error.js';
import type { Reply } from './respond.js';
import { sendResponse } from './respond.js';

/**
 * gRPC-Web on the server side (docs/plugins/grpc-web.md): which requests are
 * gRPC-Web calls, the client's reply handed to the `grpc-web` node (which
 * streams the upstream's answer into it), the body framing, and the answer
 * to a gRPC-Web call the gateway refused itself.
 */

const WEB = 'application/grpc-web';

/** `application/grpc-web`, `application/grpc-web+proto`, `application/grpc-web-text(+proto)`, with parameters. */
export function isGrpcWebContentType(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(WEB);
}

/** True for a gRPC-Web call (HTTP/1.1 or HTTP/2): its content type. */
export function isGrpcWebRequest(req: { headers: Record<string, unknown> }): boolean {
  return isGrpcWebContentType(req.headers['content-type']);
}

/** `-text` content types carry base64: the request body and every answer chunk. */
export function isGrpcWebText(contentType: string): boolean {
  return contentType.startsWith(`${WEB}-text`);
}

/** The client's side of a gRPC-Web call: its reply, and the content type it was sent with. */
export type { GrpcWebClient } from '../core/transport.js';

/** Set by the data plane for a gRPC-Web call: the `grpc-web` node writes the relayed answer itself. */
export function attachGrpcWebReply(ctx: Context, res: Reply): void {
  transportOf(ctx).grpcWeb = { reply: res, contentType: ctx.request.header('content-type') ?? WEB };
}

export function grpcWebClientOf(ctx: Context): GrpcWebClient | undefined {
  return ctx.transport?.grpcWeb;
}

/** The content type of the answer: the request's (without parameters); plain `application/grpc-web` gets `+proto`. */
export function answerContentType(requestType: string): string {
  const semi = requestType.indexOf(';');
  const bare = (semi === -1 ? requestType : requestType.slice(0, semi)).trim().toLowerCase();
  if (bare === WEB || bare === `${WEB}-text`) return `${bare}+proto`;
  return bare.startsWith(WEB) ? bare : `${WEB}+proto`;
}

/**
 * A trailer frame: flag 0x80, a 4-byte big-endian length, then the trailers as
 * an HTTP/1 header block (`name: value\r\n` each, lower-case names).
 */
export function trailerFrame(trailers: Record<string, unknown>): Buffer {
  let block = '';
  for (const name in trailers) {
    const value = trailers[name];
    if (value === undefined || name.charCodeAt(0) === 58) continue;
    for (const v of Array.isArray(value) ? value : [value])
      block += `${name.toLowerCase()}: ${String(v)}\r\n`;
  }
  const payload = Buffer.from(block, 'latin1');
  const frame = Buffer.allocUnsafe(5 + payload.length);
  frame[0] = 0x80;
  frame.writeUInt32BE(payload.length, 1);
  payload.copy(frame, 5);
  return frame;
}

/**
 * Decodes a `-text` body: base64 that may be several padded segments one
 * after the other (each chunk a client flushed is padded on its own).
 */
export function decodeBase64Segments(text: string): Buffer {
  const clean = text.replace(/\s+/g, '');
  const parts: Buffer[] = [];
  let start = 0;
  while (start < clean.length) {
    const pad = clean.indexOf('=', start);
    if (pad === -1) {
      parts.push(Buffer.from(clean.slice(start), 'base64'));
      break;
    }
    let end = pad;
    while (end < clean.length && clean.charCodeAt(end) === 61) end++;
    parts.push(Buffer.from(clean.slice(start, end), 'base64'));
    start = end;
  }
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
}

/** Response headers a gRPC-Web answer never carries from the upstream or earlier nodes. */
const OWNED = new Set([
  'content-type',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'upgrade',
  'http2-settings',
  'trailer',
]);

/** Headers earlier nodes set on the answer (CORS…), as the gRPC-Web answer carries them. */
export function carriedHeaders(headers: HeaderMap): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || OWNED.has(name) || name.charCodeAt(0) === 58) continue;
    out[name] = value;
  }
  return out;
}

/**
 * Sends `ctx.response` of a gRPC-Web call that no `grpc-web` node relayed. An
 * answer that is already gRPC-Web, or a 2xx, goes out as it is; an error (a JSON
 * error of the gateway: an auth or limit refusal, an upstream failure) becomes
 * a trailers-only gRPC-Web answer: HTTP 200, `grpc-status` (the mapping of
 * docs/grpc.md) and `grpc-message` in the headers, an empty body. Headers set
 * by earlier nodes (CORS) are kept.
 */
export function sendGrpcWebResponse(res: Reply, ctx: Context, done: () => void): void {
  const r = ctx.response;
  const status = r.status === 0 ? 200 : r.status;
  if (status < 300 || isGrpcWebContentType(r.headers['content-type'])) {
    sendResponse(res, ctx, done);
    return;
  }
  r.discardStream();
  const requestType = ctx.transport?.grpcWeb?.contentType ?? ctx.request.header('content-type') ?? WEB;
  const headers: Record<string, string | string[]> = {
    ...carriedHeaders(r.headers),
    'content-type': answerContentType(requestType),
    'grpc-status': String(grpcStatusFor(status)),
    'grpc-message': encodeGrpcMessage(errorMessage(r.body, status)),
    'content-length': '0',
  };
  try {
    res.writeHead(200, headers);
    res.end();
  } catch {
    res.destroy();
  }
  done();
}
