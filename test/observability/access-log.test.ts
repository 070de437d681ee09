/**
 * The gateway-wide access log (docs/logging.md#access-log) against real
 * gateway processes: one line per request with route, policy, status,
 * upstream, timings, bytes, request id and consumer; secrets never written;
 * the file reopened on SIGUSR1 after logrotate renamed it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { connect } from 'node:net';
import { once } from 'node:events';
import { deadPort, echo, startOrigin, type Origin } from '../support/origins.js';

let origin: Origin;
let dead = 0;
/** The gateway most tests share: a JSON access log in a file. */
let g: Started;
let file = '';

before(async () => {
  origin = await startOrigin(echo('origin'));
  dead = await deadPort();
  g = await start('{ output: $DIR/access.log, format: json }');
  file = join(g.dir, 'access.log');
});

after(async () => {
  await g.stop();
  await origin.close();
});

const gatewayYaml = (upstreamPort: number, deadPortNumber: number): string => `
consumers:
  - name: alice
    credentials:
      key-auth: { key: alice-secret-key }
routes:
  - { name: api, match: { path: /api/* }, policy: api-policy }
  - { name: broken, match: { path: /broken }, policy: broken-policy }
policies:
  - name: api-policy
    nodes:
      - { id: listener, type: listener }
      - { id: rid, type: request-id }
      - { id: auth, type: key-auth, config: { use_consumers: true, query_param: api_key } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${upstreamPort} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: rid.in }
      - { from: rid.success, to: auth.in }
      - { from: auth.success, to: up.in }
      - { from: auth.denied, to: client.in }
      - { from: up.success, to: client.in }
  - name: broken-policy
    nodes:
      - { id: listener, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${deadPortNumber} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: up.in }
      - { from: up.success, to: client.in }
`;

interface Started {
  gw: GatewayProcess;
  url: string;
  dir: string;
  stop(): Promise<void>;
}

