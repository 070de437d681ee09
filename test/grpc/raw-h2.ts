/**
 * Frame-level gRPC peers for tests that must see what a gRPC library hides:
 * a node:http2 server whose handler decides each answer (trailers-only
 * statuses, stalls) and records the request headers and the RST_STREAM code
 * of every stream, and a node:http2 client that returns the raw answer.
 */
import {
  connect,
  constants,
  createServer,
  type Http2Server,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';

export interface SeenStream {
  headers: IncomingHttpHeaders;
  /** Request body bytes received. */
  body: Buffer;
  /** RST_STREAM code once the stream closed (0 = closed cleanly). */
  closedWith: number | undefined;
  closed: Promise<void>;
}

export interface RawGrpcServer {
  port: number;
  seen: SeenStream[];
  stop(): Promise<void>;
}

/** A cleartext HTTP/2 server; `handle` answers (or not) each stream. */
export async function startRawGrpcServer(
  handle: (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void,
): Promise<RawGrpcServer> {
  const seen: SeenStream[] = [];
  const server: Http2Server = createServer();
  server.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    let closed!: () => void;
    const entry: SeenStream = {
      headers,
      body: Buffer.alloc(0),
      closedWith: undefined,
      closed: new Promise<void>((resolve) => (closed = resolve)),
    };
    seen.push(entry);
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', () => undefined);
    stream.once('close', () => {
      entry.body = Buffer.concat(chunks);
      entry.closedWith = stream.rstCode;
      closed();
    });
    handle(stream, headers);
  });
  server.on('sessionError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Sessions the gateway keeps open would hold close() forever.
        setTimeout(resolve, 500).unref();
      }),
  };
}

/** Trailers-only answer: HTTP 200, application/grpc, the status in the one HEADERS frame. */
export function answerStatus(stream: ServerHttp2Stream, code: number, message = ''): void {
  stream.respond(
    {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': String(code),
      'grpc-message': message,
    },
    { endStream: true },
  );
}

/** A length-prefixed gRPC message frame around `payload` (any bytes: the relay never parses them). */
export function grpcFrame(payload: Buffer | string): Buffer {
  const body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload);
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, 5);
  return frame;
}

export interface RawAnswer {
  headers: IncomingHttpHeaders;
  /** True when the response headers carried END_STREAM (trailers-only). */
  trailersOnly: boolean;
  trailers: IncomingHttpHeaders | undefined;
  body: Buffer;
  /** RST_STREAM code the stream closed with. */
  rstCode: number | undefined;
  elapsedMs: number;
}

/** One gRPC-shaped POST over h2c prior knowledge, with `body` sent and the stream ended. */
export async function rawGrpcCall(
  port: number,
  path: string,
  extra: OutgoingHttpHeaders = {},
  body: Buffer = grpcFrame(''),
): Promise<RawAnswer> {
  const session = connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  const started = performance.now();
  try {
    return await new Promise<RawAnswer>((resolve, reject) => {
      const stream = session.request({
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc',
        te: 'trailers',
        ...extra,
      });
      let headers: IncomingHttpHeaders | undefined;
      let trailersOnly = false;
      let trailers: IncomingHttpHeaders | undefined;
      const chunks: Buffer[] = [];
      stream.on('response', (h, flags) => {
        headers = h;
        trailersOnly = (flags & constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      });
      stream.on('trailers', (t: IncomingHttpHeaders) => {
        trailers = t;
      });
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', () => undefined);
      stream.once('close', () => {
        if (headers === undefined) {
          reject(new Error(`stream closed without an answer (code ${stream.rstCode})`));
          return;
        }
        resolve({
          headers,
          trailersOnly,
          trailers,
          body: Buffer.concat(chunks),
          rstCode: stream.rstCode,
          elapsedMs: performance.now() - started,
        });
      });
      stream.end(body);
    });
  } finally {
    session.close();
  }
}
