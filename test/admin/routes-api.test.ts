import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getText, mockPolicy, read, startAdmin } from './harness.js';

test('admin routes: E2E-API-03 GET /api/routes lists the seeded routes', async () => {
  const h = await startAdmin();
  try {
    const { status, body } = await read(await h.call('GET', '/api/routes'));
    assert.equal(status, 200);
    assert.deepEqual(body, [{ name: 'hello', match: { path: '/hello' }, policy: 'hello-policy' }]);
  } finally {
    await h.stop();
  }
});

test('admin routes: E2E-API-05 POST creates (201), GET shows it and the next request is served by it', async () => {
  const h = await startAdmin();
  try {
    const route = { name: 'two', match: { path: '/two', methods: ['GET'] }, policy: 'hello-policy' };
    const res = await h.call('POST', '/api/routes', route);
    assert.equal(res.status, 201);
    assert.deepEqual(await res.json(), { status: 'created' });
    assert.equal(res.headers.get('location'), '/api/routes/two');
    const one = await h.call('GET', '/api/routes/two');
    assert.equal(one.status, 200);
    assert.deepEqual(await one.json(), route);
    assert.equal(one.headers.get('etag'), res.headers.get('etag'));
    const served = await getText(`${h.data}/two`);
    assert.deepEqual(served, { status: 200, text: 'hello' });
  } finally {
    await h.stop();
  }
});

test('admin routes: POST with an existing name → 409, table unchanged', async () => {
  const h = await startAdmin();
  try {
    const res = await h.call('POST', '/api/routes', {
      name: 'hello',
      match: { path: '/x' },
      policy: 'hello-policy',
    });
    assert.equal(res.status, 409);
    const body = (await res.json()) as { error: string };
    assert.match(body.error, /route 'hello' already exists/);
    const list = (await (await h.call('GET', '/api/routes')).json()) as unknown[];
    assert.equal(list.length, 1);
  } finally {
    await h.stop();
  }
});

test('admin routes: POST of an invalid route → 400 with details located in the config', async () => {
  const h = await startAdmin();
  try {
    const missing = await read(await h.call('POST', '/api/routes', { name: 'bad', policy: 'hello-policy' }));
    assert.equal(missing.status, 400);
    const body = missing.body as { error: string; details: { path: string; message: string }[] };
    assert.deepEqual(body.details, [{ path: 'routes[1].match', message: 'is required' }]);
    assert.match(body.error, /routes\[1\]\.match/);
    const unknownKey = await read(
      await h.call('POST', '/api/routes', { name: 'bad', match: {}, policy: 'hello-policy', prio: 1 }),
    );
    assert.equal(unknownKey.status, 400);
    const badPath = await read(
      await h.call('POST', '/api/routes', {
        name: 'bad',
        match: { path: 'no-slash' },
        policy: 'hello-policy',
      }),
    );
    assert.equal(badPath.status, 400);
    assert.equal((await read(await h.call('GET', '/api/routes/bad'))).status, 404);
  } finally {
    await h.stop();
  }
});

test('admin routes: E2E-API-08 a route naming an unknown policy is rejected and the table is unchanged', async () => {
  const h = await startAdmin();
  try {
    const { status, body } = await read(
      await h.call('POST', '/api/routes', { name: 'ghost', match: { path: '/ghost' }, policy: 'nope' }),
    );
    assert.equal(status, 400);
    const b = body as { error: string; details: { path: string; message: string }[] };
    assert.match(b.error, /unknown policy 'nope'/);
    assert.deepEqual(b.details, [
      { path: 'routes[1].policy', message: "route 'ghost': unknown policy 'nope'" },
    ]);
    const list = (await (await h.call('GET', '/api/routes')).json()) as { name: string }[];
    assert.deepEqual(
      list.map((r) => r.name),
      ['hello'],
    );
    assert.equal((await getText(`${h.data}/ghost`)).status, 404);
  } finally {
    await h.stop();
  }
});

