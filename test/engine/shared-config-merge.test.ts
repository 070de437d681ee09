/**
 * Shared configs with `merge: deep` and `config_ref` chains
 * (docs/shared-configs.md), against a real `switchyard` process: the merged
 * result is what the node runs with, the Admin API returns each entry as
 * written, and cycles, unknown links and type mismatches are refused at
 * `plugin_configs[i].config_ref`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnedConfig, startSpawned, validate, type SpawnedConfig } from '../admin/spawned.js';
import type { GatewayProcess } from '../support/gateway-process.js';

const SYSTEM = `
listener: { bind: 127.0.0.1, port: @DATA_PORT@ }
logging: { level: warn, format: json }
admin: { bind: 127.0.0.1, port: @ADMIN_PORT@, username: admin, password: pw }
`;

const mock = (id: string, ref: string, merge: string, local: string) =>
  `      - { id: ${id}, type: mocking, config_ref: ${ref}${merge}, config: ${local} }`;

const policy = (name: string, node: string) => `
  - name: ${name}
    nodes:
      - { id: in, type: listener }
${node}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }`;

const GATEWAY = `
plugin_configs:
  - name: base
    type: mocking
    config:
      response_example: base
      content_type: text/plain
      with_mock_header: false
      response_headers: { x-a: from-base, x-b: from-base }
  - name: tenant
    type: mocking
    config_ref: base
    merge: deep
    config: { response_headers: { x-b: from-tenant, x-c: from-tenant } }
routes:
  - { name: shallow, match: { path: /shallow }, policy: shallow-policy }
  - { name: deep, match: { path: /deep }, policy: deep-policy }
  - { name: chain, match: { path: /chain }, policy: chain-policy }
policies:${policy('shallow-policy', mock('m', 'base', '', '{ response_headers: { x-c: local } }'))}${policy(
  'deep-policy',
  mock('m', 'base', ', merge: deep', '{ response_headers: { x-c: local, x-a: null } }'),
)}${policy('chain-policy', mock('m', 'tenant', ', merge: deep', "{ response_example: 'chained' }"))}
`;

let config: SpawnedConfig;
let gw: GatewayProcess;
let data = '';
let admin = '';
const auth = { authorization: `Basic ${Buffer.from('admin:pw').toString('base64')}` };

before(async () => {
  config = await spawnedConfig(SYSTEM, GATEWAY);
  gw = await startSpawned(config);
  data = `http://127.0.0.1:${config.dataPort}`;
  admin = `http://127.0.0.1:${config.adminPort}`;
});

after(async () => {
  await gw.stop();
  config.remove();
});

const headers = (res: Response) => ['x-a', 'x-b', 'x-c'].map((h) => res.headers.get(h));

test('shared configs: the default shallow merge replaces a whole top-level key', async () => {
  const res = await fetch(`${data}/shallow`);
  assert.equal(await res.text(), 'base');
  assert.deepEqual(headers(res), [null, null, 'local']);
});

test('shared configs: merge: deep merges nested keys, and a nested null removes one', async () => {
  const res = await fetch(`${data}/deep`);
  assert.equal(await res.text(), 'base');
  assert.deepEqual(headers(res), [null, 'from-base', 'local']);
});

test('shared configs: a config_ref chain resolves root first, then each link, then the node', async () => {
  const res = await fetch(`${data}/chain`);
  assert.equal(await res.text(), 'chained');
  assert.deepEqual(headers(res), ['from-base', 'from-tenant', 'from-tenant']);
});

test('shared configs: the Admin API returns each entry and node as written, not merged', async () => {
  const tenant = await (await fetch(`${admin}/api/plugin-configs/tenant`, { headers: auth })).json();
  assert.deepEqual(tenant, {
    name: 'tenant',
    type: 'mocking',
    config_ref: 'base',
    merge: 'deep',
    config: { response_headers: { 'x-b': 'from-tenant', 'x-c': 'from-tenant' } },
  });
  const deep = (await (await fetch(`${admin}/api/policies/deep-policy`, { headers: auth })).json()) as {
    nodes: unknown[];
  };
  assert.deepEqual(deep.nodes[1], {
    id: 'm',
    type: 'mocking',
    config_ref: 'base',
    merge: 'deep',
    config: { response_headers: { 'x-c': 'local', 'x-a': null } },
  });
});

test('shared configs: a chain cycle, an unknown link and a type mismatch name plugin_configs[i].config_ref', async () => {
  const broken = GATEWAY.replace(
    '    type: mocking\n    config:\n      response_example: base',
    '    type: mocking\n    config_ref: tenant\n    config:\n      response_example: base',
  ).replace(
    'routes:',
    `  - { name: lost, type: mocking, config_ref: bsae, config: {} }
  - { name: keys, type: key-auth, config_ref: base, config: {} }
routes:`,
  );
  const bad = await spawnedConfig(SYSTEM, broken);
  try {
    const run = validate(bad);
    assert.equal(run.status, 1, run.output);
    assert.match(
      run.output,
      /plugin_configs\[\d\]\.config_ref: .*config_ref chain is a cycle: (base → tenant → base|tenant → base → tenant)/,
    );
    assert.match(
      run.output,
      /plugin_configs\[2\]\.config_ref: .*'bsae' names no plugin_configs entry \(did you mean 'base'\?\)/,
    );
    assert.match(
      run.output,
      /plugin_configs\[3\]\.config_ref: .*'base' is a 'mocking' config; this one is 'key-auth'/,
    );
  } finally {
    bad.remove();
  }
});
