import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parse } from 'yaml';
import { BASE_YAML, read } from '../admin/harness.js';
import { call, fails, ok, READ_TOKEN, startMcp, WRITE_TOKEN, type McpHarness } from './harness.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

/** BASE_YAML (route hello → hello-policy) plus one of every other resource, some holding secrets. */
const YAML = `${BASE_YAML}
  - name: sn-policy
    nodes:
      - { id: in, type: listener }
      - { id: sec, type: supernode, config: { name: answer } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: sec.in }
      - { from: sec.success, to: out.in }
supernodes:
  - name: answer
    nodes:
      - { id: input, type: input }
      - { id: output, type: output }
      - { id: m, type: mocking, config_ref: shared-mock }
    edges:
      - { from: input.out, to: m.in }
      - { from: m.success, to: output.in }
plugin_configs:
  - { name: shared-mock, type: mocking, config: { response_example: from-shared, content_type: text/plain } }
stores:
  - { name: main, type: redis, url: "redis://127.0.0.1:1", password: "literal-store-password" }
consumers:
  - name: alice
    group: gold
    credentials:
      key-auth: { key: alice-literal-key-123 }
      basic-auth: { username: alice, password: "\${ALICE_PASSWORD}" }
`;

const SECRETS = ['literal-store-password', 'alice-literal-key-123'];

