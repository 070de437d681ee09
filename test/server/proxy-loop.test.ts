/**
 * Proxy-loop guard against real gateway processes (operator review §7 item 1):
 * every proxied request carries `Via: 1.1 switchyard-<id>`; a request that comes
 * back to the same gateway `listener.max_hops` times is answered 508 before
 * routing, instead of ~1,500 self-hops, thousands of fds and an empty 400.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnGateway, type GatewayProcess } from '../support/gateway-process.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

interface Started {
  gw: GatewayProcess;
  port: number;
  stop(): Promise<void>;
}

let echo: Server;
let echoPort = 0;
let a: Started;
let b: Started;

function upstreamPolicy(name: string, port: number, strip?: string): string {
  return [
    `  - name: ${name}`,
    '    nodes:',
    '      - { id: listener, type: listener }',
    ...(strip === undefined
      ? []
      : [
          `      - { id: strip, type: proxy-rewrite, config: { phase: request, strip_path_prefix: ${strip} } }`,
        ]),
    `      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }], timeout_ms: 5000 } }`,
    '      - { id: client, type: client }',
    '    edges:',
    `      - { from: listener.out, to: ${strip === undefined ? 'up' : 'strip'}.in }`,
    ...(strip === undefined ? [] : ['      - { from: strip.success, to: up.in }']),
    '      - { from: up.success, to: client.in }',
  ].join('\n');
}

/** A gateway on its own port: /loop/* proxies to itself unchanged, /self/* once to its own /hello, /api/* to `apiPort`. */
async function startGateway(apiPort: number, extraSystem = ''): Promise<Started> {
  const dir = tempDir('switchyard-loop-');
  const [port, adminPort] = [await freePort(), await freePort()];
  writeFileSync(
    join(dir.path, 'system.yaml'),
    [
      `listener: { bind: 127.0.0.1, port: ${port}${extraSystem} }`,
      'logging: { level: warn }',
      `admin: { bind: 127.0.0.1, port: ${adminPort}, username: admin, password: "correct horse" }`,
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(dir.path, 'gateway.yaml'),
    [
      'routes:',
      '  - { name: hello, match: { path: /hello }, policy: hello }',
      '  - { name: loop, match: { path: /loop/* }, policy: loop }',
      '  - { name: self, match: { path: /self/* }, policy: self }',
      '  - { name: api, match: { path: /api/* }, policy: api }',
      'policies:',
      '  - name: hello',
      '    nodes:',
      '      - { id: listener, type: listener }',
      "      - { id: m, type: mocking, config: { response_status: 200, content_type: text/plain, response_example: 'hello' } }",
      '      - { id: client, type: client }',
      '    edges:',
      '      - { from: listener.out, to: m.in }',
      '      - { from: m.success, to: client.in }',
      upstreamPolicy('loop', port),
      upstreamPolicy('self', port, '/self'),
      upstreamPolicy('api', apiPort),
      '',
    ].join('\n'),
  );
  const gw = spawnGateway([
    '--system-config',
    join(dir.path, 'system.yaml'),
    '--gateway-config',
    join(dir.path, 'gateway.yaml'),
  ]);
  try {
    await waitFor(
      async () => {
        try {
          return (await fetch(`http://127.0.0.1:${port}/hello`)).status === 200;
        } catch {
          return false;
        }
      },
      { timeoutMs: 60_000, intervalMs: 100, what: 'the gateway data plane' },
    );
  } catch (err) {
    await gw.stop('SIGKILL');
    dir.remove();
    throw new Error(`gateway did not start: ${(err as Error).message}\n${gw.output()}`, { cause: err });
  }
  return {
    gw,
    port,
    async stop() {
      await gw.stop();
      dir.remove();
    },
  };
}

function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

function rssBytes(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

async function echoed(res: Response): Promise<IncomingHttpHeaders> {
  assert.equal(res.status, 200);
  return ((await res.json()) as { headers: IncomingHttpHeaders }).headers;
}

before(async () => {
  echo = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ url: req.url, headers: req.headers }));
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  echoPort = (echo.address() as { port: number }).port;
  a = await startGateway(echoPort);
  // Gateway B forwards /api/* to gateway A's /api/* (another instance, another id).
  b = await startGateway(a.port);
});

