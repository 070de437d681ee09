/**
 * Upstream framing errors are answered (security review L5, issue #16 item
 * 10): an invalid chunked body before the first relayed byte is a 502 with
 * the catalog code, never an empty reply; once bytes were relayed the client
 * connection is aborted; and every status the gateway writes carries its own
 * reason phrase.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect as http2Connect } from 'node:http2';
import {
  captureUpstream,
  rawConnect,
  rawRequest,
  spawnDataPlane,
  type CaptureUpstream,
  type SpawnedGateway,
} from '../server/raw-http.js';

let upstream: CaptureUpstream;
let gw: SpawnedGateway;

before(async () => {
  upstream = await captureUpstream();
  gw = await spawnDataPlane(
    `
routes:
  - { name: up, match: { path: /up/* }, policy: up }
  - { name: reflect, match: { path: /reflect }, policy: reflect }
policies:
  - name: up
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${upstream.port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
  - name: reflect
    nodes:
      - { id: in, type: listener }
      - id: m
        type: mocking
        config: { response_example: hi, response_headers: { x-echo: "{{request.query.x}}" } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`,
    'http2: { enabled: true }\n',
  );
});

after(async () => {
  await gw.stop();
  upstream.close();
});

test('upstream framing (L5): an invalid chunked body before the first byte is a 502 Bad Gateway, not an empty reply', async () => {
  const res = await rawRequest(gw.port, 'GET /up/bad-chunked HTTP/1.1\r\nHost: gw.test\r\nConnection: close');
  assert.equal(res.statusLine, 'HTTP/1.1 502 Bad Gateway');
  const body = JSON.parse(res.body) as { error: string; code: string; message: string };
  assert.equal(body.code, 'UPSTREAM_BODY_READ_ERROR');
  assert.equal(body.error, 'bad_gateway');
  // The connection is still usable: the next request on a new one is served.
  const ok = await rawRequest(gw.port, 'GET /up/fine HTTP/1.1\r\nHost: gw.test\r\nConnection: close');
  assert.equal(ok.statusLine, 'HTTP/1.1 200 OK');
});

test('upstream framing (L5): an HTTP/2 client gets the same 502 for an invalid chunked body', async () => {
  const session = http2Connect(`http://127.0.0.1:${gw.port}`);
  try {
    const stream = session.request({ ':path': '/up/bad-chunked' });
    stream.end();
    let text = '';
    stream.on('data', (d: Buffer) => (text += d.toString()));
    const [headers] = (await once(stream, 'response')) as [Record<string, unknown>];
    await once(stream, 'end');
    assert.equal(headers[':status'], 502);
    assert.equal((JSON.parse(text) as { code: string }).code, 'UPSTREAM_BODY_READ_ERROR');
  } finally {
    session.close();
  }
});

test('upstream framing (L5): a body cut after bytes were relayed aborts the client connection', async () => {
  const socket = await rawConnect(gw.port);
  try {
    let received = '';
    socket.on('data', (d: Buffer) => {
      received += d.toString('latin1');
      // Cut the origin only once the client has seen relayed body bytes.
      if (received.includes('\r\n\r\nx')) upstream.cut();
    });
    socket.write('GET /up/truncated HTTP/1.1\r\nHost: gw.test\r\n\r\n');
    await once(socket, 'close');
    assert.match(received, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(received, /content-length: 100000/i);
    const body = received.slice(received.indexOf('\r\n\r\n') + 4);
    assert.ok(body.length > 0 && body.length < 100000, `relayed ${body.length} bytes`);
  } finally {
    socket.destroy();
  }
});

test('reason phrases (L5): a CR/LF reflected into a header becomes 502 Bad Gateway, not 502 OK', async () => {
  const res = await rawRequest(
    gw.port,
    'GET /reflect?x=a%0d%0aSet-Cookie:%20evil=1 HTTP/1.1\r\nHost: gw.test\r\nConnection: close',
  );
  assert.equal(res.statusLine, 'HTTP/1.1 502 Bad Gateway');
  assert.equal(res.headers['set-cookie'], undefined);
  assert.equal((JSON.parse(res.body) as { error: string }).error, 'bad_gateway');
});

test('reason phrases (L5): a CR/LF reflected into a header on a WebSocket upgrade answer is a 502, not a split response', async () => {
  const res = await rawRequest(
    gw.port,
    'GET /reflect?x=a%0d%0aSet-Cookie:%20evil=1 HTTP/1.1\r\nHost: gw.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
  );
  assert.equal(res.statusLine, 'HTTP/1.1 502 Bad Gateway');
  assert.equal(res.headers['set-cookie'], undefined);
});

test("reason phrases: the gateway's own 400 and 404 carry theirs", async () => {
  const bad = await rawRequest(gw.port, 'GET /../x HTTP/1.1\r\nHost: gw.test\r\nConnection: close');
  assert.equal(bad.statusLine, 'HTTP/1.1 400 Bad Request');
  const missing = await rawRequest(gw.port, 'GET /nowhere HTTP/1.1\r\nHost: gw.test\r\nConnection: close');
  assert.equal(missing.statusLine, 'HTTP/1.1 404 Not Found');
});