describe('mcp read tools', () => {
  let h: McpHarness;
  let client: Client;
  let writer: Client;
  before(async () => {
    h = await startMcp({ gatewayYaml: YAML });
    client = await h.connect(READ_TOKEN);
    writer = await h.connect(WRITE_TOKEN);
  });
  after(() => h.stop());

  test('mcp catalog: list_node_types lists every type with its ports; get_node_type adds schema and docs', async () => {
    const { node_types } = await ok<{
      node_types: { type: string; ports: { outputs: { name: string }[] } }[];
    }>(client, 'list_node_types');
    const catalog = (await read(await h.call('GET', '/api/plugins'))).body as { plugins: { type: string }[] };
    assert.deepEqual(
      node_types.map((t) => t.type),
      catalog.plugins.map((p) => p.type),
    );
    const cors = node_types.find((t) => t.type === 'cors');
    assert.ok(cors?.ports.outputs.some((p) => p.name === 'preflight'));

    const mocking = await ok(client, 'get_node_type', { type: 'mocking' });
    assert.equal(mocking['type'], 'mocking');
    assert.equal((mocking['schema'] as { type: string }).type, 'object');
    assert.match(String(mocking['docs']), /^# mocking/);
    assert.equal((await fails(client, 'get_node_type', { type: 'no-such-type' })).code, 'not_found');
  });

  test('mcp catalog: list_vars is the /api/vars catalog; get_status adds debug and the token scope', async () => {
    const vars = await ok(client, 'list_vars');
    assert.deepEqual(vars, (await read(await h.call('GET', '/api/vars'))).body);
    const status = await ok(client, 'get_status');
    assert.equal(status['routes'], 1);
    assert.equal(status['policies'], 2);
    assert.equal(status['consumers'], 1);
    assert.deepEqual(status['debug'], { enabled: false, sandbox: false });
    assert.deepEqual(status['mcp'], { scope: 'read' });
  });

  test('mcp config: export_config is the live YAML with placeholders kept and secrets redacted', async () => {
    const r = await call(client, 'export_config');
    assert.equal(r.isError, false);
    for (const secret of SECRETS) assert.ok(!r.text.includes(secret), `${secret} leaked`);
    const exported = parse(r.text) as {
      routes: { name: string }[];
      stores: { password: string }[];
      consumers: { credentials: Record<string, Record<string, string>> }[];
    };
    assert.deepEqual(
      exported.routes.map((x) => x.name),
      ['hello'],
    );
    assert.equal(exported.stores[0]?.password, '<redacted>');
    assert.equal(exported.consumers[0]?.credentials['key-auth']?.['key'], '<redacted>');
    assert.equal(exported.consumers[0]?.credentials['basic-auth']?.['password'], '${ALICE_PASSWORD}');
  });

  test('mcp config: list_* and get_* show what the Admin API shows, secrets redacted', async () => {
    const routes = await ok<{ routes: unknown[] }>(client, 'list_routes');
    assert.deepEqual(routes.routes, (await read(await h.call('GET', '/api/routes'))).body);
    const route = await ok(client, 'get_route', { name: 'hello' });
    assert.deepEqual(route, (await read(await h.call('GET', '/api/routes/hello'))).body);

    const policies = await ok<{ policies: { name: string }[] }>(client, 'list_policies');
    assert.deepEqual(
      policies.policies.map((p) => p.name),
      ['hello-policy', 'sn-policy'],
    );
    const policy = await ok(client, 'get_policy', { name: 'hello-policy' });
    assert.deepEqual(policy['referenced_by'], ["route 'hello'"]);

    const supernode = await ok(client, 'get_supernode', { name: 'answer' });
    assert.deepEqual(supernode['referenced_by'], ["policy 'sn-policy' node 'sec'"]);
    assert.equal((await ok<{ supernodes: unknown[] }>(client, 'list_supernodes')).supernodes.length, 1);

    const shared = await ok(client, 'get_plugin_config', { name: 'shared-mock' });
    assert.equal(shared['type'], 'mocking');
    assert.equal((shared['referenced_by'] as string[]).length, 1);
    assert.equal(
      (await ok<{ plugin_configs: unknown[] }>(client, 'list_plugin_configs')).plugin_configs.length,
      1,
    );

    const stores = await call(client, 'list_stores');
    const consumers = await call(client, 'list_consumers');
    for (const secret of SECRETS) {
      assert.ok(!stores.text.includes(secret) && !consumers.text.includes(secret), `${secret} leaked`);
    }
    const store = await ok(client, 'get_store', { name: 'main' });
    assert.equal(store['password'], '<redacted>');
    assert.equal(store['url'], 'redis://127.0.0.1:1');
    const alice = await ok(client, 'get_consumer', { name: 'alice' });
    assert.equal(alice['group'], 'gold');
    assert.deepEqual(Object.keys(alice['credentials'] as object), ['key-auth', 'basic-auth']);
  });

  test('mcp config: an unknown name is the tool error not_found for every get_*', async () => {
    for (const tool of [
      'get_route',
      'get_policy',
      'get_supernode',
      'get_plugin_config',
      'get_store',
      'get_consumer',
    ]) {
      const error = await fails(client, tool, { name: 'missing' });
      assert.equal(error.code, 'not_found', tool);
      assert.match(error.message, /'missing'/);
    }
  });

  test('mcp validate_policy (write token): a valid policy (JSON or YAML) passes; an unwired port fails with its path', async () => {
    const yamlPolicy = `
nodes:
  - { id: in, type: listener }
  - { id: m, type: mocking, config: { response_example: hi } }
  - { id: out, type: client }
edges:
  - { from: in.out, to: m.in }
  - { from: m.success, to: out.in }
`;
    const valid = await ok(writer, 'validate_policy', { policy: yamlPolicy });
    assert.equal(valid['valid'], true);

    const unwired = await ok(writer, 'validate_policy', {
      name: 'cors-policy',
      definition: {
        nodes: [
          { id: 'in', type: 'listener' },
          { id: 'cors', type: 'cors' },
          { id: 'out', type: 'client' },
        ],
        edges: [
          { from: 'in.out', to: 'cors.in' },
          { from: 'cors.success', to: 'out.in' },
        ],
      },
    });
    assert.equal(unwired['valid'], false);
    assert.ok(
      (unwired['errors'] as string[]).some((e) => /preflight/.test(e)),
      JSON.stringify(unwired),
    );
    // Nothing was stored.
    assert.equal(h.gateway.runtime.config.policies.length, 2);

    const bad = await fails(writer, 'validate_policy', { policy: 'nodes: [' });
    assert.equal(bad.code, 'invalid_input');
  });

  test('mcp validate_supernode (write token): boundary rules are checked without saving', async () => {
    const good = await ok(writer, 'validate_supernode', {
      name: 'other',
      supernode: {
        nodes: [
          { id: 'input', type: 'input' },
          { id: 'output', type: 'output' },
        ],
        edges: [{ from: 'input.out', to: 'output.in' }],
      },
    });
    assert.equal(good['valid'], true, JSON.stringify(good));
    const bad = await ok(writer, 'validate_supernode', {
      name: 'broken',
      definition: { nodes: [{ id: 'output', type: 'output' }], edges: [] },
    });
    assert.equal(bad['valid'], false);
    assert.ok(
      (bad['errors'] as string[]).every((e) => e.startsWith('supernodes[1]')),
      JSON.stringify(bad),
    );
    assert.equal(h.gateway.runtime.config.supernodes.length, 1);
  });
});
