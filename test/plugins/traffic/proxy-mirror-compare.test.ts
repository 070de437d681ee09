import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayProcess } from '../../support/gateway-process.js';
import { request } from '../../support/http.js';
import { deadPort, startOrigin, type Origin } from '../../support/origins.js';
import { waitFor } from '../../support/wait.js';
import { basic } from '../../admin/harness.js';
import { spawnedConfig, startSpawned, type SpawnedConfig } from '../../admin/spawned.js';
import { proxyMirror } from '../../../src/plugins/traffic/proxy-mirror.js';
import { instantiate } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, templatedEnv } from '../../support/node-run.js';

/**
 * proxy-mirror `compare: true` (issue 34 item 5) against the real gateway process and two origins:
 * the primary, and a shadow that answers differently for some paths.
 */
const SYSTEM = [
  'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
  'logging: { level: warn, format: json }',
  'timeouts: { shutdown_timeout_seconds: 2 }',
  'admin:',
  '  bind: 127.0.0.1',
  '  port: @ADMIN_PORT@',
  '  username: admin',
  '  password: "correct horse"',
  '  users: [{ username: viewer, password: "Viewer-Pw-123456", role: viewer }]',
  '',
].join('\n');

/** The last path segment decides the answer; the shadow differs on status/header/body/json-id. */
function answer(shadow: boolean) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const last = (req.url ?? '').split('?')[0]!.split('/').at(-1);
    let status = 200;
    let version = '1';
    let body = `answer of ${last}`;
    if (last === 'status' && shadow) status = 503;
    if (last === 'header' && shadow) version = '2';
    if (last === 'body' && shadow) body = 'something else';
    if (last === 'json') body = JSON.stringify({ id: 7, served_by: shadow ? 'shadow' : 'primary' });
    if (last === 'json-bad') body = JSON.stringify({ id: shadow ? 8 : 7 });
    if (last === 'big') body = (shadow ? 'b' : 'a').repeat(2000);
    if (last === 'stream-same' || last === 'stream-diff') {
      // 300 KB in 30 chunks: relayed as a stream, not whole with the headers.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      let i = 0;
      const next = (): void => {
        if (i === 30) {
          res.end(shadow && last === 'stream-diff' ? 'Z' : 'A');
          return;
        }
        res.write(Buffer.alloc(10_000, 48 + (i++ % 10)));
        setImmediate(next);
      };
      next();
      return;
    }
    res.writeHead(status, {
      'content-type': 'text/plain',
      'x-version': version,
      'x-auth-token': shadow ? 'SHADOW-SECRET-TOKEN' : 'PRIMARY-SECRET-TOKEN',
      'x-server': shadow ? 'shadow' : 'primary',
    });
    res.end(body);
  };
}

let primary: Origin;
let shadow: Origin;
let silentPort: number;
const silentSockets = new Set<Socket>();
let silentServer: ReturnType<typeof createServer>;
let config: SpawnedConfig;
let gw: GatewayProcess;
let admin: string;
let data: string;

const policy = (name: string, mirror: string) => `
  - name: ${name}
    nodes:
      - { id: listener, type: listener }
      - { id: mirror, type: proxy-mirror, config: ${mirror} }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: @PRIMARY@ }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: mirror.in }
      - { from: mirror.success, to: up.in }
      - { from: up.success, to: client.in }`;

before(async () => {
  primary = await startOrigin(answer(false));
  shadow = await startOrigin(answer(true));
  silentServer = createServer((socket) => {
    silentSockets.add(socket);
    socket.on('error', () => {});
  });
  silentServer.listen(0, '127.0.0.1');
  await once(silentServer, 'listening');
  silentPort = (silentServer.address() as { port: number }).port;
  const sh = `http://127.0.0.1:${shadow.port}`;
  const gateway = `
routes:
  - { name: cmp, match: { path: /cmp/* }, policy: cmp }
  - { name: plain, match: { path: /plain/* }, policy: plain }
  - { name: js, match: { path: /js/* }, policy: js }
  - { name: none, match: { path: /none/* }, policy: none }
  - { name: hang, match: { path: /hang/* }, policy: hang }
  - { name: small, match: { path: /small/* }, policy: small }
  - { name: dead, match: { path: /dead/* }, policy: dead }
  - { name: stream, match: { path: /stream/* }, policy: stream }
policies:${policy('cmp', `{ host: "${sh}", compare: true, compare_headers: [x-version] }`)}${policy(
    'plain',
    `{ host: "${sh}" }`,
  )}${policy('js', `{ host: "${sh}", compare: true, compare_json_paths: ["$.id"] }`)}${policy(
    'none',
    `{ host: "${sh}", compare: true, compare_sample: 0 }`,
  )}${policy('hang', `{ host: "http://127.0.0.1:${silentPort}", compare: true, timeout_ms: 60000 }`)}${policy(
    'small',
    `{ host: "${sh}", compare: true, compare_max_body_bytes: 1000 }`,
  )}${policy('stream', `{ host: "${sh}", compare: true, compare_max_body_bytes: 1048576 }`)}${policy('dead', `{ host: "http://127.0.0.1:${await deadPort()}", compare: true, timeout_ms: 2000 }`)}
`.replaceAll('@PRIMARY@', String(primary.port));
  config = await spawnedConfig(SYSTEM, gateway);
  gw = await startSpawned(config);
  admin = `http://127.0.0.1:${config.adminPort}`;
  data = `http://127.0.0.1:${config.dataPort}`;
});

