/**
 * The grpc-web node (docs/plugins/grpc-web.md): a fetch-based client speaking
 * gRPC-Web (binary and -text, over HTTP/1.1 and HTTP/2) calls a real
 * @grpc/grpc-js server through the gateway; answers come back as gRPC-Web with
 * the trailers in the body, gateway refusals as gRPC-Web statuses, and a
 * server stream arrives message by message.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { freePort } from '../support/free-port.js';
import { waitFor } from '../support/wait.js';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import {
  FAIL,
  FAIL_MESSAGE,
  PROTO,
  loadDemo,
  startEchoServer,
  type EchoReply,
  type EchoRequest,
} from './echo-server.js';

const root = protobuf.loadSync(PROTO);
const Request = root.lookupType('demo.EchoRequest');
const Reply = root.lookupType('demo.EchoReply');

function frame(flag: number, payload: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + payload.length);
  out[0] = flag;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}

function requestBody(req: EchoRequest): Buffer {
  return frame(0, Request.encode(Request.fromObject(req)).finish());
}

interface WebAnswer {
  messages: EchoReply[];
  trailers: Record<string, string>;
}

/** Splits a gRPC-Web answer body into messages and the trailer frame (which must come last). */
function parseAnswer(body: Buffer): WebAnswer {
  const messages: EchoReply[] = [];
  let trailers: Record<string, string> | undefined;
  let at = 0;
  while (at < body.length) {
    assert.equal(trailers, undefined, 'nothing may follow the trailer frame');
    const flag = body[at] as number;
    const length = body.readUInt32BE(at + 1);
    const payload = body.subarray(at + 5, at + 5 + length);
    assert.equal(payload.length, length, 'a whole frame');
    if (flag === 0x80) {
      trailers = {};
      for (const line of payload.toString('latin1').split('\r\n')) {
        if (line === '') continue;
        const c = line.indexOf(':');
        trailers[line.slice(0, c)] = line.slice(c + 1).trim();
      }
    } else {
      assert.equal(flag, 0);
      messages.push(Reply.toObject(Reply.decode(payload), { defaults: true }) as EchoReply);
    }
    at += 5 + length;
  }
  return { messages, trailers: trailers ?? {} };
}

/** A -text answer: base64 chunks, each padded on its own; decoded 4 characters at a time. */
function decodeText(text: string): Buffer {
  const parts: Buffer[] = [];
  for (const segment of text.match(/[^=]*=*/g) ?? [])
    if (segment !== '') parts.push(Buffer.from(segment, 'base64'));
  return Buffer.concat(parts);
}

let origin: Awaited<ReturnType<typeof startEchoServer>>;
let slow: { port: number; release(): void; cancelled(): number; server: grpc.Server };
let gw: RunningGateway;
let gatewayYaml = '';

