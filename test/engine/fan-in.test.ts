/**
 * Fan-in (docs/configuration.md#compile-rules) against a real `switchyard`
 * process: one `cors` response node is entered by the cache hit and by the
 * store after the upstream (the operator review's F4 config, which used to be
 * refused), so CORS headers are on the first answer (a miss) and on the
 * second (a hit), and a trace shows the shared node once.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnedConfig, startSpawned, validate, type SpawnedConfig } from '../admin/spawned.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { readFileSync } from 'node:fs';
import { compileIssues } from '../../src/migrate/migrate.js';
import { echo, startOrigin, type Origin } from '../support/origins.js';

const SYSTEM = `
listener: { bind: 127.0.0.1, port: @DATA_PORT@ }
logging: { level: warn, format: json }
admin: { bind: 127.0.0.1, port: @ADMIN_PORT@, username: admin, password: pw }
debug: { enabled: true, trigger_header: x-debug, max_traces: 50 }
`;

const gateway = (port: number) => `
routes:
  - { name: users, match: { path: /users/* }, policy: users-policy }
policies:
  - name: users-policy
    nodes:
      - { id: listener, type: listener }
      - { id: cors, type: cors, config: { allowed_origins: ["https://app.example.com"] } }
      - { id: lookup, type: proxy-cache, config: { phase: lookup, id: users, policy: local } }
      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: store, type: proxy-cache, config: { phase: store, id: users, policy: local } }
      - id: cors-response
        type: cors
        config: { allowed_origins: ["https://app.example.com"], expose_headers: [x-origin] }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: cors.in }
      - { from: cors.preflight, to: client.in }
      - { from: cors.success, to: lookup.in }
      - { from: lookup.success, to: backend.in }
      - { from: lookup.hit, to: cors-response.in }
      - { from: backend.success, to: store.in }
      - { from: store.success, to: cors-response.in }
      - { from: store.hit, to: cors-response.in }
      - { from: cors-response.success, to: client.in }
      - { from: cors-response.preflight, to: client.in }
`;

let origin: Origin;
let config: SpawnedConfig;
let gw: GatewayProcess;
let data = '';
let admin = '';
const auth = { authorization: `Basic ${Buffer.from('admin:pw').toString('base64')}` };

before(async () => {
  origin = await startOrigin(echo('users'));
  config = await spawnedConfig(SYSTEM, gateway(origin.port));
  gw = await startSpawned(config);
  data = `http://127.0.0.1:${config.dataPort}`;
  admin = `http://127.0.0.1:${config.adminPort}`;
});

after(async () => {
  await gw.stop();
  config.remove();
  await origin.close();
});

test('F4: the policy with one cors node entered by lookup.hit and store.success validates', () => {
  const run = validate(config);
  assert.equal(run.status, 0, run.output);
  assert.doesNotMatch(run.output, /incoming edge/);
});

test('F4: a cors response node shared by the hit and the miss branch adds CORS headers on both', async () => {
  const headers = { origin: 'https://app.example.com', 'x-debug': '1' };
  const first = await fetch(`${data}/users/1`, { headers });
  assert.equal(first.status, 200, gw.output());
  await first.arrayBuffer();
  assert.equal(first.headers.get('switchyard-cache-status'), 'MISS');
  assert.equal(first.headers.get('access-control-allow-origin'), 'https://app.example.com');
  assert.equal(first.headers.get('access-control-expose-headers'), 'x-origin');

  const second = await fetch(`${data}/users/1`, { headers });
  assert.equal(second.status, 200);
  assert.equal(((await second.json()) as { origin: string }).origin, 'users');
  assert.equal(second.headers.get('switchyard-cache-status'), 'HIT');
  assert.equal(second.headers.get('access-control-allow-origin'), 'https://app.example.com');
  assert.equal(second.headers.get('access-control-expose-headers'), 'x-origin');
  assert.equal(origin.requests.length, 1, 'the hit did not reach the upstream');

  // Each trace walks one branch and shows the shared node once.
  const ids: string[][] = [];
  for (const res of [first, second]) {
    const id = res.headers.get('x-switchyard-trace-id');
    assert.ok(id, 'a trace id header');
    const trace = (await (await fetch(`${admin}/api/debug/traces/${id}`, { headers: auth })).json()) as {
      steps: { node_id: string }[];
    };
    ids.push(trace.steps.map((s) => s.node_id));
  }
  assert.deepEqual(ids, [
    ['cors', 'lookup', 'backend', 'store', 'cors-response', 'client'],
    ['cors', 'lookup', 'cors-response', 'client'],
  ]);

  // A request from an origin that is not allowed gets the cached answer without CORS headers.
  const other = await fetch(`${data}/users/1`, { headers: { origin: 'https://evil.example' } });
  assert.equal(other.status, 200);
  await other.arrayBuffer();
  assert.equal(other.headers.get('switchyard-cache-status'), 'HIT');
  assert.equal(other.headers.get('access-control-allow-origin'), null);
});

test('F4: the shared-node examples of the cors, proxy-cache, traffic-split and global-rules pages validate as written', () => {
  for (const page of [
    'plugins/cors.md',
    'plugins/proxy-cache.md',
    'plugins/traffic-split.md',
    'global-rules.md',
  ]) {
    const text = readFileSync(new URL(`../../docs/${page}`, import.meta.url), 'utf8');
    const blocks = [...text.matchAll(/^```yaml\n([\s\S]*?)^```/gm)].map((m) => m[1] ?? '');
    // The whole gateway files among the page's blocks (global-rules.md also has fragments).
    const whole = blocks.filter((b) => /^policies:/m.test(b) && /^routes:/m.test(b));
    assert.ok(whole.length > 0, `${page} has a whole gateway.yaml example`);
    for (const block of whole) {
      assert.deepEqual(
        compileIssues(block, { env: {} }).map((i) => `${i.path}: ${i.message}`),
        [],
        `${page}:\n${block}`,
      );
      if (page !== 'global-rules.md') {
        // Some node of the example is entered by more than one edge.
        const targets = [...block.matchAll(/to: ([\w-]+)\.in/g)].map((m) => m[1]);
        const shared = targets.filter((t, i) => t !== 'client' && targets.indexOf(t) !== i);
        assert.ok(shared.length > 0, `${page}: a response-side node shared by several branches`);
      }
    }
  }
});
