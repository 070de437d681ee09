/**
 * gRPC retries (docs/grpc.md, "Retries"): only before the first byte of the
 * answer and only for UNAVAILABLE (a trailers-only grpc-status 14, or the
 * connection refused or reset), on another target, replaying the client's
 * messages; never after response headers, never for another status, never
 * beyond `retries`.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createTcpServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { freePort } from '../support/free-port.js';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { loadDemo, startEchoServer, type EchoReply, type EchoRequest } from './echo-server.js';
import { answerStatus, startRawGrpcServer, type RawGrpcServer } from './raw-h2.js';

type Echo = grpc.Client & {
  Unary(req: EchoRequest, md: grpc.Metadata, cb: grpc.requestCallback<EchoReply>): grpc.ClientUnaryCall;
  ClientStream(
    md: grpc.Metadata,
    cb: grpc.requestCallback<EchoReply>,
  ): grpc.ClientWritableStream<EchoRequest>;
};

let good: Awaited<ReturnType<typeof startEchoServer>>;
let unavailable: RawGrpcServer;
let exhausted: RawGrpcServer;
let lateUnavailable: RawGrpcServer;
let resetter: Server;
let gw: RunningGateway;
const clients: grpc.Client[] = [];

/** A route per scenario (header x-scenario) goes to `targets`, round robin, so two calls hit each target first once. */
function policy(name: string, ports: number[], extra = ''): string {
  const targets = ports.map((p) => `{ host: 127.0.0.1, port: ${p} }`).join(', ');
  return `
  - name: ${name}
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { scheme: grpc, timeout_ms: 5000, load_balancing: round_robin, ${extra} targets: [${targets}] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
      - { from: up.error, to: out.in }`;
}

before(async () => {
  good = await startEchoServer();
  unavailable = await startRawGrpcServer((stream) =>
    answerStatus(stream, grpc.status.UNAVAILABLE, 'draining'),
  );
  exhausted = await startRawGrpcServer((stream) =>
    answerStatus(stream, grpc.status.RESOURCE_EXHAUSTED, 'busy'),
  );
  // Answers headers first, then UNAVAILABLE in the trailers: the first byte is out, no retry.
  lateUnavailable = await startRawGrpcServer((stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '14', 'grpc-message': 'late' }));
    stream.end();
  });
  // Accepts TCP connections and resets them: the connection breaks before any response headers.
  resetter = createTcpServer((socket) => socket.resetAndDestroy());
  await new Promise<void>((resolve) => resetter.listen(0, '127.0.0.1', resolve));
  const resetPort = (resetter.address() as AddressInfo).port;
  const deadPort = await freePort();
  gw = await startGateway(`
routes:
  - { name: a, match: { path: /demo.Echo/*, headers: { x-scenario: a } }, policy: a }
  - { name: b, match: { path: /demo.Echo/*, headers: { x-scenario: b } }, policy: b }
  - { name: c, match: { path: /demo.Echo/*, headers: { x-scenario: c } }, policy: c }
  - { name: d, match: { path: /demo.Echo/*, headers: { x-scenario: d } }, policy: d }
  - { name: e, match: { path: /demo.Echo/*, headers: { x-scenario: e } }, policy: e }
policies:${policy('a', [unavailable.port, good.port])}${policy('b', [unavailable.port, good.port], 'retries: 0,')}${policy('c', [exhausted.port, good.port])}${policy('d', [lateUnavailable.port, good.port])}${policy('e', [deadPort, resetPort, good.port], 'health_check: { passive: { max_fails: 0 } },')}
`);
});

after(async () => {
  for (const c of clients) c.close();
  await gw?.stop();
  await good?.stop();
  await unavailable?.stop();
  await exhausted?.stop();
  await lateUnavailable?.stop();
  resetter?.close();
});

