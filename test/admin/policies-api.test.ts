import { test } from 'node:test';
import assert from 'node:assert/strict';
import { registry } from '../../src/plugins/index.js';
import { getText, mockPolicy, read, startAdmin } from './harness.js';

test('admin policies: GET list and one (with ETag); unknown → 404', async () => {
  const h = await startAdmin();
  try {
    const list = await read(await h.call('GET', '/api/policies'));
    assert.equal(list.status, 200);
    assert.deepEqual(
      (list.body as { name: string }[]).map((p) => p.name),
      ['hello-policy'],
    );
    const one = await h.call('GET', '/api/policies/hello-policy');
    assert.equal(one.status, 200);
    assert.ok(one.headers.get('etag'));
    assert.equal(((await one.json()) as { nodes: unknown[] }).nodes.length, 3);
    assert.deepEqual(await read(await h.call('GET', '/api/policies/nope')), {
      status: 404,
      body: { error: 'not_found' },
    });
  } finally {
    await h.stop();
  }
});

test('admin policies: PUT upserts — 201 created, then 200 updated and served on the next request', async () => {
  const h = await startAdmin();
  try {
    const created = await h.call('PUT', '/api/policies/other', mockPolicy('ignored', 'first'));
    assert.equal(created.status, 201);
    assert.deepEqual(await created.json(), { status: 'created' });
    assert.equal(
      (await h.call('POST', '/api/routes', { name: 'o', match: { path: '/o' }, policy: 'other' })).status,
      201,
    );
    assert.deepEqual(await getText(`${h.data}/o`), { status: 200, text: 'first' });
    const updated = await h.call('PUT', '/api/policies/other', mockPolicy('other', 'second'));
    assert.equal(updated.status, 200);
    assert.deepEqual(await updated.json(), { status: 'updated' });
    assert.deepEqual(await getText(`${h.data}/o`), { status: 200, text: 'second' });
  } finally {
    await h.stop();
  }
});

test('admin policies: E2E-API-09 an edge to a missing node is rejected (400) and the old policy keeps serving', async () => {
  const h = await startAdmin();
  try {
    const broken = mockPolicy('hello-policy', 'broken');
    broken.edges[1] = { from: 'm.success', to: 'ghost.in' };
    const { status, body } = await read(await h.call('PUT', '/api/policies/hello-policy', broken));
    assert.equal(status, 400);
    const b = body as { error: string; details: { path: string; message: string }[] };
    assert.match(b.error, /unknown node 'ghost'/);
    assert.ok(b.details.length >= 1);
    assert.ok(b.details.every((d) => d.path.startsWith('policies[0]')));
    assert.deepEqual(await getText(`${h.data}/hello`), { status: 200, text: 'hello' });
  } finally {
    await h.stop();
  }
});

test('admin policies: E2E-LOOP-02 an invalid policy change is rejected and the old config keeps serving', async () => {
  const h = await startAdmin();
  try {
    const good = mockPolicy('hello-policy', 'v2');
    assert.equal((await h.call('PUT', '/api/policies/hello-policy', good)).status, 200);
    assert.deepEqual(await getText(`${h.data}/hello`), { status: 200, text: 'v2' });
    const bad = mockPolicy('hello-policy', 'v3');
    bad.nodes[1] = { id: 'm', type: 'no-such-type', config: {} as never };
    const rejected = await read(await h.call('PUT', '/api/policies/hello-policy', bad));
    assert.equal(rejected.status, 400);
    assert.match((rejected.body as { error: string }).error, /Unknown plugin type: no-such-type/);
    assert.deepEqual(await getText(`${h.data}/hello`), { status: 200, text: 'v2' });
    const stored = (await (await h.call('GET', '/api/policies/hello-policy')).json()) as typeof good;
    assert.equal(stored.nodes[1]?.type, 'mocking');
  } finally {
    await h.stop();
  }
});