test('admin routes: malformed JSON and non-object bodies → 400', async () => {
  const h = await startAdmin();
  try {
    for (const body of ['{"name":', '[1,2]', '"text"', 'null', '']) {
      const res = await h.call('POST', '/api/routes', body, { 'content-type': 'application/json' });
      assert.equal(res.status, 400, JSON.stringify(body));
      const json = (await res.json()) as { error: string };
      assert.equal(typeof json.error, 'string');
    }
  } finally {
    await h.stop();
  }
});

test('admin routes: E2E-API-06 PUT updates in place; the path name overrides the body name', async () => {
  const h = await startAdmin({
    gatewayYaml: `
routes:
  - { name: a, match: { path: /a }, policy: pa }
  - { name: b, match: { path: /b }, policy: pa }
policies:
  - ${JSON.stringify(mockPolicy('pa', 'A'))}
  - ${JSON.stringify(mockPolicy('pb', 'B'))}
`,
  });
  try {
    const res = await h.call('PUT', '/api/routes/a', {
      name: 'renamed',
      match: { path: '/a' },
      policy: 'pb',
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'updated' });
    const list = (await (await h.call('GET', '/api/routes')).json()) as { name: string; policy: string }[];
    assert.deepEqual(
      list.map((r) => `${r.name}:${r.policy}`),
      ['a:pb', 'b:pa'],
      'same place in the table, path name kept',
    );
    assert.deepEqual(await getText(`${h.data}/a`), { status: 200, text: 'B' });
  } finally {
    await h.stop();
  }
});

test('admin routes: F21 PUT upserts (201, appended, served), and a recompile failure → 400 with the old route serving', async () => {
  const h = await startAdmin();
  try {
    const created = await h.call('PUT', '/api/routes/nope', {
      match: { path: '/n' },
      policy: 'hello-policy',
    });
    assert.equal(created.status, 201);
    assert.deepEqual(await created.json(), { status: 'created' });
    const etag = created.headers.get('etag');
    assert.ok(etag);
    const list = (await (await h.call('GET', '/api/routes')).json()) as { name: string }[];
    assert.equal(list.at(-1)?.name, 'nope', 'a created route goes last, as with POST');
    assert.equal((await getText(`${h.data}/n`)).status, 200);
    const again = await h.call(
      'PUT',
      '/api/routes/nope',
      { match: { path: '/n2' }, policy: 'hello-policy' },
      {
        'if-match': etag,
      },
    );
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), { status: 'updated' });
    // If-Match names a version: a missing route has none, so a conditional create is refused.
    const conditional = await read(
      await h.call(
        'PUT',
        '/api/routes/other',
        { match: { path: '/o' }, policy: 'hello-policy' },
        {
          'if-match': '*',
        },
      ),
    );
    assert.equal(conditional.status, 412);
    assert.equal((await read(await h.call('GET', '/api/routes/other'))).status, 404);
    const broken = await read(
      await h.call('PUT', '/api/routes/hello', { match: { path: '/hello' }, policy: 'x' }),
    );
    assert.equal(broken.status, 400);
    assert.match((broken.body as { error: string }).error, /unknown policy 'x'/);
    const brokenNew = await read(
      await h.call('PUT', '/api/routes/ghost', { match: { path: '/g' }, policy: 'x' }),
    );
    assert.equal(brokenNew.status, 400);
    assert.equal((await read(await h.call('GET', '/api/routes/ghost'))).status, 404);
    assert.deepEqual(await getText(`${h.data}/hello`), { status: 200, text: 'hello' });
  } finally {
    await h.stop();
  }
});

