import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { once } from 'node:events';
import { spawnGateway, waitForHttp } from '../support/gateway-process.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const gatewayYaml = (body: string, delay = 0) => `
routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: "${body}", content_type: text/plain, delay: ${delay} } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`;

function files(system: string, gateway: string) {
  const dir = tempDir();
  const sys = join(dir.path, 'system.yaml');
  const gw = join(dir.path, 'gateway.yaml');
  writeFileSync(sys, system);
  writeFileSync(gw, gateway);
  return { dir, sys, gw, args: ['--system-config', sys, '--gateway-config', gw] };
}

const systemYaml = (port: number, extra = '') =>
  `listener: { bind: 127.0.0.1, port: ${port} }\nlogging: { level: info }\ntimeouts: { shutdown_timeout_seconds: 10 }\n${extra}`;

test('cli: an unknown flag prints usage and exits 2', async () => {
  const p = spawnGateway(['--bogus']);
  assert.equal(await p.exited, 2);
  assert.match(p.output(), /Usage:/);
});

test('cli: an invalid system.yaml exits 1 naming the bad key', async () => {
  const f = files('listener: { port: "not-a-port" }\n', gatewayYaml('x'));
  try {
    const p = spawnGateway(f.args);
    assert.equal(await p.exited, 1);
    assert.match(p.output(), /listener\.port/);
  } finally {
    f.dir.remove();
  }
});

test('cli: an invalid gateway.yaml exits 1 with the compile errors', async () => {
  const f = files(systemYaml(await freePort()), gatewayYaml('x').replace('type: mocking', 'type: nope'));
  try {
    const p = spawnGateway(f.args);
    assert.equal(await p.exited, 1);
    assert.match(p.output(), /Unknown plugin type: nope/);
  } finally {
    f.dir.remove();
  }
});

test('cli: a listener that cannot bind exits 1', async () => {
  const blocker = createServer().listen(0, '127.0.0.1');
  await once(blocker, 'listening');
  const port = (blocker.address() as { port: number }).port;
  const f = files(systemYaml(port), gatewayYaml('x'));
  try {
    const p = spawnGateway(f.args);
    assert.equal(await p.exited, 1);
  } finally {
    blocker.close();
    f.dir.remove();
  }
});

test('cli: validate lists every error with its path and exits 1', async () => {
  const bad = gatewayYaml('x')
    .replace('type: mocking', 'type: mocking')
    .replace('response_example: "x"', 'response_example: "x", response_status: 7')
    .replace('policy: p }', 'policy: missing }');
  const f = files('listener: { port: 70000 }\n', bad);
  try {
    const p = spawnGateway(['validate', ...f.args]);
    assert.equal(await p.exited, 1);
    const out = p.output();
    assert.match(out, /listener\.port/);
    assert.match(out, /policies\[0\]\.nodes\[1\]\.config\.response_status/);
    assert.match(out, /route 'r': unknown policy 'missing'/);
    assert.match(out, /3 error\(s\)/);
  } finally {
    f.dir.remove();
  }
});

test('cli: validate accepts a valid pair and exits 0', async () => {
  const f = files(systemYaml(8080), gatewayYaml('x'));
  try {
    const p = spawnGateway(['validate', ...f.args]);
    assert.equal(await p.exited, 0);
    assert.match(p.output(), /configuration is valid/);
  } finally {
    f.dir.remove();
  }
});

test('cli: SIGHUP reloads gateway.yaml (watcher off)', async () => {
  const port = await freePort();
  const f = files(systemYaml(port, 'config: { watch: false }\n'), gatewayYaml('before'));
  const p = spawnGateway(f.args);
  try {
    const url = `http://127.0.0.1:${port}/x`;
    await waitForHttp(url);
    assert.equal(await (await fetch(url)).text(), 'before');
    writeFileSync(f.gw, gatewayYaml('after'));
    p.child.kill('SIGHUP');
    await waitFor(async () => (await (await fetch(url)).text()) === 'after', { what: 'SIGHUP reload' });
  } finally {
    await p.stop();
    f.dir.remove();
  }
});

test('cli: SIGTERM drains an in-flight request, then exits 0', async () => {
  // An origin that holds the request until the test releases it: the request is provably in flight.
  let release: () => void = () => undefined;
  let arrived: () => void = () => undefined;
  const arrival = new Promise<void>((resolve) => (arrived = resolve));
  const origin = createHttpServer((_req, res) => {
    arrived();
    release = () => res.end('drained');
  });
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  const originPort = (origin.address() as { port: number }).port;
  const port = await freePort();
  const f = files(
    systemYaml(port),
    `
routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${originPort} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`,
  );
  const p = spawnGateway(f.args);
  try {
    const url = `http://127.0.0.1:${port}/x`;
    await waitForHttp(`http://127.0.0.1:${port}/not-routed`);
    const inflight = fetch(url).then((r) => r.text());
    await arrival;
    p.child.kill('SIGTERM');
    await waitFor(() => p.output().includes('shutting down'), { what: 'the shutdown to begin' });
    release();
    assert.equal(await inflight, 'drained');
    assert.equal(await p.exited, 0);
  } finally {
    await p.stop();
    origin.closeAllConnections();
    origin.close();
    f.dir.remove();
  }
});