test('admin policies: E2E-API-13 a mandatory outcome port left unwired is rejected with "must be wired — add an edge from"', async (t) => {
  // cors (preflight) is a later issue; any registered type with an outcome port proves the rule.
  const type = registry.has('cors')
    ? 'cors'
    : [...registry.values()].find((d) => Object.values(d.outputs).some((p) => p.kind === 'outcome'))?.type;
  if (type === undefined) {
    t.skip('no registered node type declares an outcome port yet (cors arrives with the security plugins)');
    return;
  }
  const h = await startAdmin();
  try {
    const policy = {
      name: 'outcome',
      nodes: [
        { id: 'in', type: 'listener' },
        { id: 'x', type, config: {} },
        { id: 'out', type: 'client' },
      ],
      edges: [
        { from: 'in.out', to: 'x.in' },
        { from: 'x.success', to: 'out.in' },
      ],
    };
    const { status, body } = await read(await h.call('PUT', '/api/policies/outcome', policy));
    assert.equal(status, 400);
    assert.match((body as { error: string }).error, /must be wired — add an edge from 'x\./);
  } finally {
    await h.stop();
  }
});

test('admin policies: DELETE while a route references it → 400 naming the route; unreferenced → deleted', async () => {
  const h = await startAdmin();
  try {
    const blocked = await read(await h.call('DELETE', '/api/policies/hello-policy'));
    assert.equal(blocked.status, 400);
    const b = blocked.body as { error: string; details: { path: string; message: string }[] };
    assert.match(b.error, /policy 'hello-policy' is still referenced by route 'hello'/);
    assert.deepEqual(b.details, [
      { path: 'routes[0].policy', message: "policy 'hello-policy' is referenced by route 'hello'" },
    ]);
    assert.equal((await h.call('DELETE', '/api/routes/hello')).status, 200);
    assert.deepEqual(await read(await h.call('DELETE', '/api/policies/hello-policy')), {
      status: 200,
      body: { status: 'deleted' },
    });
    assert.deepEqual(await read(await h.call('DELETE', '/api/policies/hello-policy')), {
      status: 404,
      body: { error: 'not_found' },
    });
  } finally {
    await h.stop();
  }
});

test('admin policies: PUT with a schema violation → 400 with details', async () => {
  const h = await startAdmin();
  try {
    const { status, body } = await read(
      await h.call('PUT', '/api/policies/p2', { nodes: [{ id: 'in' }], edges: 'nope' }),
    );
    assert.equal(status, 400);
    const paths = (body as { details: { path: string }[] }).details.map((d) => d.path).sort();
    assert.deepEqual(paths, ['policies[1].edges', 'policies[1].nodes[0].type']);
  } finally {
    await h.stop();
  }
});

test('admin validate: a valid policy → valid true, nothing committed', async () => {
  const h = await startAdmin();
  try {
    const { status, body } = await read(
      await h.call('POST', '/api/policies/validate', mockPolicy('draft', 'd')),
    );
    assert.equal(status, 200);
    assert.deepEqual(body, {
      valid: true,
      errors: [],
      warnings: [],
      cache_pairs: [],
      buffering: [],
      request_buffering: [],
      details: [],
    });
    assert.equal((await h.call('GET', '/api/policies/draft')).status, 404);
    const replacing = await read(
      await h.call('POST', '/api/policies/validate', mockPolicy('hello-policy', 'changed')),
    );
    assert.equal((replacing.body as { valid: boolean }).valid, true);
    assert.deepEqual(await getText(`${h.data}/hello`), { status: 200, text: 'hello' });
  } finally {
    await h.stop();
  }
});

test('admin validate: an invalid policy → 200 valid false with every error as a string', async () => {
  const h = await startAdmin();
  try {
    const policy = mockPolicy('draft', 'd');
    policy.edges = [{ from: 'in.out', to: 'gone.in' }];
    const { status, body } = await read(await h.call('POST', '/api/policies/validate', policy));
    assert.equal(status, 200);
    const b = body as { valid: boolean; errors: string[]; details: unknown[]; buffering: unknown[] };
    assert.equal(b.valid, false);
    assert.ok(b.errors.some((e) => e.includes("unknown node 'gone'")));
    assert.ok(b.errors.some((e) => e.includes('must be wired')));
    assert.equal(b.details.length, b.errors.length);
    const shape = await read(await h.call('POST', '/api/policies/validate', { name: 'x', nodes: 'no' }));
    assert.equal(shape.status, 200);
    assert.deepEqual((shape.body as { errors: string[] }).errors, ['policy.nodes: must be array']);
    assert.equal((await h.call('POST', '/api/policies/validate', '{oops')).status, 400);
  } finally {
    await h.stop();
  }
});

test('admin validate: E2E-STREAM-02 buffering names the upstream and the node that reads its body', async (t) => {
  if (!registry.has('upstream')) {
    t.skip('the upstream node type is not registered in this tree');
    return;
  }
  const h = await startAdmin();
  try {
    const policy = {
      name: 'buffered',
      nodes: [
        { id: 'in', type: 'listener' },
        { id: 'up', type: 'upstream', config: { targets: [{ host: '127.0.0.1', port: 9 }] } },
        { id: 'rw', type: 'echo', config: { after_body: '!' } },
        { id: 'out', type: 'client' },
      ],
      edges: [
        { from: 'in.out', to: 'up.in' },
        { from: 'up.success', to: 'rw.in' },
        { from: 'rw.success', to: 'out.in' },
      ],
    };
    const { body } = await read(await h.call('POST', '/api/policies/validate', policy));
    const b = body as { valid: boolean; buffering: unknown[] };
    assert.equal(b.valid, true, JSON.stringify(body));
    assert.deepEqual(b.buffering, [{ upstream: 'up', blocked_by: 'rw' }]);
  } finally {
    await h.stop();
  }
});
