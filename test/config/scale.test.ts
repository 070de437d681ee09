import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { scaleConfig, scaleConfigYaml, type ScaleOptions } from '../../bench/config-scale-config.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, type GatewayProcess } from '../support/gateway-process.js';
import { request } from '../support/http.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

/**
 * One real gateway process on a generated 10,000-route / 10,000-policy gateway.yaml
 * (bench/config-scale-config.ts, shared with bench/config-scale.ts). Only generous time bounds:
 * the figures are the benchmark's (docs/benchmarks.md, "Config scale").
 */
const COUNT = 10_000;
/** The last route: `/items/9999` (GET), proxied to the origin by policy p9999. */
const LAST = COUNT - 1;

const origin = createServer((req, res) => res.end(`origin ${req.url}`));
const dir = tempDir('switchyard-scale-');
const gatewayPath = join(dir.path, 'gateway.yaml');
let gateway: GatewayProcess;
let base = '';
let options: ScaleOptions;

/** Log lines (JSON) of the gateway whose msg is `msg`. */
function logLines(msg: string): Record<string, unknown>[] {
  return gateway
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line['msg'] === msg);
}

before(async () => {
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  options = { upstreamPort: (origin.address() as AddressInfo).port, version: 'v1' };
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  // No file watcher: each reload below is exactly one SIGHUP.
  writeFileSync(
    join(dir.path, 'system.yaml'),
    `listener: { bind: 127.0.0.1, port: ${port} }\nconfig: { watch: false }\nlogging: { level: info }\n`,
  );
  writeFileSync(gatewayPath, scaleConfigYaml(COUNT, options));
  gateway = spawnGateway(['--system-config', join(dir.path, 'system.yaml'), '--gateway-config', gatewayPath]);
  await waitFor(
    async () => {
      if (gateway.child.exitCode !== null) throw new Error(`gateway exited:\n${gateway.output()}`);
      return (await request(`${base}/items/0`).catch(() => undefined))?.status === 200;
    },
    { timeoutMs: 90_000, intervalMs: 50, what: 'the first 200 of a 10,000-route gateway' },
  );
});

after(async () => {
  await gateway?.stop();
  await new Promise((resolve) => origin.close(resolve));
  dir.remove();
});

test('a gateway with 10,000 routes and policies serves its first and its last route', async () => {
  const first = await request(`${base}/items/0`);
  assert.equal(first.status, 200);
  assert.equal(first.body, 'v1 p0 /items/0');
  const last = await request(`${base}/items/${LAST}`);
  assert.equal(last.status, 200, last.body);
  assert.equal(last.body, `origin /items/${LAST}`);
  // A host route from the middle of the table, and a method the exact route does not take.
  const host = await request(`${base}/h/x`, { headers: { host: 'svc5000.example.test' } });
  assert.equal(host.body, 'v1 p5000 /h/x');
  assert.equal((await request(`${base}/items/${LAST}`, { method: 'POST' })).status, 404);
  const applied = logLines('configuration applied');
  assert.equal(applied.length, 0, 'the startup compile logs no reload');
});

test('a reload that changes one policy of 10,000 applies it, recompiles only it, and the rest keep serving', async () => {
  writeFileSync(
    gatewayPath,
    scaleConfigYaml(COUNT, { ...options, versionOf: (i) => (i === 0 ? 'v2' : 'v1') }),
  );
  // Requests keep going across the reload; every one must be answered by the old or the new config.
  let running = true;
  const answers: string[] = [];
  const stream = (async () => {
    while (running) {
      const res = await request(`${base}/items/6`);
      answers.push(`${res.status} ${res.body}`);
    }
  })();
  gateway.child.kill('SIGHUP');
  await waitFor(async () => (await request(`${base}/items/0`)).body === 'v2 p0 /items/0', {
    timeoutMs: 60_000,
    intervalMs: 50,
    what: 'the reloaded policy p0',
  });
  running = false;
  await stream;
  assert.ok(answers.length > 0);
  assert.deepEqual([...new Set(answers)], ['200 v1 p6 /items/6']);
  assert.equal((await request(`${base}/items/${LAST}`)).body, `origin /items/${LAST}`);
  await waitFor(() => logLines('configuration applied').length === 1, { what: 'the apply log line' });
  const [applied] = logLines('configuration applied');
  assert.equal(applied?.['source'], 'signal');
  assert.equal(applied?.['routes'], COUNT);
  assert.equal(applied?.['compiled'], 1, 'only the changed policy is compiled again');
});

test('an invalid 10,000-policy reload is refused naming the key path, and the running config keeps serving', async () => {
  const broken = scaleConfig(COUNT, { ...options, versionOf: (i) => (i === 0 ? 'v3' : 'v1') });
  const node = (broken.policies[5000] as { nodes: { config: Record<string, unknown> }[] }).nodes[1]!;
  node.config['response_status'] = 'not a status';
  const items = (list: unknown[]) => list.map((item) => `  - ${JSON.stringify(item)}`).join('\n');
  writeFileSync(gatewayPath, `routes:\n${items(broken.routes)}\npolicies:\n${items(broken.policies)}\n`);
  gateway.child.kill('SIGHUP');
  await waitFor(() => logLines('configuration rejected; the previous one keeps serving').length === 1, {
    timeoutMs: 60_000,
    intervalMs: 50,
    what: 'the rejection',
  });
  const [rejected] = logLines('configuration rejected; the previous one keeps serving');
  const paths = (rejected?.['errors'] as { path: string }[]).map((e) => e.path);
  assert.deepEqual(paths, ['policies[5000].nodes[1].config.response_status']);
  // Neither the broken policy nor p0's v3 went live.
  assert.equal((await request(`${base}/items/0`)).body, 'v2 p0 /items/0');
  assert.equal(
    (await request(`${base}/h/x`, { headers: { host: 'svc5000.example.test' } })).body,
    'v1 p5000 /h/x',
  );
  assert.equal((await request(`${base}/items/${LAST}`)).body, `origin /items/${LAST}`);
});