/** A server stream that sends its first message, then waits until the test says so before the rest. */
async function startHeldStream(): Promise<typeof slow> {
  const { Echo } = loadDemo();
  const server = new grpc.Server();
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  let cancelled = 0;
  server.addService(Echo.service, {
    ServerStream: (call: grpc.ServerWritableStream<EchoRequest, EchoReply>) => {
      call.on('cancelled', () => cancelled++);
      call.write({ message: 'first', index: 0 });
      void held.then(() => {
        if (call.cancelled) return;
        call.write({ message: 'second', index: 1 });
        call.end();
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { port, release: () => release(), cancelled: () => cancelled, server };
}

before(async () => {
  origin = await startEchoServer();
  slow = await startHeldStream();
  const dead = await freePort();
  const up = (port: number) =>
    `{ id: up, type: upstream, config: { scheme: grpc, timeout_ms: 5000, targets: [{ host: 127.0.0.1, port: ${port} }] } }`;
  const web = (name: string, port: number, auth = false) => `
  - name: ${name}
    nodes:
      - { id: in, type: listener }
      - { id: cors, type: cors, config: { allowed_origins: ["https://app.example"], allowed_headers: [content-type, x-grpc-web, x-api-key], expose_headers: [grpc-status, grpc-message, x-trace-seen] } }
      - { id: web, type: grpc-web }
${auth ? '      - { id: auth, type: key-auth, config: { keys: [web-secret], header_name: x-api-key } }\n' : ''}      - ${up(port)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: cors.in }
      - { from: cors.preflight, to: out.in }
      - { from: cors.success, to: web.in }
      - { from: web.rejected, to: out.in }
${
  auth
    ? '      - { from: web.success, to: auth.in }\n      - { from: auth.success, to: up.in }\n      - { from: auth.denied, to: out.in }\n'
    : '      - { from: web.success, to: up.in }\n'
}      - { from: up.success, to: out.in }
      - { from: up.error, to: out.in }`;
  gatewayYaml = `
routes:
  - { name: echo, match: { path: /demo.Echo/* }, policy: echo }
  - { name: secure, match: { path: /demo.Secure/* }, policy: secure }
  - { name: dead, match: { path: /demo.Dead/* }, policy: dead }
  - { name: held, match: { path: /held/demo.Echo/* }, policy: held }
policies:${web('echo', origin.port)}${web('secure', origin.port, true)}${web('dead', dead)}
  - name: held
    nodes:
      - { id: in, type: listener }
      - { id: strip, type: proxy-rewrite, config: { regex_uri: ["^/held(/.*)", "$1"] } }
      - { id: web, type: grpc-web }
      - ${up(slow.port)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: strip.in }
      - { from: strip.success, to: web.in }
      - { from: web.rejected, to: out.in }
      - { from: web.success, to: up.in }
      - { from: up.success, to: out.in }
`;
  gw = await startGateway(gatewayYaml);
});

after(async () => {
  await gw?.stop();
  await origin?.stop();
  slow?.server.forceShutdown();
});

async function call(
  path: string,
  body: Buffer | string,
  type = 'application/grpc-web+proto',
  headers: Record<string, string> = {},
): Promise<{ res: Response; body: Buffer }> {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': type, 'x-grpc-web': '1', ...headers },
    body,
  });
  return { res, body: Buffer.from(await res.arrayBuffer()) };
}

test('grpc-web: a unary call over HTTP/1.1 gets its message, reply headers and trailers in the body', async () => {
  const { res, body } = await call('/demo.Echo/Unary', requestBody({ message: 'hi web' }), undefined, {
    'x-trace': 'w1',
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/grpc-web+proto');
  assert.equal(res.headers.get('x-trace-seen'), 'w1');
  const answer = parseAnswer(body);
  assert.deepEqual(answer.messages, [{ message: 'hi web', index: 0 }]);
  assert.equal(answer.trailers['grpc-status'], '0');
  assert.equal(answer.trailers['x-trailer'], 'done-w1');
});

test('grpc-web: application/grpc-web-text is answered in base64, trailers included', async () => {
  const text = requestBody({ message: 'in text' }).toString('base64');
  const { res, body } = await call('/demo.Echo/Unary', text, 'application/grpc-web-text');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/grpc-web-text+proto');
  assert.match(body.toString('latin1'), /^[A-Za-z0-9+/=]+$/, 'the body is base64 text');
  const answer = parseAnswer(decodeText(body.toString('latin1')));
  assert.deepEqual(answer.messages, [{ message: 'in text', index: 0 }]);
  assert.equal(answer.trailers['grpc-status'], '0');
});

test('grpc-web: a server-streaming call over -text brings every message, then the trailers', async () => {
  const text = requestBody({ message: 'n', count: 50 }).toString('base64');
  const { res, body } = await call('/demo.Echo/ServerStream', text, 'application/grpc-web-text+proto');
  assert.equal(res.status, 200);
  const answer = parseAnswer(decodeText(body.toString('latin1')));
  assert.equal(answer.messages.length, 50);
  assert.deepEqual(answer.messages[49], { message: 'n-49', index: 49 });
  assert.equal(answer.trailers['grpc-status'], '0');
});

test('grpc-web: a browser that goes away mid-stream cancels the upstream call', async () => {
  const abort = new AbortController();
  const res = await fetch(`${gw.url}/held/demo.Echo/ServerStream`, {
    method: 'POST',
    headers: { 'content-type': 'application/grpc-web+proto' },
    body: requestBody({ message: 'x' }),
    signal: abort.signal,
  });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const { done } = await reader.read();
  assert.equal(done, false, 'the first message arrived');
  abort.abort();
  await waitFor(() => slow.cancelled() === 1, {
    timeoutMs: 10_000,
    what: 'the origin to see the call cancelled',
  });
});

test('grpc-web: a server stream reaches the browser message by message, not after the call ended', async () => {
  const res = await fetch(`${gw.url}/held/demo.Echo/ServerStream`, {
    method: 'POST',
    headers: { 'content-type': 'application/grpc-web+proto' },
    body: requestBody({ message: 'x' }),
  });
  assert.equal(res.status, 200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  let got = Buffer.alloc(0);
  // The server holds the rest of the stream until the first message was read here.
  while (got.length < 5 || got.length < 5 + got.readUInt32BE(1)) {
    const { value, done } = await reader.read();
    assert.equal(done, false, 'the first message arrives while the call is still open');
    got = Buffer.concat([got, value]);
  }
  assert.deepEqual(parseAnswer(got.subarray(0, 5 + got.readUInt32BE(1))).messages, [
    { message: 'first', index: 0 },
  ]);
  slow.release();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    got = Buffer.concat([got, value]);
  }
  const answer = parseAnswer(got);
  assert.deepEqual(
    answer.messages.map((m) => m.message),
    ['first', 'second'],
  );
  assert.equal(answer.trailers['grpc-status'], '0');
});

test('grpc-web: an error status of the server arrives in the trailer frame, message percent-encoded', async () => {
  const { res, body } = await call('/demo.Echo/Unary', requestBody({ message: FAIL }));
  assert.equal(res.status, 200);
  const answer = parseAnswer(body);
  assert.deepEqual(answer.messages, []);
  const status = answer.trailers['grpc-status'] ?? res.headers.get('grpc-status');
  const message = answer.trailers['grpc-message'] ?? res.headers.get('grpc-message') ?? '';
  assert.equal(status, String(grpc.status.NOT_FOUND));
  assert.equal(decodeURIComponent(message), FAIL_MESSAGE);
});

test('grpc-web: a key-auth refusal is a gRPC-Web UNAUTHENTICATED answer, with the CORS headers', async () => {
  const { res, body } = await call('/demo.Secure/Unary', requestBody({ message: 'hi' }), undefined, {
    origin: 'https://app.example',
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/grpc-web+proto');
  assert.equal(res.headers.get('grpc-status'), String(grpc.status.UNAUTHENTICATED));
  assert.ok((res.headers.get('grpc-message') ?? '').length > 0);
  assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example');
  assert.equal(body.length, 0);
  const text = await call(
    '/demo.Secure/Unary',
    requestBody({ message: 'hi' }).toString('base64'),
    'application/grpc-web-text',
  );
  assert.equal(text.res.headers.get('content-type'), 'application/grpc-web-text+proto');
  assert.equal(text.res.headers.get('grpc-status'), String(grpc.status.UNAUTHENTICATED));
  const ok = await call('/demo.Secure/Unary', requestBody({ message: 'let in' }), undefined, {
    'x-api-key': 'web-secret',
  });
  assert.deepEqual(parseAnswer(ok.body).messages, [{ message: 'let in', index: 0 }]);
});

test('grpc-web: a dead upstream is UNAVAILABLE (14) as a gRPC-Web answer', async () => {
  const { res } = await call('/demo.Dead/Unary', requestBody({ message: 'hi' }));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('grpc-status'), String(grpc.status.UNAVAILABLE));
});

test('grpc-web: CORS preflight is answered and the actual call exposes grpc-status and grpc-message', async () => {
  const pre = await fetch(`${gw.url}/demo.Echo/Unary`, {
    method: 'OPTIONS',
    headers: {
      origin: 'https://app.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type,x-grpc-web',
    },
  });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get('access-control-allow-origin'), 'https://app.example');
  assert.match(pre.headers.get('access-control-allow-headers') ?? '', /x-grpc-web/);
  const { res, body } = await call('/demo.Echo/Unary', requestBody({ message: 'cors' }), undefined, {
    origin: 'https://app.example',
  });
  assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example');
  assert.equal(res.headers.get('access-control-expose-headers'), 'grpc-status, grpc-message, x-trace-seen');
  assert.deepEqual(parseAnswer(body).messages, [{ message: 'cors', index: 0 }]);
});

test('grpc-web: a call from an HTTP/2 client (h2c) is bridged the same way', async () => {
  const session = connect(gw.url);
  try {
    const stream = session.request({
      ':method': 'POST',
      ':path': '/demo.Echo/Unary',
      'content-type': 'application/grpc-web+proto',
    });
    stream.end(requestBody({ message: 'over h2' }));
    const [headers, body] = await new Promise<[Record<string, unknown>, Buffer]>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let head: Record<string, unknown> = {};
      stream.on('response', (h) => (head = h));
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => resolve([head, Buffer.concat(chunks)]));
      stream.on('error', reject);
    });
    assert.equal(headers[':status'], 200);
    assert.equal(headers['content-type'], 'application/grpc-web+proto');
    const answer = parseAnswer(body);
    assert.deepEqual(answer.messages, [{ message: 'over h2', index: 0 }]);
    assert.equal(answer.trailers['grpc-status'], '0');
  } finally {
    session.close();
  }
});

test('grpc-web: a request that is not gRPC-Web leaves through rejected', async () => {
  const json = await fetch(`${gw.url}/demo.Echo/Unary`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  assert.equal(json.status, 415);
  const broken = await call('/demo.Echo/Unary', Buffer.from([0, 0, 0, 0, 9, 1]));
  // A gRPC-Web call the node refuses is still answered in gRPC-Web: INTERNAL is not used, 400 maps to UNKNOWN.
  assert.equal(broken.res.status, 200);
  assert.equal(broken.res.headers.get('grpc-status'), String(grpc.status.UNKNOWN));
  assert.match(decodeURIComponent(broken.res.headers.get('grpc-message') ?? ''), /malformed gRPC-Web body/);
});

test('grpc-web: the node:http HTTP/1.1 front (http1_server: node) streams the same answers', async () => {
  const nodeFront = await startGateway(gatewayYaml, {
    systemYaml:
      'listener: { bind: 127.0.0.1, port: 0, http1_server: node }\ntimeouts: { shutdown_timeout_seconds: 5 }\n',
  });
  try {
    const res = await fetch(`${nodeFront.url}/demo.Echo/ServerStream`, {
      method: 'POST',
      headers: { 'content-type': 'application/grpc-web-text' },
      body: requestBody({ message: 'n', count: 3 }).toString('base64'),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/grpc-web-text+proto');
    const answer = parseAnswer(decodeText(await res.text()));
    assert.deepEqual(
      answer.messages.map((m) => m.message),
      ['n-0', 'n-1', 'n-2'],
    );
    assert.equal(answer.trailers['grpc-status'], '0');
    const refused = await fetch(`${nodeFront.url}/demo.Secure/Unary`, {
      method: 'POST',
      headers: { 'content-type': 'application/grpc-web+proto' },
      body: requestBody({ message: 'hi' }),
    });
    assert.equal(refused.headers.get('grpc-status'), String(grpc.status.UNAUTHENTICATED));
  } finally {
    await nodeFront.stop();
  }
});
