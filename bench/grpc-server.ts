/**
 * The gRPC origin of the bench's gRPC scenario (bench/grpc.ts): @grpc/grpc-js
 * serving one unary method, /bench.Echo/Unary, which answers the request's
 * bytes (no protobuf work on either side: the bytes are a valid message of any
 * type with a bytes/string field 1). Prints "listening <port>".
 */
import * as grpc from '@grpc/grpc-js';

const identity = (b: Buffer): Buffer => b;
export const UNARY: grpc.MethodDefinition<Buffer, Buffer> = {
  path: '/bench.Echo/Unary',
  requestStream: false,
  responseStream: false,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
};

if (process.argv[1]?.endsWith('grpc-server.ts') === true) {
  const server = new grpc.Server();
  server.addService(
    { Unary: UNARY },
    {
      Unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
        callback(null, call.request),
    },
  );
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) throw err;
    console.log(`grpc origin listening ${port}`);
  });
  process.on('SIGTERM', () => server.forceShutdown());
}
