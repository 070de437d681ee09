import { constants, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import { formatGrpcTimeout } from '../grpc/timeout.js';

/**
 * The `grpc` active health check (docs/grpc.md, "Health checks"): a unary
 * call to `grpc.health.v1.Health/Check` on the target's HTTP/2 session; the
 * target is healthy when the call ends with `grpc-status: 0` and the answer's
 * status is SERVING. The two messages are tiny, so they are encoded by hand:
 *
 *   message HealthCheckRequest  { string service = 1; }
 *   message HealthCheckResponse { ServingStatus status = 1; }  // SERVING = 1
 */

const { NGHTTP2_CANCEL, NGHTTP2_FLAG_END_STREAM } = constants;

export const HEALTH_CHECK_PATH = '/grpc.health.v1.Health/Check';

const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

export interface GrpcProbe {
  /** The `service` field of the request; '' asks about the server as a whole. */
  service: string;
  authority: string;
  scheme: 'http' | 'https';
  timeoutMs: number;
  userAgent: string;
}

export interface ProbeVerdict {
  healthy: boolean;
  reason: string;
}

/** One Health/Check call; never rejects (a failure is an unhealthy verdict). */
export function checkGrpcHealth(
  session: ClientHttp2Session,
  probe: GrpcProbe,
  signal: AbortSignal,
): Promise<ProbeVerdict> {
  return new Promise((resolve) => {
    let settled = false;
    const verdict = (healthy: boolean, reason: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      if (!stream.closed && !stream.destroyed) stream.close(NGHTTP2_CANCEL);
      resolve({ healthy, reason });
    };
    const stream = session.request(
      {
        ':method': 'POST',
        ':path': HEALTH_CHECK_PATH,
        ':scheme': probe.scheme,
        ':authority': probe.authority,
        'content-type': 'application/grpc',
        te: 'trailers',
        'user-agent': probe.userAgent,
        'grpc-timeout': formatGrpcTimeout(probe.timeoutMs),
      },
      { endStream: false },
    );
    const onAbort = () => verdict(false, 'health check stopped');
    signal.addEventListener('abort', onAbort);
    const timer = setTimeout(() => verdict(false, `no answer within ${probe.timeoutMs} ms`), probe.timeoutMs);
    timer.unref();
    const chunks: Buffer[] = [];
    let bytes = 0;
    const judge = (trailers: IncomingHttpHeaders) => {
      const grpcStatus = String(trailers['grpc-status'] ?? '');
      if (grpcStatus !== '0') {
        const message = decodeMessage(trailers['grpc-message']);
        verdict(false, `${HEALTH_CHECK_PATH} answered grpc-status ${grpcStatus || 'none'}${message}`);
        return;
      }
      const status = servingStatus(Buffer.concat(chunks, bytes));
      const name =
        status === undefined ? 'an unreadable answer' : (SERVING_STATUS[status] ?? `status ${status}`);
      verdict(status === 1, `${HEALTH_CHECK_PATH} answered ${name}`);
    };
    stream.on('response', (headers: IncomingHttpHeaders, flags: number) => {
      const status = Number(headers[':status']);
      if (status !== 200) verdict(false, `${HEALTH_CHECK_PATH} answered HTTP ${status}`);
      // Trailers-only: the status is in the response headers.
      else if ((flags & NGHTTP2_FLAG_END_STREAM) !== 0) judge(headers);
    });
    stream.on('data', (chunk: Buffer) => {
      // The answer is a few bytes; anything large is not a health answer.
      bytes += chunk.length;
      if (bytes > 1024) verdict(false, `${HEALTH_CHECK_PATH} answered more than 1 KiB`);
      else chunks.push(chunk);
    });
    // Trailers come before the last data may have been read: judge at the end of the stream.
    let trailers: IncomingHttpHeaders | undefined;
    stream.on('trailers', (t: IncomingHttpHeaders) => (trailers = t));
    stream.on('end', () => {
      if (trailers === undefined) verdict(false, `${HEALTH_CHECK_PATH} ended without trailers`);
      else judge(trailers);
    });
    stream.on('error', (err: Error) => {
      const cause = (err as { cause?: unknown }).cause;
      const described = cause instanceof Error ? cause : err;
      const code = (described as { code?: unknown }).code;
      verdict(
        false,
        `${HEALTH_CHECK_PATH} failed: ${described.message}${typeof code === 'string' ? ` (${code})` : ''}`,
      );
    });
    stream.on('close', () => verdict(false, `${HEALTH_CHECK_PATH}: stream closed without a status`));
    stream.end(requestFrame(probe.service));
  });
}

/** A length-prefixed, uncompressed gRPC message holding HealthCheckRequest{service}. */
function requestFrame(service: string): Buffer {
  const name = Buffer.from(service, 'utf8');
  const message =
    name.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a]), varint(name.length), name]);
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return frame;
}

function varint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return Buffer.from(out);
}

/** The `status` field of a framed HealthCheckResponse (0 when absent, proto3's default); undefined if unreadable. */
export function servingStatus(frame: Buffer): number | undefined {
  if (frame.length < 5 || frame[0] !== 0) return undefined;
  const length = frame.readUInt32BE(1);
  if (frame.length < 5 + length) return undefined;
  const message = frame.subarray(5, 5 + length);
  let at = 0;
  let status = 0;
  const read = (): number | undefined => {
    let value = 0;
    let shift = 0;
    while (at < message.length && shift < 35) {
      const byte = message[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
      shift += 7;
    }
    return undefined;
  };
  while (at < message.length) {
    const tag = read();
    if (tag === undefined) return undefined;
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire === 0) {
      const value = read();
      if (value === undefined) return undefined;
      if (field === 1) status = value;
    } else if (wire === 2) {
      const len = read();
      if (len === undefined) return undefined;
      at += len;
    } else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else return undefined;
  }
  return at === message.length ? status : undefined;
}

function decodeMessage(value: string | string[] | undefined): string {
  if (typeof value !== 'string' || value === '') return '';
  try {
    return `: ${decodeURIComponent(value)}`;
  } catch {
    return `: ${value}`;
  }
}