after(async () => {
  // The silent shadow lets go first: the gateway's shutdown waits for copies still in flight.
  for (const s of silentSockets) s.destroy();
  await new Promise((resolve) => silentServer?.close(resolve));
  await gw?.stop();
  config?.remove();
  await primary?.close();
  await shadow?.close();
});

const asAdmin = (path: string) => fetch(admin + path, { headers: { authorization: basic() } });
const asViewer = (path: string) =>
  fetch(admin + path, { headers: { authorization: basic('viewer', 'Viewer-Pw-123456') } });

interface Listed {
  time: string;
  path: string;
  method: string;
  kinds: string[];
  body_compared: boolean;
  primary: { status: number; headers: Record<string, string>; body: string };
  shadow: { status: number; headers: Record<string, string>; body: string } | null;
}

async function mismatches(pol: string): Promise<Listed[]> {
  const res = await asAdmin(`/api/shadow/${pol}/mirror`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { mismatches: Listed[] }).mismatches;
}

/** `gateway_shadow_mismatch_total` by kind for one policy. */
async function counts(pol: string): Promise<Record<string, number>> {
  const text = await (await asAdmin('/metrics')).text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith('gateway_shadow_mismatch_total{')) continue;
    if (!line.includes(`policy="${pol}"`) || !line.includes('node_id="mirror"')) continue;
    const kind = /kind="([a-z_]+)"/.exec(line)![1]!;
    out[kind] = Number(line.split(' ').at(-1));
  }
  return out;
}

async function get(path: string) {
  const res = await request(data + path);
  return res;
}

test('compare: matching requests count nothing; a status, a header and a body mismatch are counted by kind and listed', async () => {
  const before = shadow.requests.length;
  for (let i = 0; i < 5; i++) assert.equal((await get(`/cmp/same${i}`)).status, 200);
  await shadow.received(before + 5);
  await get('/cmp/status');
  await waitFor(async () => (await counts('cmp'))['status'] === 1, { what: 'the status mismatch' });
  await get('/cmp/header');
  await waitFor(async () => (await counts('cmp'))['header'] === 1, { what: 'the header mismatch' });
  await get('/cmp/body');
  await waitFor(async () => (await counts('cmp'))['body'] === 1, { what: 'the body mismatch' });
  assert.deepEqual(
    await counts('cmp'),
    { status: 1, header: 1, body: 1 },
    'matching requests counted nothing',
  );
  const list = await mismatches('cmp');
  assert.deepEqual(
    list.map((m) => [m.path, m.kinds]),
    [
      ['/cmp/body', ['body']],
      ['/cmp/header', ['header']],
      ['/cmp/status', ['status']],
    ],
    'newest first, one entry per mismatching request',
  );
  const body = list[0]!;
  assert.equal(body.method, 'GET');
  assert.ok(!Number.isNaN(Date.parse(body.time)));
  assert.equal(body.primary.status, 200);
  assert.equal(body.primary.body, 'answer of body');
  assert.equal(body.shadow?.body, 'something else');
  assert.equal(body.primary.headers['x-server'], 'primary');
  assert.equal(body.shadow?.headers['x-server'], 'shadow');
  assert.equal(list[2]!.shadow?.status, 503);
  assert.equal(list[1]!.shadow?.headers['x-version'], '2');
  // Credential-shaped headers are masked for everyone, like traces.
  const viewerRes = await asViewer('/api/shadow/cmp/mirror');
  assert.equal(viewerRes.status, 200);
  const viewerText = await viewerRes.text();
  const adminText = await (await asAdmin('/api/shadow/cmp/mirror')).text();
  for (const text of [viewerText, adminText]) assert.doesNotMatch(text, /SECRET-TOKEN/);
  assert.equal(body.primary.headers['x-auth-token'], '<redacted>');
});

test('compare: the client gets the primary answer byte for byte, as without compare', async () => {
  const withCompare = await get('/cmp/body');
  const without = await get('/plain/body');
  assert.equal(withCompare.status, without.status);
  assert.equal(withCompare.body, without.body);
  assert.equal(withCompare.body, 'answer of body');
  const strip = (h: Record<string, unknown>) => {
    const { date: _d, ...rest } = h;
    return rest;
  };
  assert.deepEqual(strip(withCompare.headers), strip(without.headers));
  assert.equal(withCompare.headers['x-server'], 'primary');
});

test('compare_json_paths compares only the listed paths', async () => {
  await get('/js/json');
  await get('/js/json-bad');
  await waitFor(async () => (await counts('js'))['body'] === 1, { what: 'the json mismatch' });
  const list = await mismatches('js');
  assert.deepEqual(
    list.map((m) => m.path),
    ['/js/json-bad'],
    'a body differing outside $.id is no mismatch',
  );
});

