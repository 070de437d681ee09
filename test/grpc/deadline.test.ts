/**
 * gRPC deadlines through the gateway (docs/grpc.md, "Deadlines"): the
 * client's `grpc-timeout`, capped by the upstream's `timeout_ms`, goes
 * upstream rewritten to what is left; when it passes, the gateway itself
 * answers DEADLINE_EXCEEDED and resets the upstream stream with CANCEL.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { constants } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { waitFor } from '../support/wait.js';
import { loadDemo, type EchoReply, type EchoRequest } from './echo-server.js';
import { rawGrpcCall, startRawGrpcServer, type RawGrpcServer } from './raw-h2.js';

type Echo = grpc.Client & {
  ServerStream(
    req: EchoRequest,
    md: grpc.Metadata,
    opts: grpc.CallOptions,
  ): grpc.ClientReadableStream<EchoReply>;
};

let silent: RawGrpcServer;
let slow: { server: grpc.Server; port: number; cancelled: number };
let gw: RunningGateway;

/** A grpc-js server whose ServerStream sends one message, then nothing until the call is cancelled. */
async function startStallingServer(): Promise<{ server: grpc.Server; port: number; cancelled: number }> {
  const state = { server: new grpc.Server(), port: 0, cancelled: 0 };
  state.server.addService(loadDemo().Echo.service, {
    ServerStream: (call: grpc.ServerWritableStream<EchoRequest, EchoReply>) => {
      call.write({ message: 'first', index: 0 });
      call.once('cancelled', () => state.cancelled++);
    },
  });
  state.port = await new Promise<number>((resolve, reject) =>
    state.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return state;
}

before(async () => {
  // Never answers: the gateway's deadline is the only way out.
  silent = await startRawGrpcServer(() => undefined);
  slow = await startStallingServer();
  const policy = (name: string, port: number, timeoutMs: number) => `
  - name: ${name}
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { scheme: grpc, timeout_ms: ${timeoutMs}, targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
      - { from: up.error, to: out.in }`;
  gw = await startGateway(`
routes:
  - { name: silent, match: { path: /silent.S/* }, policy: silent }
  - { name: capped, match: { path: /capped.S/* }, policy: capped }
  - { name: stall, match: { path: /demo.Echo/* }, policy: stall }
policies:${policy('silent', silent.port, 10_000)}${policy('capped', silent.port, 400)}${policy('stall', slow.port, 800)}
`);
});

after(async () => {
  await gw?.stop();
  await silent?.stop();
  slow?.server.forceShutdown();
});

test('grpc deadline: the gateway answers DEADLINE_EXCEEDED itself when grpc-timeout passes, and cancels upstream', async () => {
  const answer = await rawGrpcCall(gw.port, '/silent.S/Wait', { 'grpc-timeout': '300m' });
  assert.equal(answer.headers[':status'], 200);
  assert.equal(answer.headers['content-type'], 'application/grpc');
  assert.ok(answer.trailersOnly, 'a trailers-only answer');
  assert.equal(answer.headers['grpc-status'], '4');
  assert.match(
    decodeURIComponent(String(answer.headers['grpc-message'])),
    /deadline of 300 ms \(grpc-timeout\) exceeded/,
  );
  // 300 ms asked, timeout_ms 10 s: well before timeout_ms.
  assert.ok(answer.elapsedMs < 5000, `answered after ${answer.elapsedMs} ms`);

  const upstream = silent.seen.at(-1);
  assert.ok(upstream);
  const sent = /^(\d+)m$/.exec(String(upstream.headers['grpc-timeout']));
  assert.ok(sent, `grpc-timeout sent upstream: ${String(upstream.headers['grpc-timeout'])}`);
  assert.ok(Number(sent[1]) <= 300 && Number(sent[1]) > 0, `what is left of 300 ms, not more: ${sent[1]}`);
  await upstream.closed;
  assert.equal(upstream.closedWith, constants.NGHTTP2_CANCEL, 'the upstream stream is reset with CANCEL');
});

test('grpc deadline: a grpc-timeout longer than timeout_ms is capped, upstream and at the gateway', async () => {
  const answer = await rawGrpcCall(gw.port, '/capped.S/Wait', { 'grpc-timeout': '30S' });
  assert.equal(answer.headers['grpc-status'], '4');
  assert.match(
    decodeURIComponent(String(answer.headers['grpc-message'])),
    /deadline of 400 ms \(grpc-timeout capped by timeout_ms\)/,
  );
  assert.ok(answer.elapsedMs < 5000, `answered after ${answer.elapsedMs} ms`);
  const upstream = silent.seen.at(-1);
  assert.ok(upstream);
  const sent = /^(\d+)m$/.exec(String(upstream.headers['grpc-timeout']));
  assert.ok(
    sent && Number(sent[1]) <= 400,
    `capped grpc-timeout upstream: ${String(upstream.headers['grpc-timeout'])}`,
  );
  await upstream.closed;
  assert.equal(upstream.closedWith, constants.NGHTTP2_CANCEL);
});

test('grpc deadline: without grpc-timeout, timeout_ms bounds the wait for the answer and no deadline goes upstream', async () => {
  const answer = await rawGrpcCall(gw.port, '/capped.S/Wait');
  assert.equal(answer.headers['grpc-status'], '4');
  assert.match(
    decodeURIComponent(String(answer.headers['grpc-message'])),
    /no response headers within 400 ms/,
  );
  const upstream = silent.seen.at(-1);
  assert.equal(upstream?.headers['grpc-timeout'], undefined, 'no deadline invented upstream');
});

test('grpc deadline: a stalled server stream ends with DEADLINE_EXCEEDED from the gateway and the server sees the cancel', async () => {
  const { Echo } = loadDemo();
  const client = new Echo(`127.0.0.1:${gw.port}`, grpc.credentials.createInsecure()) as unknown as Echo;
  try {
    const started = Date.now();
    // The client's own deadline (30 s) is far away: the gateway's cap (timeout_ms 800) ends the call.
    const call = client.ServerStream({ message: 'x', count: 5 }, new grpc.Metadata(), {
      deadline: Date.now() + 30_000,
    });
    const got: string[] = [];
    call.on('data', (m: EchoReply) => got.push(m.message));
    call.on('error', () => undefined);
    const status = await new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    assert.deepEqual(got, ['first'], 'the message sent before the deadline arrived');
    assert.equal(status.code, grpc.status.DEADLINE_EXCEEDED);
    assert.match(
      status.details,
      /capped by timeout_ms/,
      'the gateway, not the client library, ended the call',
    );
    assert.ok(Date.now() - started < 15_000, `ended after ${Date.now() - started} ms`);
    await waitFor(() => slow.cancelled === 1, { what: 'the server to see the call cancelled' });
  } finally {
    client.close();
  }
});