after(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await new Promise((resolve) => echo.close(resolve));
});

test('proxy loop: an upstream pointing at the gateway itself is answered 508 PROXY_LOOP_DETECTED quickly, fds and RSS stay bounded', async () => {
  const pid = a.gw.child.pid ?? 0;
  const fdsBefore = openFds(pid);
  const rssBefore = rssBytes(pid);
  const started = Date.now();
  const res = await fetch(`http://127.0.0.1:${a.port}/loop/x`);
  const elapsed = Date.now() - started;
  assert.equal(res.status, 508);
  const body = (await res.json()) as { error: string; code: string };
  assert.equal(body.error, 'loop_detected');
  assert.equal(body.code, 'PROXY_LOOP_DETECTED');
  assert.ok(elapsed < 2000, `answered in ${elapsed} ms`);
  // 10 hops hold at most a few dozen sockets (each hop: one inbound, one pooled outbound).
  const fdsAfter = openFds(pid);
  assert.ok(fdsAfter - fdsBefore < 60, `fds ${fdsBefore} -> ${fdsAfter}`);
  const rssAfter = rssBytes(pid);
  assert.ok(rssAfter - rssBefore < 64 * 1024 * 1024, `RSS ${rssBefore} -> ${rssAfter}`);
  // The gateway still serves normal traffic afterwards.
  assert.equal((await fetch(`http://127.0.0.1:${a.port}/hello`)).status, 200);
});

test('proxy loop: a normal proxied request carries Via with this gateway id and still works', async () => {
  const headers = await echoed(await fetch(`http://127.0.0.1:${a.port}/api/ok`));
  assert.match(String(headers.via), /^1\.1 switchyard-[0-9a-f]{12}$/);
  assert.ok(String(headers['x-forwarded-for']).length > 0);
});

test('proxy loop: a deliberate single hop back to the same gateway (the quick-start pattern) still works', async () => {
  const res = await fetch(`http://127.0.0.1:${a.port}/self/hello`);
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'hello');
});

test('proxy loop: forwarding through another gateway instance (another id) works and Via lists both', async () => {
  const headers = await echoed(await fetch(`http://127.0.0.1:${b.port}/api/chain`));
  const entries = String(headers.via).split(', ');
  assert.equal(entries.length, 2);
  assert.notEqual(entries[0], entries[1], 'each process has its own id');
  for (const e of entries) assert.match(e, /^1\.1 switchyard-[0-9a-f]{12}$/);
});

test("proxy loop: a client's Via with foreign ids is passed on; only this gateway's exact id counts", async () => {
  const foreign = Array.from({ length: 20 }, () => '1.1 switchyard-000000000000').join(', ');
  const headers = await echoed(
    await fetch(`http://127.0.0.1:${a.port}/api/spoof`, { headers: { via: `1.0 corp-proxy, ${foreign}` } }),
  );
  assert.ok(String(headers.via).startsWith('1.0 corp-proxy, 1.1 switchyard-000000000000'));
  // Learn A's own entry, then send it max_hops (10) times: the client only refuses itself.
  const own = String(headers.via).split(', ').at(-1) ?? '';
  const nine = await fetch(`http://127.0.0.1:${a.port}/api/spoof`, {
    headers: { via: Array.from({ length: 9 }, () => own).join(', ') },
  });
  assert.equal(nine.status, 200, 'nine passes are under the limit');
  await nine.arrayBuffer();
  const ten = await fetch(`http://127.0.0.1:${a.port}/hello`, {
    headers: { via: Array.from({ length: 10 }, () => own).join(', ') },
  });
  assert.equal(ten.status, 508);
  await ten.arrayBuffer();
});

test('proxy loop: listener.max_hops is configurable (1 = refuse the first hop back)', async () => {
  const strict = await startGateway(echoPort, ', max_hops: 1');
  try {
    const res = await fetch(`http://127.0.0.1:${strict.port}/self/hello`);
    assert.equal(res.status, 508);
    await res.arrayBuffer();
    assert.equal((await fetch(`http://127.0.0.1:${strict.port}/api/x`)).status, 200);
  } finally {
    await strict.stop();
  }
});