async function start(accessLog: string): Promise<Started> {
  const dir = tempDir('switchyard-access-');
  const port = await freePort();
  writeFileSync(
    join(dir.path, 'system.yaml'),
    `listener: { bind: 127.0.0.1, port: ${port} }\nlogging: { level: warn }\naccess_log: ${accessLog.replaceAll('$DIR', dir.path)}\n`,
  );
  writeFileSync(join(dir.path, 'gateway.yaml'), gatewayYaml(origin.port, dead));
  const gw = spawnGateway([
    '--system-config',
    join(dir.path, 'system.yaml'),
    '--gateway-config',
    join(dir.path, 'gateway.yaml'),
  ]);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${url}/`, 60000);
  } catch (err) {
    await gw.stop();
    throw new Error(`gateway did not start: ${gw.output()}`, { cause: err });
  }
  return {
    gw,
    url,
    dir: dir.path,
    stop: async () => {
      await gw.stop();
      dir.remove();
    },
  };
}

function readLines(path: string): Record<string, unknown>[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function linesWhen(path: string, count: number): Promise<Record<string, unknown>[]> {
  await waitFor(() => readLines(path).length >= count, {
    timeoutMs: 10000,
    what: `${count} lines in ${path}`,
  });
  return readLines(path);
}

/** The line whose path starts with `prefix`, once it is written. */
async function lineFor(path: string, prefix: string): Promise<Record<string, unknown>> {
  let found: Record<string, unknown> | undefined;
  await waitFor(
    () => (found = readLines(path).find((l) => String(l.path).startsWith(prefix))) !== undefined,
    { timeoutMs: 10000, what: `the line of ${prefix}` },
  );
  return found!;
}

/** Sends `raw` on its own connection and resolves with every byte the gateway answered. */
async function rawExchange(url: string, raw: string): Promise<Buffer> {
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  socket.write(raw);
  await once(socket, 'close');
  return Buffer.concat(chunks);
}

test('access log: a JSON line per request names route, policy, status, upstream, timings, bytes, request id and consumer', async () => {
  const ok = await fetch(`${g.url}/api/orders?api_key=alice-secret-key&page=2`, {
    method: 'POST',
    body: 'hello world',
    headers: { 'x-request-id': 'req-123', 'user-agent': 'access-test/1' },
  });
  assert.equal(ok.status, 200);
  const sent = await ok.text();
  const denied = await fetch(`${g.url}/api/denied`);
  assert.equal(denied.status, 401);
  await denied.text();
  const broken = await fetch(`${g.url}/broken`);
  assert.ok(broken.status >= 500, String(broken.status));
  await broken.text();

  const first = await lineFor(file, '/api/orders');
  assert.equal(first.route, 'api');
  assert.equal(first.policy, 'api-policy');
  assert.equal(first.status, 200);
  assert.equal(first.method, 'POST');
  assert.equal(first.request_id, 'req-123');
  assert.equal(first.consumer, 'alice');
  assert.equal(first.client, '127.0.0.1');
  assert.equal(first.upstream, `127.0.0.1:${origin.port}`);
  assert.equal(first.upstream_status, 200);
  assert.equal(typeof first.upstream_duration_ms, 'number');
  assert.ok((first.duration_ms as number) >= (first.upstream_duration_ms as number));
  assert.ok((first.bytes_in as number) > 11, `bytes_in ${String(first.bytes_in)}`);
  assert.ok((first.bytes_out as number) > Buffer.byteLength(sent), `bytes_out ${String(first.bytes_out)}`);
  assert.equal(first.user_agent, 'access-test/1');
  assert.equal(first.path, '/api/orders?api_key=<redacted>&page=2');
  assert.match(String(first.time), /^\d{4}-\d\d-\d\dT/);

  const second = await lineFor(file, '/api/denied');
  assert.equal(second.status, 401);
  assert.equal(second.consumer, null);
  assert.equal(second.upstream, null);

  const third = await lineFor(file, '/broken');
  assert.equal(third.route, 'broken');
  assert.equal(third.upstream, `127.0.0.1:${dead}`);
  assert.equal(third.error, 'UPSTREAM_CONNECTION_ERROR');
  assert.equal(third.upstream_duration_ms, null);

  assert.doesNotMatch(readFileSync(file, 'utf8'), /alice-secret-key/);
});

test('access log: bytes_in and bytes_out are the bytes the HTTP/1.1 connection carried each way', async () => {
  const raw =
    'POST /api/bytes?api_key=alice-secret-key HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 5\r\nConnection: close\r\n\r\nabcde';
  const answer = await rawExchange(g.url, raw);
  assert.match(answer.toString('latin1'), /^HTTP\/1\.1 200 /);
  const line = await lineFor(file, '/api/bytes');
  assert.equal(line.bytes_in, Buffer.byteLength(raw));
  assert.equal(line.bytes_out, answer.length);
});

test('access log: requests that match no route are logged with an empty route', async () => {
  assert.equal((await fetch(`${g.url}/nowhere?token=abc`)).status, 404);
  const line = await lineFor(file, '/nowhere');
  assert.equal(line.route, '');
  assert.equal(line.policy, '');
  assert.equal(line.status, 404);
  assert.equal(line.path, '/nowhere?token=<redacted>');
});

test('access log: combined format writes the Apache/NCSA line with the consumer as the user', async () => {
  const g = await start('{ output: $DIR/access.log, format: combined }');
  const file = join(g.dir, 'access.log');
  try {
    const res = await fetch(`${g.url}/api/x?api_key=alice-secret-key`, {
      headers: { referer: 'https://example.test/from?code=s3cret', 'user-agent': 'curl "quoted"' },
    });
    assert.equal(res.status, 200);
    const body = await res.text();
    await waitFor(() => existsSync(file) && readFileSync(file, 'utf8').includes('/api/x'), {
      what: 'the combined line',
    });
    const line = readFileSync(file, 'utf8')
      .split('\n')
      .find((l) => l.includes('/api/x'));
    const combined =
      /^127\.0\.0\.1 - alice \[\d\d\/[A-Z][a-z]{2}\/\d{4}:\d\d:\d\d:\d\d \+0000\] "GET \/api\/x\?api_key=<redacted> HTTP\/1\.1" 200 (\d+) "https:\/\/example\.test\/from\?code=<redacted>" "curl \\x22quoted\\x22"$/;
    const match = combined.exec(line ?? '');
    assert.ok(match, line);
    // Bytes sent, headers included (nginx's $bytes_sent).
    assert.ok(Number(match[1]) > Buffer.byteLength(body), line);
  } finally {
    await g.stop();
  }
});

test('access log: after logrotate renames the file, SIGUSR1 makes the next line go to a new file at the path', async () => {
  const rotated = join(g.dir, 'access.log.1');
  await (await fetch(`${g.url}/api/one?api_key=alice-secret-key`)).text();
  await lineFor(file, '/api/one');
  renameSync(file, rotated);
  g.gw.child.kill('SIGUSR1');
  await waitFor(() => existsSync(file), { what: 'the reopened file' });
  await (await fetch(`${g.url}/api/two?api_key=alice-secret-key`)).text();
  const lines = await linesWhen(file, 1);
  assert.deepEqual(
    lines.map((l) => l.path),
    ['/api/two?api_key=<redacted>'],
  );
  assert.ok(readLines(rotated).some((l) => l.path === '/api/one?api_key=<redacted>'));
  assert.ok(!readLines(rotated).some((l) => l.path === '/api/two?api_key=<redacted>'));
  assert.equal(g.gw.child.exitCode, null, 'SIGUSR1 must not stop the gateway');
});

test('access log: stdout output writes JSON lines next to the gateway log', async () => {
  const g = await start('{ output: stdout }');
  try {
    await (await fetch(`${g.url}/api/out?api_key=alice-secret-key`)).text();
    await waitFor(() => g.gw.output().includes('"path":"/api/out?api_key=<redacted>"'), {
      what: 'the stdout line',
    });
    const line = g.gw
      .output()
      .split('\n')
      .find((l) => l.includes('/api/out'));
    assert.equal((JSON.parse(line ?? '{}') as { consumer?: string }).consumer, 'alice');
  } finally {
    await g.stop();
  }
});

test('access log: an output path that cannot be opened stops the start with the key named', async () => {
  const dir = tempDir('switchyard-access-bad-');
  try {
    const port = await freePort();
    // A path under a regular file can never be opened (ENOTDIR).
    writeFileSync(join(dir.path, 'not-a-dir'), '');
    writeFileSync(
      join(dir.path, 'system.yaml'),
      `listener: { bind: 127.0.0.1, port: ${port} }\naccess_log: { output: ${join(dir.path, 'not-a-dir', 'access.log')} }\n`,
    );
    writeFileSync(join(dir.path, 'gateway.yaml'), gatewayYaml(origin.port, dead));
    const gw = spawnGateway([
      '--system-config',
      join(dir.path, 'system.yaml'),
      '--gateway-config',
      join(dir.path, 'gateway.yaml'),
    ]);
    const code = await gw.exited;
    assert.notEqual(code, 0);
    assert.match(gw.output(), /access_log\.output/);
  } finally {
    dir.remove();
  }
});
