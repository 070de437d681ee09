import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer as createHttpsServer } from 'node:https';
import { connect as h2Connect } from 'node:http2';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { createAuthority, type Authority } from '../support/certs.js';
import { tempDir } from '../support/temp-dir.js';

const dir = tempDir('switchyard-ws-');
let ca: Authority;
let plain: WebSocketServer;
let secure: WebSocketServer;
let securePort: number;
let httpsServer: ReturnType<typeof createHttpsServer>;
let gw: RunningGateway;
const upgradeHeaders: Record<string, string | undefined>[] = [];

/** An echo server that also reports the path and a header it saw on the upgrade. */
function echo(server: WebSocketServer): void {
  server.on('connection', (socket, req) => {
    upgradeHeaders.push({ path: req.url, tenant: req.headers['x-tenant'] as string | undefined });
    socket.on('message', (data, isBinary) =>
      socket.send(isBinary ? data : `echo:${(data as Buffer).toString()}`),
    );
  });
}

before(async () => {
  ca = createAuthority(dir.path);
  const cert = ca.issue('localhost', { dns: ['localhost'], ips: ['127.0.0.1'] });
  plain = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(plain, 'listening');
  echo(plain);
  const https = (httpsServer = createHttpsServer({ cert: cert.certPem, key: cert.keyPem }));
  secure = new WebSocketServer({ server: https });
  echo(secure);
  https.listen(0, '127.0.0.1');
  await once(https, 'listening');
  securePort = (https.address() as AddressInfo).port;
  const plainPort = (plain.address() as AddressInfo).port;
  gw = await startGateway(`
routes:
  - { name: open, match: { path: /ws/* }, policy: open }
  - { name: guarded, match: { path: /guarded/* }, policy: guarded }
  - { name: secure, match: { path: /wss/* }, policy: secure }
policies:
  - name: open
    nodes:
      - { id: in, type: listener }
      - { id: rw, type: proxy-rewrite, config: { strip_path_prefix: /ws, add_headers: { x-tenant: acme } } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${plainPort} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: rw.in }
      - { from: rw.success, to: up.in }
      - { from: up.success, to: out.in }
  - name: guarded
    nodes:
      - { id: in, type: listener }
      - { id: auth, type: key-auth, config: { keys: [let-me-in] } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${plainPort} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: up.in }
      - { from: auth.denied, to: out.in }
      - { from: up.success, to: out.in }
  - name: secure
    nodes:
      - { id: in, type: listener }
      - id: up
        type: upstream
        config: { targets: [{ host: 127.0.0.1, port: ${securePort} }], tls: true, ca_cert_path: ${ca.cert} }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`);
});

after(async () => {
  await gw.stop();
  plain.close();
  secure.close();
  httpsServer.closeAllConnections();
  httpsServer.close();
  dir.remove();
});

async function roundTrip(url: string, headers: Record<string, string> = {}): Promise<string> {
  const ws = new WebSocket(url, { headers });
  await once(ws, 'open');
  ws.send('hello');
  const [data] = (await once(ws, 'message')) as [Buffer];
  ws.close();
  return data.toString();
}

test('websocket: an HTTP/1.1 upgrade runs the policy (rewrites apply) and relays frames', async () => {
  const wsUrl = gw.url.replace('http', 'ws');
  assert.equal(await roundTrip(`${wsUrl}/ws/chat`), 'echo:hello');
  assert.deepEqual(upgradeHeaders.at(-1), { path: '/chat', tenant: 'acme' });
});

test('websocket: a policy that denies answers the upgrade with its prepared response', async () => {
  const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/guarded/x`);
  ws.on('error', () => undefined);
  const [, res] = (await once(ws, 'unexpected-response')) as [unknown, { statusCode: number }];
  assert.equal(res.statusCode, 401);
  ws.terminate();
  assert.equal(
    await roundTrip(`${gw.url.replace('http', 'ws')}/guarded/x`, { 'x-api-key': 'let-me-in' }),
    'echo:hello',
  );
});

test('websocket: the upstream tls flag makes the upstream leg wss', async () => {
  assert.equal(await roundTrip(`${gw.url.replace('http', 'ws')}/wss/x`), 'echo:hello');
});

/** A masked client text frame (RFC 6455 §5.2). */
function clientFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = randomBytes(4);
  const masked = payload.map((b, i) => b ^ (mask[i % 4] ?? 0));
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]);
}

test('websocket: RFC 8441 extended CONNECT over h2c is relayed to an HTTP/1.1 upstream', async () => {
  const session = h2Connect(gw.url);
  try {
    const [settings] = (await once(session, 'remoteSettings')) as [{ enableConnectProtocol?: boolean }];
    assert.equal(settings.enableConnectProtocol, true);
    const stream = session.request({
      ':method': 'CONNECT',
      ':protocol': 'websocket',
      ':scheme': 'http',
      ':path': '/ws/h2',
      ':authority': `127.0.0.1:${gw.port}`,
      'sec-websocket-version': '13',
    });
    const [headers] = (await once(stream, 'response')) as [Record<string, unknown>];
    assert.equal(headers[':status'], 200);
    stream.write(clientFrame('over-h2'));
    const [frame] = (await once(stream, 'data')) as [Buffer];
    // Server frames are unmasked: 0x81, length, payload.
    assert.equal(frame[0], 0x81);
    assert.equal(frame.subarray(2).toString(), 'echo:over-h2');
    assert.equal(upgradeHeaders.at(-1)?.path, '/h2');
    stream.close();
  } finally {
    session.close();
  }
});

test('websocket: shutdown gives open tunnels the drain window, then closes them with 1001', async () => {
  const local = await startGateway(
    `
routes:
  - { name: open, match: { path: /ws/* }, policy: open }
policies:
  - name: open
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${(plain.address() as AddressInfo).port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`,
    { systemYaml: 'listener: { bind: 127.0.0.1, port: 0 }\ntimeouts: { shutdown_timeout_seconds: 1 }\n' },
  );
  const ws = new WebSocket(`${local.url.replace('http', 'ws')}/ws/x`);
  await once(ws, 'open');
  const closed = once(ws, 'close') as Promise<[number, Buffer]>;
  await local.stop();
  const [code] = await closed;
  assert.equal(code, 1001);
});
