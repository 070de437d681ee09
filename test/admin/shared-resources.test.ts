import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getText, read, startAdmin } from './harness.js';

/** Route /sn → policy sn-policy → supernode instance `sec` (answer) whose inner node uses shared config `shared-mock`. */
const SHARED_YAML = `
routes:
  - { name: sn, match: { path: /sn }, policy: sn-policy }
supernodes:
  - name: answer
    description: answers from a shared config
    nodes:
      - { id: input, type: input }
      - { id: output, type: output }
      - { id: m, type: mocking, config_ref: shared-mock }
    edges:
      - { from: input.out, to: m.in }
      - { from: m.success, to: output.in }
plugin_configs:
  - { name: shared-mock, type: mocking, config: { response_example: from-shared, content_type: text/plain } }
policies:
  - name: sn-policy
    nodes:
      - { id: in, type: listener }
      - { id: sec, type: supernode, config: { name: answer } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: sec.in }
      - { from: sec.success, to: out.in }
`;

const supernode = (body: string) => ({
  description: 'replaced',
  nodes: [
    { id: 'input', type: 'input' },
    { id: 'output', type: 'output' },
    { id: 'm', type: 'mocking', config: { response_example: body, content_type: 'text/plain' } },
  ],
  edges: [
    { from: 'input.out', to: 'm.in' },
    { from: 'm.success', to: 'output.in' },
  ],
});

test('admin supernodes: GET list and one; unknown → 404', async () => {
  const h = await startAdmin({ gatewayYaml: SHARED_YAML });
  try {
    const list = await read(await h.call('GET', '/api/supernodes'));
    assert.equal(list.status, 200);
    assert.deepEqual(
      (list.body as { name: string }[]).map((s) => s.name),
      ['answer'],
    );
    const one = await h.call('GET', '/api/supernodes/answer');
    assert.equal(one.status, 200);
    assert.ok(one.headers.get('etag'));
    assert.equal(((await one.json()) as { description: string }).description, 'answers from a shared config');
    assert.equal((await h.call('GET', '/api/supernodes/nope')).status, 404);
  } finally {
    await h.stop();
  }
});

test('admin supernodes: PUT updates (200) live and creates (201); an invalid definition → 400', async () => {
  const h = await startAdmin({ gatewayYaml: SHARED_YAML });
  try {
    assert.deepEqual(await getText(`${h.data}/sn`), { status: 200, text: 'from-shared' });
    const updated = await read(await h.call('PUT', '/api/supernodes/answer', supernode('inline')));
    assert.deepEqual(updated, { status: 200, body: { status: 'updated' } });
    assert.deepEqual(await getText(`${h.data}/sn`), { status: 200, text: 'inline' });
    const created = await read(await h.call('PUT', '/api/supernodes/spare', supernode('spare')));
    assert.deepEqual(created, { status: 201, body: { status: 'created' } });
    const broken = supernode('x');
    broken.edges.pop();
    const rejected = await read(await h.call('PUT', '/api/supernodes/answer', broken));
    assert.equal(rejected.status, 400);
    assert.deepEqual(await getText(`${h.data}/sn`), { status: 200, text: 'inline' });
  } finally {
    await h.stop();
  }
});

test('admin supernodes: DELETE while an instance references it → 400; unreferenced → deleted', async () => {
  const h = await startAdmin({ gatewayYaml: SHARED_YAML });
  try {
    const blocked = await read(await h.call('DELETE', '/api/supernodes/answer'));
    assert.equal(blocked.status, 400);
    const b = blocked.body as { error: string; details: { path: string }[] };
    assert.match(b.error, /supernode 'answer' is still referenced by policy 'sn-policy' node 'sec'/);
    assert.deepEqual(
      b.details.map((d) => d.path),
      ['policies[0].nodes[1].config.name'],
    );
    assert.equal((await h.call('PUT', '/api/supernodes/spare', supernode('s'))).status, 201);
    assert.deepEqual(await read(await h.call('DELETE', '/api/supernodes/spare')), {
      status: 200,
      body: { status: 'deleted' },
    });
    assert.equal((await h.call('DELETE', '/api/supernodes/spare')).status, 404);
  } finally {
    await h.stop();
  }
});

