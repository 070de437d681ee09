/**
 * One path per request (security review M7, L11): dot-segments, raw or
 * percent-encoded, are resolved before routing and the upstream receives the
 * normalised path; a public route cannot be used to reach a protected one on
 * the same upstream. Raw `net` requests against a spawned gateway, so no
 * client normalises the path first.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect as http2Connect } from 'node:http2';
import {
  captureUpstream,
  rawConnect,
  rawRequest,
  readResponse,
  spawnDataPlane,
  type CaptureUpstream,
  type SpawnedGateway,
} from './raw-http.js';

let upstream: CaptureUpstream;
let gw: SpawnedGateway;

const upstreamNode = (port: number) =>
  `{ id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }`;

before(async () => {
  upstream = await captureUpstream();
  gw = await spawnDataPlane(
    `
routes:
  - { name: admin, match: { path: /admin/* }, policy: admin }
  - { name: cap, match: { path: /cap/* }, policy: cap }
  - { name: public, match: { path: /public/* }, policy: public }
  - { name: rest, match: { path: /* }, policy: public }
policies:
  - name: admin
    nodes:
      - { id: in, type: listener }
      - { id: auth, type: key-auth, config: { keys: [admin-key] } }
      - ${upstreamNode(upstream.port)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: up.in }
      - { from: auth.denied, to: out.in }
      - { from: up.success, to: out.in }
  - name: cap
    nodes:
      - { id: in, type: listener }
      - { id: strip, type: proxy-rewrite, config: { phase: request, strip_path_prefix: /cap } }
      - ${upstreamNode(upstream.port)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: strip.in }
      - { from: strip.success, to: up.in }
      - { from: up.success, to: out.in }
  - name: public
    nodes:
      - { id: in, type: listener }
      - ${upstreamNode(upstream.port)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`,
    'http2: { enabled: true }\n',
  );
});

after(async () => {
  await gw.stop();
  upstream.close();
});

/** GET `target` over a raw socket; returns the status and what the upstream saw (undefined: not reached). */
async function get(
  target: string,
  extraHeaders = '',
): Promise<{ status: number; seen: string | undefined; statusLine: string }> {
  const before = upstream.seen.length;
  const res = await rawRequest(
    gw.port,
    `GET ${target} HTTP/1.1\r\nHost: gw.test\r\nConnection: close${extraHeaders}`,
  );
  const seen = upstream.seen.length > before ? upstream.seen.at(-1)?.target : undefined;
  return { status: res.status, seen, statusLine: res.statusLine };
}

// The review's M7 table: each variant now reaches the upstream normalised, or not at all.
const table: { target: string; status: number; seen: string | undefined }[] = [
  { target: '/cap/../admin', status: 401, seen: undefined },
  { target: '/cap/%2e%2e/admin', status: 401, seen: undefined },
  { target: '/cap/%2E%2E/admin', status: 401, seen: undefined },
  { target: '/cap/.%2E/admin/x', status: 401, seen: undefined },
  { target: '/cap/a/../../admin', status: 401, seen: undefined },
  { target: '/cap/..%2fadmin', status: 400, seen: undefined },
  { target: '/cap/..%2Fadmin', status: 400, seen: undefined },
  { target: '/cap/..%5Cadmin', status: 400, seen: undefined },
  { target: '/cap/..;/admin', status: 400, seen: undefined },
  { target: '/cap//admin', status: 200, seen: '/admin' },
  { target: '/cap/./a/./b', status: 200, seen: '/a/b' },
  { target: '/cap/a/b/../c?q=/../x', status: 200, seen: '/a/c?q=/../x' },
  { target: '/../admin/x', status: 400, seen: undefined },
  { target: '/public/../../admin/x', status: 400, seen: undefined },
];

for (const row of table) {
  test(`path normalisation (M7): ${row.target} -> ${row.status}, upstream sees ${row.seen ?? 'nothing'}`, async () => {
    const res = await get(row.target);
    assert.equal(res.status, row.status, res.statusLine);
    assert.equal(res.seen, row.seen);
  });
}

