import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { BASE_YAML, mockPolicy } from '../admin/harness.js';
import { fails, ok, startMcp, WRITE_TOKEN } from './harness.js';

const body = async (url: string): Promise<{ status: number; text: string }> => {
  const res = await fetch(url);
  return { status: res.status, text: await res.text() };
};

test('mcp put_route/put_policy: dry_run changes nothing, the real write routes traffic at once', async () => {
  const h = await startMcp({ onDisk: true });
  try {
    const client = await h.connect(WRITE_TOKEN);
    const before = readFileSync(h.file as string, 'utf8');
    const { name: _n, ...policy } = mockPolicy('orders-policy', 'orders!');

    const dryPolicy = await ok(client, 'put_policy', {
      name: 'orders-policy',
      definition: policy,
      dry_run: true,
    });
    assert.deepEqual(dryPolicy, {
      applied: false,
      dry_run: true,
      changed: ['policy:orders-policy'],
      warnings: [],
      created: true,
    });
    assert.equal(h.gateway.runtime.config.policies.length, 1);
    assert.equal(readFileSync(h.file as string, 'utf8'), before);

    const applied = await ok(client, 'put_policy', { name: 'orders-policy', definition: policy });
    assert.equal(applied['applied'], true);
    const route = { match: { path: '/orders/*' }, policy: 'orders-policy' };
    await ok(client, 'put_route', { name: 'orders', definition: route, dry_run: true });
    assert.equal((await body(`${h.data}/orders/1`)).status, 404);

    // A YAML string works as well as an object.
    await ok(client, 'put_route', {
      name: 'orders',
      definition: 'match: { path: /orders/* }\npolicy: orders-policy\n',
    });
    assert.deepEqual(await body(`${h.data}/orders/1`), { status: 200, text: 'orders!' });
    // Saved like an Admin API write (config.persist defaults to true).
    assert.match(readFileSync(h.file as string, 'utf8'), /name: orders\b/);
    assert.equal((await ok(client, 'get_route', { name: 'orders' }))['policy'], 'orders-policy');

    const replaced = await ok(client, 'put_policy', {
      definition: { ...mockPolicy('orders-policy', 'orders v2') },
    });
    assert.equal(replaced['created'], false);
    assert.deepEqual(await body(`${h.data}/orders/1`), { status: 200, text: 'orders v2' });

    await ok(client, 'delete_route', { name: 'orders', dry_run: true });
    assert.equal((await body(`${h.data}/orders/1`)).status, 200);
    await ok(client, 'delete_route', { name: 'orders' });
    assert.equal((await body(`${h.data}/orders/1`)).status, 404);
    await ok(client, 'delete_policy', { name: 'orders-policy' });
    assert.deepEqual(
      h.gateway.runtime.config.policies.map((p) => p.name),
      ['hello-policy'],
    );
  } finally {
    await h.stop();
  }
});

test('mcp put_policy: compile errors are invalid_config with config paths, and the old config keeps serving', async () => {
  const h = await startMcp();
  try {
    const client = await h.connect(WRITE_TOKEN);
    const broken = {
      nodes: [
        { id: 'in', type: 'listener' },
        { id: 'cors', type: 'cors' },
        { id: 'm', type: 'mocking', config: { response_status: 'not-a-number' } },
        { id: 'out', type: 'client' },
      ],
      edges: [
        { from: 'in.out', to: 'cors.in' },
        { from: 'cors.success', to: 'm.in' },
        { from: 'm.success', to: 'out.in' },
      ],
    };
    for (const dry_run of [true, false]) {
      const error = await fails(client, 'put_policy', { name: 'hello-policy', definition: broken, dry_run });
      assert.equal(error.code, 'invalid_config');
      assert.ok(
        error.errors?.some((e) => e.startsWith('policies[0]') && /preflight/.test(e)),
        JSON.stringify(error.errors),
      );
      assert.ok(
        error.errors?.some((e) => e.includes('response_status')),
        JSON.stringify(error.errors),
      );
      assert.match(error.hint ?? '', /get_node_type/);
    }
    assert.deepEqual(await body(`${h.data}/hello`), { status: 200, text: 'hello' });

    const dangling = await fails(client, 'put_route', {
      name: 'r',
      definition: { match: { path: '/r' }, policy: 'nope' },
    });
    assert.equal(dangling.code, 'invalid_config');
    assert.ok(
      dangling.errors?.some((e) => e.startsWith('routes[1].policy')),
      JSON.stringify(dangling),
    );

    const missing = await fails(client, 'put_route', {
      definition: { match: { path: '/r' }, policy: 'hello-policy' },
    });
    assert.equal(missing.code, 'invalid_input');
  } finally {
    await h.stop();
  }
});