test('admin plugin-configs: GET list/one, PUT update is live, PUT creates, type mismatch → 400', async () => {
  const h = await startAdmin({ gatewayYaml: SHARED_YAML });
  try {
    const list = await read(await h.call('GET', '/api/plugin-configs'));
    assert.deepEqual(
      (list.body as { name: string }[]).map((p) => p.name),
      ['shared-mock'],
    );
    assert.equal((await h.call('GET', '/api/plugin-configs/shared-mock')).status, 200);
    assert.equal((await h.call('GET', '/api/plugin-configs/nope')).status, 404);
    const updated = await h.call('PUT', '/api/plugin-configs/shared-mock', {
      type: 'mocking',
      config: { response_example: 'shared-v2', content_type: 'text/plain' },
    });
    assert.equal(updated.status, 200);
    assert.deepEqual(await getText(`${h.data}/sn`), { status: 200, text: 'shared-v2' });
    const created = await h.call('PUT', '/api/plugin-configs/spare', { type: 'echo', config: {} });
    assert.equal(created.status, 201);
    const mismatch = await read(
      await h.call('PUT', '/api/plugin-configs/shared-mock', { type: 'echo', config: {} }),
    );
    assert.equal(mismatch.status, 400);
    assert.match((mismatch.body as { error: string }).error, /config_ref 'shared-mock' is a 'echo' config/);
    const missingType = await read(await h.call('PUT', '/api/plugin-configs/x', { config: {} }));
    assert.equal(missingType.status, 400);
  } finally {
    await h.stop();
  }
});

test('admin plugin-configs: DELETE while referenced (inside a supernode) → 400; unreferenced → deleted', async () => {
  const h = await startAdmin({ gatewayYaml: SHARED_YAML });
  try {
    const blocked = await read(await h.call('DELETE', '/api/plugin-configs/shared-mock'));
    assert.equal(blocked.status, 400);
    assert.match(
      (blocked.body as { error: string }).error,
      /plugin_config 'shared-mock' is still referenced by supernode 'answer' node 'm'/,
    );
    assert.equal(
      (await h.call('PUT', '/api/plugin-configs/spare', { type: 'echo', config: {} })).status,
      201,
    );
    assert.deepEqual(await read(await h.call('DELETE', '/api/plugin-configs/spare')), {
      status: 200,
      body: { status: 'deleted' },
    });
    assert.equal((await h.call('DELETE', '/api/plugin-configs/spare')).status, 404);
  } finally {
    await h.stop();
  }
});

const STORES_YAML = `
routes: []
stores:
  - { name: cache, type: redis, url: "\${REDIS_URL:-redis://127.0.0.1:6379}", password: "\${REDIS_PASSWORD}" }
  - { name: spare, type: valkey, url: "redis://127.0.0.1:6380" }
plugin_configs:
  - { name: sessions, type: mocking, config: { response_example: x, session: { store: cache } } }
  - { name: counters, type: mocking, config: { response_example: x, store: cache } }
`;

