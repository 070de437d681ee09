import type { Http2ServerResponse } from 'node:http2';
import type { Context } from '../core/context.js';
import type { Reply } from './respond.js';
import { sendResponse } from './respond.js';

/**
 * gRPC answers of the gateway itself: a request that carries
 * `content-type: application/grpc` over HTTP/2 and is refused by the gateway
 * (no route, an auth or limit node, an upstream failure) is answered the way
 * a gRPC client understands: HTTP 200, `content-type: application/grpc` and a
 * trailers-only response carrying `grpc-status` and `grpc-message`. The status
 * mapping is documented in docs/grpc.md.
 */

/** gRPC status codes used by the mapping (grpc/doc/statuscodes.md). */
export const GRPC_STATUS = {
  OK: 0,
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

/** The gRPC status a gateway-generated HTTP status becomes (docs/grpc.md, "Gateway errors"). */
export function grpcStatusFor(httpStatus: number): number {
  switch (httpStatus) {
    case 401:
      return GRPC_STATUS.UNAUTHENTICATED;
    case 403:
      return GRPC_STATUS.PERMISSION_DENIED;
    case 429:
      return GRPC_STATUS.RESOURCE_EXHAUSTED;
    case 404:
      return GRPC_STATUS.UNIMPLEMENTED;
    case 502:
    case 503:
      return GRPC_STATUS.UNAVAILABLE;
    case 504:
      return GRPC_STATUS.DEADLINE_EXCEEDED;
    default:
      return GRPC_STATUS.UNKNOWN;
  }
}

/** `application/grpc` and `application/grpc+proto` etc.; not `application/grpc-web*`. */
export function isGrpcContentType(value: unknown): boolean {
  if (typeof value !== 'string' || !value.startsWith('application/grpc')) return false;
  const next = value.charCodeAt(16);
  return Number.isNaN(next) || next === 43 /* + */ || next === 59; /* ; */
}

/** True for a gRPC call: HTTP/2 with a gRPC content type (gRPC has no HTTP/1.1 mapping). */
export function isGrpcRequest(req: { httpVersionMajor: number; headers: Record<string, unknown> }): boolean {
  return req.httpVersionMajor === 2 && isGrpcContentType(req.headers['content-type']);
}

/** grpc-message is percent-encoded (everything outside printable ASCII, and `%`). */
export function encodeGrpcMessage(message: string): string {
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : '%' + byte.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

/**
 * Answers a gRPC request with a trailers-only response (one HEADERS frame with
 * END_STREAM): HTTP 200, `grpc-status` from {@link grpcStatusFor}, the
 * message in `grpc-message`, and `extra` headers (e.g. `www-authenticate`).
 */
export function sendGrpcError(
  res: Reply,
  httpStatus: number,
  message: string,
  extra?: Record<string, string | string[]>,
): void {
  const headers: Record<string, string | string[] | number> = {
    ...extra,
    ':status': 200,
    'content-type': 'application/grpc',
    'grpc-status': String(grpcStatusFor(httpStatus)),
    'grpc-message': encodeGrpcMessage(message),
  };
  res.statusCode = 200;
  const stream = (res as Partial<Http2ServerResponse>).stream;
  if (stream === undefined || stream.destroyed || stream.headersSent) {
    res.destroy();
    return;
  }
  stream.respond(headers, { endStream: true });
}

/** Headers of a refused answer that still mean something to a gRPC client. */
const KEPT = ['www-authenticate', 'retry-after', 'x-request-id'];

/**
 * Sends `ctx.response` of a gRPC request that no upstream relayed: an answer
 * that is already gRPC (a node produced `application/grpc`) goes out as is;
 * anything else (a JSON error of the gateway) becomes a trailers-only gRPC
 * status whose message is the error's `message` field.
 */
export function sendGrpcResponse(res: Reply, ctx: Context, done: () => void): void {
  const r = ctx.response;
  if (isGrpcContentType(r.headers['content-type'])) {
    sendResponse(res, ctx, done);
    return;
  }
  r.discardStream();
  const status = r.status === 0 ? 200 : r.status;
  const extra: Record<string, string | string[]> = {};
  for (const name of KEPT) {
    const value = r.headers[name];
    if (value !== undefined) extra[name] = value;
  }
  sendGrpcError(res, status, errorMessage(r.body, status), extra);
  done();
}

/** The `message` (or `error_msg`, `error`) of a JSON error body; the text itself otherwise. */
export function errorMessage(body: Buffer | null, status: number): string {
  if (body !== null && body.length > 0) {
    try {
      const parsed = JSON.parse(body.toString('utf8')) as unknown;
      if (typeof parsed === 'object' && parsed !== null) {
        const { message, error_msg: errorMsg, error } = parsed as Record<string, unknown>;
        if (typeof message === 'string') return message;
        if (typeof errorMsg === 'string') return errorMsg;
        if (typeof error === 'string') return error;
      }
    } catch {
      // Not JSON: the text itself, bounded.
      return body.subarray(0, 512).toString('utf8');
    }
  }
  return `gateway answered HTTP ${status}`;
}

/** A refusal before the graph ran (404 no route, 400, 508) on a gRPC request; `body` is its JSON payload. */
export function refuseGrpc(res: Reply, httpStatus: number, body: unknown): void {
  const message =
    typeof body === 'object' && body !== null && typeof (body as { message?: unknown }).message === 'string'
      ? (body as { message: string }).message
      : `gateway answered HTTP ${httpStatus}`;
  sendGrpcError(res, httpStatus, message);
}