test('mcp delete_*: unknown names are not_found; referenced items are refused with their referrers', async () => {
  const h = await startMcp({
    gatewayYaml: `${BASE_YAML}
stores:
  - { name: main, type: redis, url: "redis://127.0.0.1:1" }
plugin_configs:
  - { name: limits, type: limit-count, config: { count: 5, time_window: 60, policy: redis, store: main } }
`,
  });
  try {
    const client = await h.connect(WRITE_TOKEN);
    for (const tool of [
      'delete_route',
      'delete_policy',
      'delete_supernode',
      'delete_plugin_config',
      'delete_store',
    ]) {
      assert.equal((await fails(client, tool, { name: 'ghost' })).code, 'not_found', tool);
    }
    const policy = await fails(client, 'delete_policy', { name: 'hello-policy' });
    assert.equal(policy.code, 'invalid_config');
    assert.ok(
      policy.errors?.some((e) => e.includes("route 'hello'")),
      JSON.stringify(policy),
    );
    const store = await fails(client, 'delete_store', { name: 'main', dry_run: true });
    assert.equal(store.code, 'invalid_config');
    assert.match(store.message, /plugin_config 'limits'/);
    assert.equal(h.gateway.runtime.config.stores.length, 1);
  } finally {
    await h.stop();
  }
});

test('mcp put_store/put_plugin_config/put_supernode: create, replace and delete; redacted secrets survive a round trip', async () => {
  const h = await startMcp();
  try {
    const client = await h.connect(WRITE_TOKEN);
    await ok(client, 'put_store', {
      name: 'cache',
      definition: { type: 'redis', url: 'redis://127.0.0.1:1', password: 'store-secret-1' },
    });
    const shown = await ok(client, 'get_store', { name: 'cache' });
    assert.equal(shown['password'], '<redacted>');
    // The agent sends back what it read, with one change: the stored password is kept.
    const { referenced_by: _r, ...edited } = shown;
    await ok(client, 'put_store', { name: 'cache', definition: { ...edited, key_prefix: 'mcp' } });
    const stored = h.gateway.runtime.config.stores.find((s) => s.name === 'cache') as unknown as Record<
      string,
      unknown
    >;
    assert.equal(stored['password'], 'store-secret-1');
    assert.equal(stored['key_prefix'], 'mcp');
    const orphan = await fails(client, 'put_store', {
      name: 'other',
      definition: { type: 'redis', url: 'redis://127.0.0.1:1', password: '<redacted>' },
    });
    assert.equal(orphan.code, 'invalid_input');

    await ok(client, 'put_plugin_config', {
      name: 'greeting',
      definition: {
        type: 'mocking',
        config: { response_example: 'from shared', content_type: 'text/plain' },
      },
    });
    await ok(client, 'put_supernode', {
      name: 'greeter',
      definition: {
        nodes: [
          { id: 'input', type: 'input' },
          { id: 'output', type: 'output' },
          { id: 'm', type: 'mocking', config_ref: 'greeting' },
        ],
        edges: [
          { from: 'input.out', to: 'm.in' },
          { from: 'm.success', to: 'output.in' },
        ],
      },
    });
    await ok(client, 'put_policy', {
      name: 'hello-policy',
      definition: {
        nodes: [
          { id: 'in', type: 'listener' },
          { id: 'g', type: 'supernode', config: { name: 'greeter' } },
          { id: 'out', type: 'client' },
        ],
        edges: [
          { from: 'in.out', to: 'g.in' },
          { from: 'g.success', to: 'out.in' },
        ],
      },
    });
    assert.deepEqual(await body(`${h.data}/hello`), { status: 200, text: 'from shared' });
    const wrongType = await fails(client, 'put_plugin_config', {
      name: 'greeting',
      definition: { type: 'cors', config: {} },
    });
    assert.equal(wrongType.code, 'invalid_config');
    assert.equal((await fails(client, 'delete_supernode', { name: 'greeter' })).code, 'invalid_config');

    await ok(client, 'put_policy', { definition: mockPolicy('hello-policy', 'hello again') });
    await ok(client, 'delete_supernode', { name: 'greeter' });
    await ok(client, 'delete_plugin_config', { name: 'greeting' });
    await ok(client, 'delete_store', { name: 'cache' });
    const config = h.gateway.runtime.config;
    assert.deepEqual(
      [config.stores.length, config.plugin_configs.length, config.supernodes.length],
      [0, 0, 0],
    );
    assert.deepEqual(await body(`${h.data}/hello`), { status: 200, text: 'hello again' });
  } finally {
    await h.stop();
  }
});