test('path normalisation (M7): /public/../admin/x is routed to the admin route and needs its key', async () => {
  const denied = await get('/public/../admin/x');
  assert.equal(denied.status, 401);
  assert.equal(denied.seen, undefined, 'the upstream must not be reached without the admin key');
  const allowed = await get('/public/../admin/x', '\r\nx-api-key: admin-key');
  assert.equal(allowed.status, 200);
  assert.equal(allowed.seen, '/admin/x');
});

test('path normalisation (M7): encoded unreserved characters and doubled slashes cannot dodge /admin/*', async () => {
  // Without normalisation these fell to the public catch-all route and reached the upstream verbatim.
  for (const target of ['/%61dmin/x', '//admin/x', '/public/%2e%2e/%61dmin/x', '/./admin/x']) {
    const res = await get(target);
    assert.equal(res.status, 401, `${target}: ${res.statusLine}`);
    assert.equal(res.seen, undefined, target);
  }
});

test('path normalisation (M7): %2F stays encoded (hex uppercased) and is not a separator', async () => {
  const res = await get('/public/a%2fb/c');
  assert.equal(res.status, 200);
  assert.equal(res.seen, '/public/a%2Fb/c');
  // As one segment it cannot satisfy `/admin/*`.
  const admin = await get('/admin%2Fx');
  assert.equal(admin.status, 200, 'matched the public catch-all, not /admin/*');
  assert.equal(admin.seen, '/admin%2Fx');
});

test('path normalisation (M7): a normal path reaches the upstream byte for byte', async () => {
  const res = await get('/public/files/report.v2.json?download=1&x=%2e%2e');
  assert.equal(res.status, 200);
  assert.equal(res.seen, '/public/files/report.v2.json?download=1&x=%2e%2e');
});

test('path normalisation (M7): HTTP/2 :path is normalised too', async () => {
  const session = http2Connect(`http://127.0.0.1:${gw.port}`);
  try {
    const before = upstream.seen.length;
    const stream = session.request({ ':path': '/cap/x/%2e%2e/y' });
    stream.end();
    stream.resume();
    const [headers] = await Promise.all([
      new Promise<Record<string, unknown>>((resolve) => stream.once('response', resolve)),
      new Promise((resolve) => stream.once('close', resolve)),
    ]);
    assert.equal(headers[':status'], 200);
    assert.equal(upstream.seen.length, before + 1);
    assert.equal(upstream.seen.at(-1)?.target, '/y');
  } finally {
    session.close();
  }
});

test('host (L11): two Host headers are refused with 400', async () => {
  const before = upstream.seen.length;
  const res = await rawRequest(
    gw.port,
    'GET /public/x HTTP/1.1\r\nHost: gw.test\r\nHost: other.test\r\nConnection: close',
  );
  assert.equal(res.status, 400);
  assert.equal(res.statusLine, 'HTTP/1.1 400 Bad Request');
  assert.equal(upstream.seen.length, before, 'the upstream was not reached');
});

test('host (L11): an absolute-form target wins over Host and its path is normalised', async () => {
  const socket = await rawConnect(gw.port);
  try {
    const answer = readResponse(socket);
    socket.write(
      'GET http://absolute.test/public/a/../b HTTP/1.1\r\nHost: header.test\r\nConnection: close\r\n\r\n',
    );
    const res = await answer;
    assert.equal(res.status, 200);
    const seen = upstream.seen.at(-1);
    assert.equal(seen?.target, '/public/b');
    assert.equal(seen?.headers['x-forwarded-host'], 'absolute.test');
  } finally {
    socket.destroy();
  }
});

test('host (L11): an HTTP/2 host header that disagrees with :authority is refused with 400', async () => {
  const session = http2Connect(`http://127.0.0.1:${gw.port}`);
  try {
    const before = upstream.seen.length;
    const stream = session.request({ ':path': '/public/x', ':authority': 'gw.test', host: 'other.test' });
    stream.end();
    stream.resume();
    const [headers] = await Promise.all([
      new Promise<Record<string, unknown>>((resolve) => stream.once('response', resolve)),
      new Promise((resolve) => stream.once('close', resolve)),
    ]);
    assert.equal(headers[':status'], 400);
    assert.equal(upstream.seen.length, before);
  } finally {
    session.close();
  }
});
