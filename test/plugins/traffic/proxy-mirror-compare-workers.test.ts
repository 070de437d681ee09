import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayProcess } from '../../support/gateway-process.js';
import { request } from '../../support/http.js';
import { startOrigin, type Origin } from '../../support/origins.js';
import { waitFor } from '../../support/wait.js';
import { basic } from '../../admin/harness.js';
import { spawnedConfig, startSpawned, type SpawnedConfig } from '../../admin/spawned.js';

/** proxy-mirror `compare` with `workers: 2`: the workers' mismatches are listed by the primary's Admin API. */
const SYSTEM = [
  'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
  'logging: { level: warn, format: json }',
  'timeouts: { shutdown_timeout_seconds: 2 }',
  'workers: 2',
  'admin:',
  '  bind: 127.0.0.1',
  '  port: @ADMIN_PORT@',
  '  username: admin',
  '  password: "correct horse"',
  '',
].join('\n');

const answer =
  (body: string) =>
  (_req: IncomingMessage, res: ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(body);
  };

let primary: Origin;
let shadow: Origin;
let config: SpawnedConfig;
let gw: GatewayProcess;

before(async () => {
  primary = await startOrigin(answer('v1'));
  shadow = await startOrigin(answer('v2'));
  config = await spawnedConfig(
    SYSTEM,
    `
routes:
  - { name: cmp, match: { path: /cmp/* }, policy: cmp }
policies:
  - name: cmp
    nodes:
      - { id: listener, type: listener }
      - { id: mirror, type: proxy-mirror, config: { host: "http://127.0.0.1:${shadow.port}", compare: true } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${primary.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: mirror.in }
      - { from: mirror.success, to: up.in }
      - { from: up.success, to: client.in }
`,
  );
  gw = await startSpawned(config);
});

after(async () => {
  await gw?.stop();
  config?.remove();
  await primary?.close();
  await shadow?.close();
});

const asAdmin = (path: string) =>
  fetch(`http://127.0.0.1:${config.adminPort}${path}`, { headers: { authorization: basic() } });

test('compare with workers: every worker mismatch is listed once and counted once', async () => {
  for (let i = 0; i < 12; i++) {
    const res = await request(`http://127.0.0.1:${config.dataPort}/cmp/${i}`);
    assert.equal(res.body, 'v1');
  }
  const listed = async () =>
    ((await (await asAdmin('/api/shadow/cmp/mirror')).json()) as { mismatches: { path: string }[] })
      .mismatches;
  await waitFor(async () => (await listed()).length === 12, { what: '12 listed mismatches' });
  assert.deepEqual(
    new Set((await listed()).map((m) => m.path)),
    new Set(Array.from({ length: 12 }, (_, i) => `/cmp/${i}`)),
  );
  const metrics = await (await asAdmin('/metrics')).text();
  const line = metrics
    .split('\n')
    .find((l) => l.startsWith('gateway_shadow_mismatch_total{') && l.includes('kind="body"'));
  assert.equal(Number(line?.split(' ').at(-1)), 12, line);
});
