/**
 * gRPC through the graph (docs/grpc.md): a real @grpc/grpc-js client calls a
 * real @grpc/grpc-js server through the gateway (h2c prior knowledge to the
 * gateway, `scheme: grpc` to the upstream). Every call shape streams with
 * metadata and trailers intact; gateway refusals arrive as gRPC statuses.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { freePort } from '../support/free-port.js';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import {
  FAIL,
  FAIL_MESSAGE,
  loadDemo,
  startEchoServer,
  type EchoReply,
  type EchoRequest,
} from './echo-server.js';

type Echo = grpc.Client & {
  Unary(req: EchoRequest, md: grpc.Metadata, cb: grpc.requestCallback<EchoReply>): grpc.ClientUnaryCall;
  ServerStream(req: EchoRequest, md: grpc.Metadata): grpc.ClientReadableStream<EchoReply>;
  ClientStream(
    md: grpc.Metadata,
    cb: grpc.requestCallback<EchoReply>,
  ): grpc.ClientWritableStream<EchoRequest>;
  Bidi(md: grpc.Metadata): grpc.ClientDuplexStream<EchoRequest, EchoReply>;
};

const demo = loadDemo();
let origin: Awaited<ReturnType<typeof startEchoServer>>;
let gw: RunningGateway;
const clients: grpc.Client[] = [];

function client(service: keyof typeof demo): Echo {
  const c = new demo[service](`127.0.0.1:${gw.port}`, grpc.credentials.createInsecure()) as unknown as Echo;
  clients.push(c);
  return c;
}

before(async () => {
  origin = await startEchoServer();
  const deadPort = await freePort();
  const up = (port: number) =>
    `{ id: up, type: upstream, config: { scheme: grpc, timeout_ms: 5000, targets: [{ host: 127.0.0.1, port: ${port} }] } }`;
  gw = await startGateway(`
routes:
  - { name: echo, match: { path: /demo.Echo/* }, policy: echo }
  - { name: secure, match: { path: /demo.Secure/* }, policy: secure }
  - { name: dead, match: { path: /demo.Dead/* }, policy: dead }
  - { name: limited, match: { path: /demo.Limited/* }, policy: limited }
policies:
  - name: echo
    nodes:
      - { id: in, type: listener }
      - ${up(origin.port)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
  - name: secure
    nodes:
      - { id: in, type: listener }
      - { id: auth, type: key-auth, config: { keys: [grpc-secret], header_name: x-api-key } }
      - ${up(origin.port)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: up.in }
      - { from: auth.denied, to: out.in }
      - { from: up.success, to: out.in }
  - name: limited
    nodes:
      - { id: in, type: listener }
      - { id: quota, type: limit-count, config: { count: 1, time_window: 60, key_type: constant, key: all, rejected_code: 429, rejected_msg: quota used up } }
      - ${up(origin.port)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: quota.in }
      - { from: quota.success, to: up.in }
      - { from: quota.limited, to: out.in }
      - { from: up.success, to: out.in }
  - name: dead
    nodes:
      - { id: in, type: listener }
      - ${up(deadPort)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
      - { from: up.error, to: out.in }
`);
});

after(async () => {
  for (const c of clients) c.close();
  await gw?.stop();
  await origin?.stop();
});

function traced(trace: string, extra: Record<string, string> = {}): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set('x-trace', trace);
  for (const [k, v] of Object.entries(extra)) md.set(k, v);
  return md;
}

interface Outcome<T> {
  err: grpc.ServiceError | null;
  value: T | undefined;
  headers: grpc.Metadata | undefined;
  status: grpc.StatusObject | undefined;
}

function unary(c: Echo, req: EchoRequest, md: grpc.Metadata): Promise<Outcome<EchoReply>> {
  return new Promise((resolve) => {
    let headers: grpc.Metadata | undefined;
    let status: grpc.StatusObject | undefined;
    let done: { err: grpc.ServiceError | null; value: EchoReply | undefined } | undefined;
    const finish = () => {
      if (done !== undefined && status !== undefined) resolve({ ...done, headers, status });
    };
    const call = c.Unary(req, md, (err, value) => {
      done = { err, value };
      finish();
    });
    call.on('metadata', (m: grpc.Metadata) => (headers = m));
    call.on('status', (s: grpc.StatusObject) => {
      status = s;
      finish();
    });
  });
}

test('grpc: a unary call goes through with its metadata, reply headers and trailers', async () => {
  const res = await unary(client('Echo'), { message: 'hello' }, traced('t1'));
  assert.equal(res.err, null);
  assert.equal(res.value?.message, 'hello');
  assert.deepEqual(res.headers?.get('x-trace-seen'), ['t1']);
  assert.equal(res.status?.code, grpc.status.OK);
  assert.deepEqual(res.status?.metadata.get('x-trailer'), ['done-t1']);
});

test('grpc: a non-OK status from the server reaches the client with its message and trailers', async () => {
  const res = await unary(client('Echo'), { message: FAIL }, traced('t2'));
  assert.equal(res.err?.code, grpc.status.NOT_FOUND);
  assert.equal(res.err?.details, FAIL_MESSAGE);
  assert.deepEqual(res.status?.metadata.get('x-trailer'), ['done-t2']);
});

test('grpc: a server-streaming call delivers every message in order, then the trailers', async () => {
  const call = client('Echo').ServerStream({ message: 'n', count: 500 }, traced('t3'));
  const got: EchoReply[] = [];
  call.on('data', (m: EchoReply) => got.push(m));
  const status = await new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  assert.equal(status.code, grpc.status.OK);
  assert.equal(got.length, 500);
  assert.deepEqual(
    got.map((m) => m.index),
    Array.from({ length: 500 }, (_, i) => i),
  );
  assert.equal(got[499]?.message, 'n-499');
  assert.deepEqual(status.metadata.get('x-trailer'), ['done-t3']);
});

test('grpc: a client-streaming call carries many messages (4 MiB in all) to the server', async () => {
  const big = 'x'.repeat(64 * 1024);
  const res = await new Promise<{ err: grpc.ServiceError | null; value: EchoReply | undefined }>(
    (resolve) => {
      const call = client('Echo').ClientStream(traced('t4'), (err, value) => resolve({ err, value }));
      call.write({ message: 'first' });
      for (let i = 0; i < 64; i++) call.write({ message: big });
      call.write({ message: 'last' });
      call.end();
    },
  );
  assert.equal(res.err, null);
  const parts = res.value?.message.split(',') ?? [];
  assert.equal(parts.length, 66);
  assert.equal(parts[0], 'first');
  assert.equal(parts[65], 'last');
  assert.equal(res.value?.index, 64 * 64 * 1024 + 'first'.length + 'last'.length);
});

test('grpc: a bidirectional call answers each message before the client finishes sending', async () => {
  const call = client('Echo').Bidi(traced('t5'));
  const replies: string[] = [];
  const statusP = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  const headersP = new Promise<grpc.Metadata>((resolve) => call.on('metadata', resolve));
  // Ping-pong: the next message goes out only after the previous echo came back through the gateway.
  for (let i = 0; i < 5; i++) {
    const reply = new Promise<EchoReply>((resolve) => call.once('data', resolve));
    call.write({ message: `m${i}` });
    replies.push((await reply).message);
  }
  call.end();
  const status = await statusP;
  assert.deepEqual(replies, ['echo:m0', 'echo:m1', 'echo:m2', 'echo:m3', 'echo:m4']);
  assert.equal(status.code, grpc.status.OK);
  assert.deepEqual((await headersP).get('x-trace-seen'), ['t5']);
  assert.deepEqual(status.metadata.get('x-trailer'), ['done-t5']);
});

test('grpc: key-auth on a gRPC route gives UNAUTHENTICATED without the key and OK with it', async () => {
  const secure = client('Secure');
  const denied = await unary(secure, { message: 'hi' }, traced('t6'));
  assert.equal(denied.err?.code, grpc.status.UNAUTHENTICATED);
  assert.ok((denied.err?.details ?? '').length > 0, 'the refusal says why');
  const allowed = await unary(secure, { message: 'hi' }, traced('t7', { 'x-api-key': 'grpc-secret' }));
  assert.equal(allowed.err, null);
  assert.equal(allowed.value?.message, 'hi');
  assert.deepEqual(allowed.status?.metadata.get('x-trailer'), ['done-t7']);
});

test('grpc: a method no route matches is UNIMPLEMENTED', async () => {
  const res = await unary(client('Unknown'), { message: 'hi' }, traced('t8'));
  assert.equal(res.err?.code, grpc.status.UNIMPLEMENTED);
  assert.match(res.err?.details ?? '', /No route matched/);
});

test('grpc: an upstream nothing listens on is UNAVAILABLE', async () => {
  const res = await unary(client('Dead'), { message: 'hi' }, traced('t9'));
  assert.equal(res.err?.code, grpc.status.UNAVAILABLE, res.err?.details);
  assert.match(res.err?.details ?? '', /refused/);
});

test('grpc: limit-count on a gRPC route lets the quota through, then answers RESOURCE_EXHAUSTED', async () => {
  const limited = client('Limited');
  const first = await unary(limited, { message: 'one' }, traced('t10'));
  assert.equal(first.err, null);
  assert.equal(first.value?.message, 'one');
  const second = await unary(limited, { message: 'two' }, traced('t11'));
  assert.equal(second.err?.code, grpc.status.RESOURCE_EXHAUSTED);
  assert.equal(second.err?.details, 'quota used up');
});