test('mcp reload_config: refuses to drop unsaved live changes unless discard_unsaved', async () => {
  const h = await startMcp({ onDisk: true, system: 'config: { persist: false, watch: false }' });
  try {
    const client = await h.connect(WRITE_TOKEN);
    assert.deepEqual((await ok(client, 'reload_config'))['discarded'], []);
    await ok(client, 'put_policy', { definition: mockPolicy('hello-policy', 'in memory only') });
    assert.equal((await body(`${h.data}/hello`)).text, 'in memory only');

    const refused = await fails(client, 'reload_config');
    assert.equal(refused.code, 'unsaved_changes');
    assert.deepEqual(refused.errors, ["policy 'hello-policy' differs from the file"]);
    assert.equal((await body(`${h.data}/hello`)).text, 'in memory only');

    const reloaded = await ok(client, 'reload_config', { discard_unsaved: true });
    assert.equal(reloaded['status'], 'reloaded');
    assert.deepEqual(reloaded['discarded'], ["policy 'hello-policy' differs from the file"]);
    assert.equal((await body(`${h.data}/hello`)).text, 'hello');
  } finally {
    await h.stop();
  }
});

test('mcp purge_cache: empties a local cache namespace; unknown ids are not_found', async () => {
  const h = await startMcp({
    gatewayYaml: `
routes:
  - { name: items, match: { path: /items/* }, policy: cached }
policies:
  - name: cached
    nodes:
      - { id: in, type: listener }
      - { id: lookup, type: proxy-cache, config: { phase: lookup, id: items, policy: local } }
      - { id: m, type: mocking, config: { response_example: item, content_type: text/plain } }
      - { id: store, type: proxy-cache, config: { phase: store, id: items, policy: local } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: lookup.in }
      - { from: lookup.hit, to: out.in }
      - { from: lookup.success, to: m.in }
      - { from: m.success, to: store.in }
      - { from: store.success, to: out.in }
      - { from: store.hit, to: out.in }
`,
  });
  try {
    const client = await h.connect(WRITE_TOKEN);
    const status = async () => (await fetch(`${h.data}/items/1`)).headers.get('switchyard-cache-status');
    assert.equal(await status(), 'MISS');
    assert.equal(await status(), 'HIT');

    assert.deepEqual(await ok(client, 'purge_cache', { id: 'items', dry_run: true }), {
      id: 'items',
      dry_run: true,
      backends: [{ backend: 'local' }],
    });
    assert.equal(await status(), 'HIT');
    const purged = await ok(client, 'purge_cache', { id: 'items' });
    assert.deepEqual(purged, { id: 'items', purged: [{ backend: 'local', removed: 1 }] });
    assert.equal(await status(), 'MISS');

    assert.equal((await fails(client, 'purge_cache', { id: 'nope' })).code, 'not_found');
  } finally {
    await h.stop();
  }
});