test('compare_sample 0 compares nothing (the copy still goes)', async () => {
  const before = shadow.requests.length;
  for (let i = 0; i < 10; i++) await get('/none/body');
  await shadow.received(before + 10);
  // A compared request on another node, after these, shows comparisons have run by now.
  const was = (await counts('cmp'))['body'] ?? 0;
  await get('/cmp/body');
  await waitFor(async () => ((await counts('cmp'))['body'] ?? 0) === was + 1, { what: 'a later comparison' });
  assert.deepEqual(await counts('none'), {});
  assert.deepEqual(await mismatches('none'), []);
});

test('compare_max_body_bytes: larger bodies are compared by status and headers only', async () => {
  await get('/small/big');
  await get('/small/body');
  await waitFor(async () => (await counts('small'))['body'] === 1, { what: 'the small body mismatch' });
  assert.deepEqual(await counts('small'), { body: 1 }, 'the 2000-byte bodies differ but were not compared');
  assert.deepEqual(
    (await mismatches('small')).map((m) => m.path),
    ['/small/body'],
  );
});

test('compare: the list keeps the last 100 mismatches; the counter keeps counting', async () => {
  const was = (await counts('cmp'))['body'] ?? 0;
  for (let batch = 0; batch < 11; batch++) {
    await Promise.all(Array.from({ length: 10 }, (_, i) => get(`/cmp/x${batch * 10 + i}/body`)));
  }
  await waitFor(async () => (await counts('cmp'))['body'] === was + 110, {
    what: '110 body mismatches',
    timeoutMs: 30000,
  });
  const list = await mismatches('cmp');
  assert.equal(list.length, 100);
  assert.ok(
    list.every((m) => m.path.startsWith('/cmp/x')),
    'the oldest entries went first',
  );
});

test('compare: a shadow that never answers does not hold up the client', async () => {
  const started = performance.now();
  const res = await get('/hang/body');
  const took = performance.now() - started;
  assert.equal(res.status, 200);
  assert.equal(res.body, 'answer of body');
  // The shadow's deadline is 60 s: a client that waited for it would take a minute.
  assert.ok(took < 20_000, `the client waited ${took.toFixed(0)} ms`);
  assert.deepEqual(await mismatches('hang'), [], 'nothing compared while the shadow is silent');
  const unknown = await asAdmin('/api/shadow/hang/nope');
  assert.equal(unknown.status, 404);
});

test('compare: a shadow that cannot be reached is counted as kind error, listed without a shadow side', async () => {
  const res = await get('/dead/body');
  assert.equal(res.body, 'answer of body');
  await waitFor(async () => (await counts('dead'))['error'] === 1, { what: 'the error mismatch' });
  const [m] = await mismatches('dead');
  assert.deepEqual(m?.kinds, ['error']);
  assert.equal(m?.shadow, null);
  assert.equal(m?.primary.body, 'answer of body');
});

test('compare: a streamed primary body reaches the client unchanged and is compared whole', async () => {
  const same = await get('/stream/stream-same');
  const diff = await get('/stream/stream-diff');
  const plain = await get('/plain/stream-diff');
  assert.equal(diff.body.length, 300_001);
  assert.equal(diff.body, plain.body, 'byte-identical to the answer without compare');
  assert.equal(same.body, plain.body);
  await waitFor(async () => (await counts('stream'))['body'] === 1, { what: 'the streamed body mismatch' });
  const list = await mismatches('stream');
  assert.deepEqual(
    list.map((m) => m.path),
    ['/stream/stream-diff'],
    'the equal 300 KB bodies matched',
  );
  const m = list[0] as unknown as { primary: { body_bytes: number; body_truncated: boolean; body: string } };
  assert.equal(m.primary.body_bytes, 300_001);
  assert.equal(m.primary.body_truncated, true);
  assert.equal(m.primary.body.length, 2048, 'the kept body is cut');
});

test('compare config errors name the key', () => {
  assertSchemaRejects(
    () => instantiate(proxyMirror, { host: 'http://s', compare: true, compare_sample: 2 }),
    'compare_sample',
  );
  assertSchemaRejects(
    () => instantiate(proxyMirror, { host: 'http://s', compare: true, compare_headers: 'x-a' }),
    'compare_headers',
  );
  assertSchemaRejects(
    () => instantiate(proxyMirror, { host: 'http://s', compare: true, compare_max_body_bytes: -1 }),
    'compare_max_body_bytes',
  );
  assertConfigError(
    () =>
      instantiate(
        proxyMirror,
        { host: 'http://s', compare: true, compare_json_paths: ['id'] },
        templatedEnv(),
      ),
    'compare_json_paths[0]',
    /\$/,
  );
  assertConfigError(
    () =>
      instantiate(
        proxyMirror,
        { host: 'http://s', compare: true, compare_json_paths: ['$.a', '$.b..c'] },
        templatedEnv(),
      ),
    'compare_json_paths[1]',
  );
  assertConfigError(
    () =>
      instantiate(
        proxyMirror,
        { host: 'http://s', compare: true, compare_headers: ['ok', 'bad name'] },
        templatedEnv(),
      ),
    'compare_headers[1]',
  );
});
