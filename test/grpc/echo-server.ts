/** A real @grpc/grpc-js server and client for test/fixtures/grpc/echo.proto. */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

export const PROTO = fileURLToPath(new URL('../fixtures/grpc/echo.proto', import.meta.url));

export interface EchoRequest {
  message: string;
  count?: number;
}
export interface EchoReply {
  message: string;
  index: number;
}

type ServiceCtor = grpc.ServiceClientConstructor & { service: grpc.ServiceDefinition };

export function loadDemo(): Record<'Echo' | 'Secure' | 'Limited' | 'Dead' | 'Unknown', ServiceCtor> {
  const definition = protoLoader.loadSync(PROTO, { keepCase: true, defaults: true });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as { demo: Record<string, ServiceCtor> };
  const { Echo, Secure, Limited, Dead, Unknown } = pkg.demo;
  if (!Echo || !Secure || !Limited || !Dead || !Unknown) throw new Error('echo.proto: services missing');
  return { Echo, Secure, Limited, Dead, Unknown };
}

/** Message that makes Unary fail with NOT_FOUND and a non-ASCII message. */
export const FAIL = 'fail';
/** Message that makes Unary answer only after 3 s. */
export const SLOW = 'slow';
export const FAIL_MESSAGE = 'no such thing: ünïcode 100%';

/**
 * Echo semantics: replies carry the request `message`; `x-trace` request
 * metadata comes back as initial metadata `x-trace-seen` and as trailer
 * `x-trailer: done-<trace>`.
 */
export async function startEchoServer(
  credentials: grpc.ServerCredentials = grpc.ServerCredentials.createInsecure(),
): Promise<{ port: number; server: grpc.Server; stop(): Promise<void> }> {
  const { Echo, Secure, Limited } = loadDemo();
  const server = new grpc.Server();
  const seen = (
    call:
      | grpc.ServerUnaryCall<EchoRequest, EchoReply>
      | grpc.ServerWritableStream<EchoRequest, EchoReply>
      | grpc.ServerReadableStream<EchoRequest, EchoReply>
      | grpc.ServerDuplexStream<EchoRequest, EchoReply>,
  ): [grpc.Metadata, grpc.Metadata] => {
    const trace = String(call.metadata.get('x-trace')[0] ?? '');
    const initial = new grpc.Metadata();
    initial.set('x-trace-seen', trace);
    const trailer = new grpc.Metadata();
    trailer.set('x-trailer', `done-${trace}`);
    return [initial, trailer];
  };
  const unary = (
    call: grpc.ServerUnaryCall<EchoRequest, EchoReply>,
    callback: grpc.sendUnaryData<EchoReply>,
  ) => {
    const [initial, trailer] = seen(call);
    if (call.request.message === SLOW) {
      // Not even response headers before the answer.
      const timer = setTimeout(() => callback(null, { message: 'late', index: 0 }, trailer), 3000);
      call.once('cancelled', () => clearTimeout(timer));
      return;
    }
    call.sendMetadata(initial);
    if (call.request.message === FAIL) {
      callback({ code: grpc.status.NOT_FOUND, details: FAIL_MESSAGE, metadata: trailer });
      return;
    }
    callback(null, { message: call.request.message, index: 0 }, trailer);
  };
  server.addService(Echo.service, {
    Unary: unary,
    ServerStream: (call: grpc.ServerWritableStream<EchoRequest, EchoReply>) => {
      const [initial, trailer] = seen(call);
      call.sendMetadata(initial);
      const n = call.request.count ?? 0;
      let i = 0;
      const pump = () => {
        while (i < n) {
          const ok = call.write({ message: `${call.request.message}-${i}`, index: i });
          i++;
          if (!ok) {
            call.once('drain', pump);
            return;
          }
        }
        call.end(trailer);
      };
      pump();
    },
    ClientStream: (
      call: grpc.ServerReadableStream<EchoRequest, EchoReply>,
      callback: grpc.sendUnaryData<EchoReply>,
    ) => {
      const [initial, trailer] = seen(call);
      call.sendMetadata(initial);
      const parts: string[] = [];
      let bytes = 0;
      call.on('data', (m: EchoRequest) => {
        parts.push(m.message.length > 32 ? `#${m.message.length}` : m.message);
        bytes += m.message.length;
      });
      call.on('end', () => callback(null, { message: parts.join(','), index: bytes }, trailer));
    },
    Bidi: (call: grpc.ServerDuplexStream<EchoRequest, EchoReply>) => {
      const [initial, trailer] = seen(call);
      call.sendMetadata(initial);
      let i = 0;
      call.on('data', (m: EchoRequest) => call.write({ message: `echo:${m.message}`, index: i++ }));
      call.on('end', () => call.end(trailer));
    },
  });
  server.addService(Secure.service, { Unary: unary });
  server.addService(Limited.service, { Unary: unary });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', credentials, (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    port,
    server,
    stop: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        setTimeout(() => server.forceShutdown(), 2000).unref();
      }),
  };
}