/** An Echo client whose calls carry `x-scenario: <name>`, the header the routes match. */
function client(name: string): Echo {
  const { Echo } = loadDemo();
  const c = new Echo(`127.0.0.1:${gw.port}`, grpc.credentials.createInsecure(), {
    interceptors: [
      (options: grpc.InterceptorOptions, next: grpc.NextCall) =>
        new grpc.InterceptingCall(next(options), {
          start(metadata, listener, start) {
            metadata.set('x-scenario', name);
            start(metadata, listener);
          },
        }),
    ],
  }) as unknown as Echo;
  clients.push(c);
  return c;
}

function unary(c: Echo, message: string): Promise<{ err: grpc.ServiceError | null; value?: EchoReply }> {
  return new Promise((resolve) =>
    c.Unary({ message }, new grpc.Metadata(), (err, value) =>
      resolve({ err, ...(value === undefined ? {} : { value }) }),
    ),
  );
}

test('grpc retries: a trailers-only UNAVAILABLE from one target is retried on the other, the client sees OK', async () => {
  const before = unavailable.seen.length;
  const c = client('a');
  const results = [await unary(c, 'one'), await unary(c, 'two')];
  for (const r of results) assert.equal(r.err, null, r.err?.details);
  assert.deepEqual(
    results.map((r) => r.value?.message),
    ['one', 'two'],
  );
  assert.equal(unavailable.seen.length - before, 1, 'the UNAVAILABLE target was tried first once');
});

test('grpc retries: a client-streaming call is replayed in full to the next target', async () => {
  const c = client('a');
  const stream = (tag: string) =>
    new Promise<{ err: grpc.ServiceError | null; value?: EchoReply }>((resolve) => {
      const call = c.ClientStream(new grpc.Metadata(), (err, value) =>
        resolve({ err, ...(value === undefined ? {} : { value }) }),
      );
      for (let i = 0; i < 5; i++) call.write({ message: `${tag}${i}` });
      call.end();
    });
  const before = unavailable.seen.length;
  const results = [await stream('p'), await stream('q')];
  assert.equal(
    unavailable.seen.length - before,
    1,
    'one of the two calls went to the UNAVAILABLE target first',
  );
  assert.deepEqual(
    results.map((r) => r.err?.details ?? r.value?.message),
    ['p0,p1,p2,p3,p4', 'q0,q1,q2,q3,q4'],
  );
  // What the UNAVAILABLE target got is what the echo server got after it: the whole stream.
  const replayed = unavailable.seen.at(-1)!;
  await replayed.closed;
  assert.ok(replayed.body.length > 0, 'the refused attempt had received messages');
});

test('grpc retries: retries: 0 passes the UNAVAILABLE answer through', async () => {
  const c = client('b');
  const codes = [(await unary(c, 'one')).err?.code ?? 0, (await unary(c, 'two')).err?.code ?? 0].sort();
  assert.deepEqual(codes, [grpc.status.OK, grpc.status.UNAVAILABLE]);
});

test('grpc retries: another status (RESOURCE_EXHAUSTED) is never retried', async () => {
  const c = client('c');
  const results = [await unary(c, 'one'), await unary(c, 'two')];
  const codes = results.map((r) => r.err?.code ?? 0).sort();
  assert.deepEqual(codes, [grpc.status.OK, grpc.status.RESOURCE_EXHAUSTED]);
  assert.equal(results.find((r) => r.err !== null)?.err?.details, 'busy');
});

test('grpc retries: UNAVAILABLE after the response headers is not retried', async () => {
  const c = client('d');
  const results = [await unary(c, 'one'), await unary(c, 'two')];
  const failed = results.filter((r) => r.err !== null);
  assert.equal(failed.length, 1, 'the call whose first target answered headers is not retried');
  assert.equal(failed[0]?.err?.code, grpc.status.UNAVAILABLE);
  assert.equal(failed[0]?.err?.details, 'late');
});

test('grpc retries: a refused and a reset connection before the headers are retried until a target answers', async () => {
  const c = client('e');
  // Three targets, round robin: whichever is first, the call reaches the echo server within 2 retries.
  const results = [await unary(c, 'one'), await unary(c, 'two'), await unary(c, 'three')];
  for (const r of results) assert.equal(r.err, null, r.err?.details);
  assert.deepEqual(
    results.map((r) => r.value?.message),
    ['one', 'two', 'three'],
  );
});
