/**
 * Long-lived gRPC streams (docs/grpc.md, "Long-lived streams"): the
 * listener's request-body deadline (`timeouts.connection_seconds +
 * read_seconds`, 2 s here) bounds a gRPC call's stream by progress, not in
 * total: a call that keeps exchanging messages outlives it, a call that goes
 * silent for that long is cut.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { loadDemo, startEchoServer, type EchoReply, type EchoRequest } from './echo-server.js';
import { startRawGrpcServer, type RawGrpcServer, rawGrpcCall } from './raw-h2.js';

type Echo = grpc.Client & {
  Bidi(md: grpc.Metadata): grpc.ClientDuplexStream<EchoRequest, EchoReply>;
};

let origin: Awaited<ReturnType<typeof startEchoServer>>;
let quiet: RawGrpcServer;
let gw: RunningGateway;
let echo: Echo;

before(async () => {
  origin = await startEchoServer();
  // Reads the request and never answers: the call's only progress is the client's.
  quiet = await startRawGrpcServer(() => undefined);
  const policy = (name: string, port: number) => `
  - name: ${name}
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { scheme: grpc, timeout_ms: 60000, targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
      - { from: up.error, to: out.in }`;
  gw = await startGateway(
    `
routes:
  - { name: echo, match: { path: /demo.Echo/* }, policy: echo }
  - { name: quiet, match: { path: /quiet.Q/* }, policy: quiet }
policies:${policy('echo', origin.port)}${policy('quiet', quiet.port)}
`,
    {
      systemYaml:
        'listener: { bind: 127.0.0.1, port: 0 }\n' +
        'timeouts: { connection_seconds: 1, read_seconds: 1, shutdown_timeout_seconds: 2 }\n',
    },
  );
  echo = new (loadDemo().Echo)(`127.0.0.1:${gw.port}`, grpc.credentials.createInsecure()) as unknown as Echo;
});

after(async () => {
  echo?.close();
  await gw?.stop();
  await origin?.stop();
  await quiet?.stop();
});

test('grpc long stream: a bidirectional call that keeps talking outlives the 2 s request deadline', async () => {
  const call = echo.Bidi(new grpc.Metadata());
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  call.on('error', () => undefined);
  const started = Date.now();
  const replies: string[] = [];
  // A message every 250 ms for 4 s: twice the deadline in total, never 2 s without progress.
  for (let i = 0; Date.now() - started < 4000; i++) {
    const reply = new Promise<EchoReply>((resolve) => call.once('data', resolve));
    call.write({ message: `m${i}` });
    replies.push((await reply).message);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  call.end();
  const s = await status;
  assert.equal(s.code, grpc.status.OK, s.details);
  assert.ok(Date.now() - started >= 4000);
  assert.equal(replies[0], 'echo:m0');
  assert.equal(replies.length, new Set(replies).size);
});

test('grpc long stream: a call whose client goes silent is cut after 2 s without progress', async () => {
  const call = echo.Bidi(new grpc.Metadata());
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  call.on('error', () => undefined);
  call.on('data', () => undefined);
  const started = Date.now();
  call.write({ message: 'hello' });
  // Then nothing: neither side sends, the client never ends its stream.
  const s = await status;
  const elapsed = Date.now() - started;
  assert.notEqual(s.code, grpc.status.OK);
  assert.ok(elapsed >= 1500, `cut after ${elapsed} ms, not before the idle bound`);
  assert.ok(elapsed < 15_000, `cut after ${elapsed} ms`);
});

test('grpc long stream: an idle call the upstream has not answered gets a gRPC status from the gateway', async () => {
  const session = await import('node:http2').then((h2) => h2.connect(`http://127.0.0.1:${gw.port}`));
  session.on('error', () => undefined);
  try {
    const stream = session.request({
      ':method': 'POST',
      ':path': '/quiet.Q/Wait',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    stream.on('error', () => undefined);
    stream.write(Buffer.alloc(5));
    const headers = await new Promise<Record<string, unknown>>((resolve) => stream.once('response', resolve));
    assert.equal(headers[':status'], 200);
    assert.equal(headers['content-type'], 'application/grpc');
    assert.equal(headers['grpc-status'], '2');
    assert.match(decodeURIComponent(String(headers['grpc-message'])), /idle for 2000 ms/);
  } finally {
    session.close();
  }
  // A finished call is not cut: the usual answer path is untouched.
  const ok = await rawGrpcCall(gw.port, '/demo.Echo/Unary');
  assert.equal(ok.trailers?.['grpc-status'] ?? ok.headers['grpc-status'], '0');
});
