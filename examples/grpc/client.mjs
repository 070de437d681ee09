// A gRPC client for examples/grpc/gateway.yaml: calls helloworld.Greeter
// through the gateway and prints what comes back. Run from the repository
// root with the stand-in backend and the gateway started:
//
//   node examples/backend/server.mjs &
//   npx switchyard --gateway-config examples/grpc/gateway.yaml &
//   node examples/grpc/client.mjs
//
// GATEWAY (default localhost:8080) and GREETER_KEY (default the example's key) change the target.
import { fileURLToPath, URL } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const proto = fileURLToPath(new URL('../grpc-transcode/helloworld.proto', import.meta.url));
const { helloworld } = grpc.loadPackageDefinition(protoLoader.loadSync(proto, { keepCase: true }));
const gateway = process.env.GATEWAY ?? 'localhost:8080';
const key = process.env.GREETER_KEY ?? 'greeter-key-change-me';
const client = new helloworld.Greeter(gateway, grpc.credentials.createInsecure());

const metadata = (withKey) => {
  const md = new grpc.Metadata();
  if (withKey) md.set('x-api-key', key);
  return md;
};

const outcome = (err, value) =>
  err ? `${grpc.status[err.code]} (${err.code}): ${err.details}` : `OK: ${value.message}`;

function unary(name, withKey, options = {}) {
  return new Promise((resolve) =>
    client.SayHello({ name }, metadata(withKey), options, (err, value) => resolve(outcome(err, value))),
  );
}

function stream(name) {
  return new Promise((resolve) => {
    const call = client.SayHelloStream({ name }, metadata(true));
    const got = [];
    call.on('data', (m) => got.push(m.message));
    call.on('error', (err) => resolve(outcome(err)));
    call.on('end', () => resolve(`OK: ${got.join(' | ')}`));
  });
}

console.log('SayHello with the key:       ', await unary('ada', true));
console.log('SayHello without the key:    ', await unary('ada', false));
console.log('SayHello with an empty name: ', await unary('', true));
console.log('SayHelloStream:              ', await stream('bob'));
console.log('SayHello, 2 s deadline:      ', await unary('cy', true, { deadline: Date.now() + 2000 }));
client.close();
