/**
 * HTTP/2 request bodies without `content-length` reach the upstream intact
 * (security review M9): DATA frames carry the body whether or not the client
 * announced its length, and `listener.max_request_body_bytes` still applies.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type ClientHttp2Session, type OutgoingHttpHeaders } from 'node:http2';
import { captureUpstream, spawnDataPlane, type CaptureUpstream, type SpawnedGateway } from './raw-http.js';

const LIMIT = 1024;

let upstream: CaptureUpstream;
let gw: SpawnedGateway | undefined;
let session: ClientHttp2Session | undefined;

before(async () => {
  upstream = await captureUpstream();
  gw = await spawnDataPlane(
    `
routes:
  - { name: up, match: { path: /up/* }, policy: up }
policies:
  - name: up
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${upstream.port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`,
    'http2: { enabled: true }\n',
    `max_request_body_bytes: ${LIMIT}`,
  );
  session = connect(`http://127.0.0.1:${gw.port}`);
  session.on('error', () => undefined);
});

after(async () => {
  session?.close();
  await gw?.stop();
  upstream.close();
});

interface H2Answer {
  status: number | undefined;
  body: string;
  /** RST_STREAM code when the gateway reset the stream instead of answering. */
  reset: number | undefined;
}

/** Sends one h2 request whose body goes out in `parts` DATA frames, never with a content-length. */
async function h2(headers: OutgoingHttpHeaders, parts: (string | Buffer)[]): Promise<H2Answer> {
  assert.ok(session);
  const stream = session.request(headers, { endStream: parts.length === 0 });
  let status: number | undefined;
  let body = '';
  stream.on('response', (h) => (status = h[':status']));
  stream.on('data', (d: Buffer) => (body += d.toString()));
  stream.on('error', () => undefined);
  for (const part of parts) stream.write(part);
  if (parts.length > 0) stream.end();
  await once(stream, 'close');
  return { status, body, reset: status === undefined ? stream.rstCode : undefined };
}

test('h2 body (M9): a POST without content-length reaches the upstream intact', async () => {
  const res = await h2({ ':method': 'POST', ':path': '/up/h2body' }, ['hello-', 'world']);
  assert.equal(res.status, 200);
  const seen = upstream.seen.at(-1);
  assert.equal(seen?.target, '/up/h2body');
  assert.equal(seen?.method, 'POST');
  assert.equal(seen?.body, 'hello-world');
  assert.equal(seen?.headers['content-length'], '11');
});

test('h2 body (M9): a binary body split over many DATA frames arrives byte for byte', async () => {
  const payload = Buffer.alloc(1000, 0);
  for (let i = 0; i < payload.length; i++) payload[i] = (i * 7) % 256;
  const parts = [payload.subarray(0, 1), payload.subarray(1, 500), payload.subarray(500)];
  const res = await h2({ ':method': 'PUT', ':path': '/up/binary' }, parts);
  assert.equal(res.status, 200);
  assert.equal(upstream.seen.at(-1)?.headers['content-length'], '1000');
  assert.ok(upstream.seen.at(-1)?.bytes.equals(payload));
});

test('h2 body (M9): a GET that ends with its headers still has no body upstream', async () => {
  const res = await h2({ ':method': 'GET', ':path': '/up/nobody' }, []);
  assert.equal(res.status, 200);
  const seen = upstream.seen.at(-1);
  assert.equal(seen?.target, '/up/nobody');
  assert.equal(seen?.body, '');
  assert.equal(seen?.headers['content-length'], undefined);
});

test('h2 body (M9): a body over max_request_body_bytes without content-length gets 413 and never reaches the upstream', async () => {
  const before = upstream.seen.length;
  const res = await h2({ ':method': 'POST', ':path': '/up/too-big' }, ['x'.repeat(600), 'y'.repeat(600)]);
  if (res.status !== undefined) {
    assert.equal(res.status, 413);
    assert.equal((JSON.parse(res.body) as { error: string }).error, 'payload_too_large');
  } else {
    assert.notEqual(res.reset, undefined, 'answered 413 or reset');
  }
  assert.equal(upstream.seen.length, before);
  // The session survives for the next stream.
  const next = await h2({ ':method': 'POST', ':path': '/up/after' }, ['small']);
  assert.equal(next.status, 200);
  assert.equal(upstream.seen.at(-1)?.body, 'small');
});