test('admin routes: E2E-API-07 DELETE removes the route; its path then 404s; unknown → 404', async () => {
  const h = await startAdmin();
  try {
    assert.equal((await getText(`${h.data}/hello`)).status, 200);
    const res = await read(await h.call('DELETE', '/api/routes/hello'));
    assert.deepEqual(res, { status: 200, body: { status: 'deleted' } });
    const after = await getText(`${h.data}/hello`);
    assert.equal(after.status, 404);
    assert.deepEqual(JSON.parse(after.text), { error: 'not_found', message: 'No route matched' });
    assert.deepEqual(await read(await h.call('DELETE', '/api/routes/hello')), {
      status: 404,
      body: { error: 'not_found' },
    });
    assert.deepEqual(await read(await h.call('GET', '/api/routes/hello')), {
      status: 404,
      body: { error: 'not_found' },
    });
  } finally {
    await h.stop();
  }
});

test('admin routes: names with reserved URL characters work when encoded', async () => {
  const h = await startAdmin();
  try {
    const name = 'team a/b ü';
    const created = await h.call('POST', '/api/routes', {
      name,
      match: { path: '/enc' },
      policy: 'hello-policy',
    });
    assert.equal(created.status, 201);
    const one = await read(await h.call('GET', `/api/routes/${encodeURIComponent(name)}`));
    assert.equal(one.status, 200);
    assert.equal((one.body as { name: string }).name, name);
    assert.equal((await h.call('DELETE', `/api/routes/${encodeURIComponent(name)}`)).status, 200);
  } finally {
    await h.stop();
  }
});

test('admin routes: GET one returns an ETag; PUT and DELETE with a stale If-Match → 412', async () => {
  const h = await startAdmin();
  try {
    const first = await h.call('GET', '/api/routes/hello');
    const etag = first.headers.get('etag');
    assert.ok(etag !== null && /^"[^"]+"$/.test(etag));
    const put = await h.call(
      'PUT',
      '/api/routes/hello',
      { match: { path: '/hello', methods: ['GET'] }, policy: 'hello-policy' },
      { 'if-match': etag },
    );
    assert.equal(put.status, 200);
    const fresh = put.headers.get('etag');
    assert.notEqual(fresh, etag);
    assert.equal((await h.call('GET', '/api/routes/hello')).headers.get('etag'), fresh);

    const stale = await read(
      await h.call(
        'PUT',
        '/api/routes/hello',
        { match: { path: '/zzz' }, policy: 'hello-policy' },
        { 'if-match': etag },
      ),
    );
    assert.equal(stale.status, 412);
    assert.equal((stale.body as { error: string }).error, 'precondition_failed');
    assert.equal((await h.call('DELETE', '/api/routes/hello', undefined, { 'if-match': etag })).status, 412);
    assert.equal(
      (await h.call('DELETE', '/api/routes/hello', undefined, { 'if-match': 'W/' + fresh })).status,
      412,
    );
    assert.equal((await getText(`${h.data}/hello`)).status, 200, 'nothing changed');
    const star = await h.call('DELETE', '/api/routes/hello', undefined, { 'if-match': `"nope", ${fresh}` });
    assert.equal(star.status, 200);
  } finally {
    await h.stop();
  }
});

test('admin routes: concurrent writers never lose each other’s change', async () => {
  const h = await startAdmin();
  try {
    const writes = Array.from({ length: 25 }, (_, i) =>
      h.call('POST', '/api/routes', { name: `r${i}`, match: { path: `/r${i}` }, policy: 'hello-policy' }),
    );
    const statuses = await Promise.all(writes.map(async (w) => (await w).status));
    assert.deepEqual(new Set(statuses), new Set([201]));
    const list = (await (await h.call('GET', '/api/routes')).json()) as unknown[];
    assert.equal(list.length, 26);
    const same = await Promise.all(
      Array.from({ length: 5 }, () =>
        h.call('POST', '/api/routes', { name: 'dup', match: { path: '/dup' }, policy: 'hello-policy' }),
      ),
    );
    assert.deepEqual(same.map((r) => r.status).sort(), [201, 409, 409, 409, 409]);
  } finally {
    await h.stop();
  }
});