test('admin stores: E2E-STORE-01 list raw placeholders; POST 201 then duplicate 409; GET one; PUT upserts', async () => {
  // A store URL must resolve when the configuration compiles; the API still stores and serves it raw.
  const env = { REDIS_PASSWORD: 'hunter2', NEW_URL: 'redis://127.0.0.1:6390' };
  const h = await startAdmin({ gatewayYaml: STORES_YAML, env });
  try {
    const list = await read(await h.call('GET', '/api/stores'));
    assert.equal(list.status, 200);
    const first = (list.body as { url: string; password: string }[])[0];
    assert.equal(first?.url, '${REDIS_URL:-redis://127.0.0.1:6379}');
    assert.equal(first?.password, '${REDIS_PASSWORD}');
    const store = { name: 'new', type: 'redis', url: '${NEW_URL}' };
    assert.equal((await h.call('POST', '/api/stores', store)).status, 201);
    const dup = await read(await h.call('POST', '/api/stores', store));
    assert.equal(dup.status, 409);
    const one = await read(await h.call('GET', '/api/stores/new'));
    assert.deepEqual(one, { status: 200, body: store });
    const put = await read(await h.call('PUT', '/api/stores/new', { type: 'valkey', url: 'redis://h:1' }));
    assert.deepEqual(put, { status: 200, body: { status: 'updated' } });
    const upsert = await read(
      await h.call('PUT', '/api/stores/other', { type: 'redis', url: 'redis://h:2' }),
    );
    assert.deepEqual(upsert, { status: 201, body: { status: 'created' } });
    const invalid = await read(
      await h.call('POST', '/api/stores', { name: 'bad', type: 'memcached', url: 'x' }),
    );
    assert.equal(invalid.status, 400);
    assert.equal((await h.call('GET', '/api/stores/nope')).status, 404);
  } finally {
    await h.stop();
  }
});

test('admin stores: E2E-STORE-02 DELETE of a store in use → 409 in_use with every referrer', async () => {
  const h = await startAdmin({ gatewayYaml: STORES_YAML });
  try {
    const { status, body } = await read(await h.call('DELETE', '/api/stores/cache'));
    assert.equal(status, 409);
    const b = body as { error: string; referrers: string[] };
    assert.equal(b.error, 'in_use');
    assert.deepEqual(b.referrers, ["plugin_config 'sessions'", "plugin_config 'counters'"]);
    assert.equal((await h.call('GET', '/api/stores/cache')).status, 200);
    assert.deepEqual(await read(await h.call('DELETE', '/api/stores/spare')), {
      status: 200,
      body: { status: 'deleted' },
    });
    assert.equal((await h.call('DELETE', '/api/stores/spare')).status, 404);
  } finally {
    await h.stop();
  }
});

test('admin consumers: list with credentials, POST 201/409, GET one, PUT upserts, DELETE', async () => {
  const h = await startAdmin({
    gatewayYaml:
      'routes: []\nconsumers:\n  - { name: alice, credentials: { key-auth: { key: "${ALICE_KEY}" } } }\n',
    env: { ALICE_KEY: 'alice-key' },
  });
  try {
    const list = await read(await h.call('GET', '/api/consumers'));
    assert.deepEqual(list, {
      status: 200,
      body: [{ name: 'alice', credentials: { 'key-auth': { key: '${ALICE_KEY}' } } }],
    });
    const bob = {
      name: 'bob',
      group: 'ops',
      credentials: { 'basic-auth': { username: 'bob', password: 'pw' } },
    };
    assert.equal((await h.call('POST', '/api/consumers', bob)).status, 201);
    assert.equal((await h.call('POST', '/api/consumers', bob)).status, 409);
    assert.deepEqual(await read(await h.call('GET', '/api/consumers/bob')), { status: 200, body: bob });
    assert.equal((await h.call('PUT', '/api/consumers/bob', { group: 'dev' })).status, 200);
    assert.equal((await h.call('PUT', '/api/consumers/carol', { group: 'dev' })).status, 201);
    assert.equal((await h.call('POST', '/api/consumers', { group: 'nameless' })).status, 400);
    assert.deepEqual(await read(await h.call('DELETE', '/api/consumers/bob')), {
      status: 200,
      body: { status: 'deleted' },
    });
    assert.equal((await h.call('GET', '/api/consumers/bob')).status, 404);
    assert.equal((await h.call('DELETE', '/api/consumers/bob')).status, 404);
  } finally {
    await h.stop();
  }
});
