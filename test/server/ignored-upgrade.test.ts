/**
 * `Upgrade: h2c` and other non-WebSocket upgrades on HTTP/1.1 are served as
 * plain HTTP/1.1 (security review M8; RFC 9110 §7.8 lets a server ignore
 * Upgrade), with the upgrade fields kept from the upstream. WebSocket upgrades
 * are covered by websocket.test.ts.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  captureUpstream,
  rawConnect,
  rawRequest,
  readResponse,
  spawnDataPlane,
  type CaptureUpstream,
  type SpawnedGateway,
} from './raw-http.js';
import { startGateway, type RunningGateway } from '../support/in-process.js';

const run = promisify(execFile);

let upstream: CaptureUpstream;
/** h2c on: cleartext connections are sniffed for the HTTP/2 preface first (the review's setup). */
let withH2: SpawnedGateway | undefined;
/** h2c off: the HTTP/1.1 server owns the port (in process: one spawned gateway per file is enough). */
let withoutH2: RunningGateway | undefined;

const gatewayYaml = (port: number) => `
routes:
  - { name: up, match: { path: /up/* }, policy: up }
policies:
  - name: up
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`;

before(async () => {
  upstream = await captureUpstream();
  withH2 = await spawnDataPlane(gatewayYaml(upstream.port), 'http2: { enabled: true }\n');
  withoutH2 = await startGateway(gatewayYaml(upstream.port), {
    systemYaml: 'listener: { bind: 127.0.0.1, port: 0 }\nhttp2: { enabled: false }\n',
  });
});

after(async () => {
  await withH2?.stop();
  await withoutH2?.stop();
  upstream.close();
});

const H2C = 'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA';

for (const [label, gw] of [
  ['h2c on', () => withH2!],
  ['h2c off', () => withoutH2!],
] as const) {
  test(`upgrade (M8, ${label}): GET with Upgrade: h2c is answered 200 over HTTP/1.1 and the upstream sees no upgrade`, async () => {
    const res = await rawRequest(gw().port, `GET /up/h2c-get HTTP/1.1\r\nHost: gw.test\r\n${H2C}`);
    assert.equal(res.statusLine, 'HTTP/1.1 200 OK');
    assert.equal(res.body, 'ok');
    const seen = upstream.seen.at(-1);
    assert.equal(seen?.target, '/up/h2c-get');
    assert.equal(seen?.headers.upgrade, undefined);
    assert.equal(seen?.headers['http2-settings'], undefined);
    assert.doesNotMatch(String(seen?.headers.connection ?? ''), /upgrade/i);
  });
}

test('upgrade (M8): a POST body sent with Upgrade: h2c reaches the upstream, even when it arrives later', async () => {
  const socket = await rawConnect(withH2!.port);
  try {
    const answer = readResponse(socket);
    socket.write(`POST /up/h2c-post HTTP/1.1\r\nHost: gw.test\r\n${H2C}\r\nContent-Length: 11\r\n\r\nhello`);
    // The rest of the body is still in flight when the gateway decides to ignore the upgrade.
    socket.write('-world');
    const res = await answer;
    assert.equal(res.statusLine, 'HTTP/1.1 200 OK');
    const seen = upstream.seen.at(-1);
    assert.equal(seen?.method, 'POST');
    assert.equal(seen?.body, 'hello-world');
  } finally {
    socket.destroy();
  }
});

test('upgrade (M8): the connection stays keep-alive and serves pipelined requests after an ignored upgrade', async () => {
  const socket = await rawConnect(withH2!.port);
  try {
    const first = readResponse(socket);
    socket.write(
      `GET /up/first HTTP/1.1\r\nHost: gw.test\r\n${H2C}\r\n\r\n` +
        'GET /up/second HTTP/1.1\r\nHost: gw.test\r\nUpgrade: TLS/1.0\r\nConnection: Upgrade\r\n\r\n',
    );
    assert.equal((await first).statusLine, 'HTTP/1.1 200 OK');
    const second = await readResponse(socket);
    assert.equal(second.statusLine, 'HTTP/1.1 200 OK');
    assert.deepEqual(
      upstream.seen.slice(-2).map((s) => s.target),
      ['/up/first', '/up/second'],
    );
  } finally {
    socket.destroy();
  }
});

test('upgrade (M8): curl --http2 on an http:// URL gets the normal 200', async () => {
  const { stdout } = await run('curl', [
    '-sS',
    '--http2',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code} %{http_version}',
    `http://127.0.0.1:${withH2!.port}/up/curl`,
  ]);
  // The gateway ignores the h2c offer, so curl stays on HTTP/1.1.
  assert.equal(stdout, '200 1.1');
  assert.equal(upstream.seen.at(-1)?.target, '/up/curl');
});
