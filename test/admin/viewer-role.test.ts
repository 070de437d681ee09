import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BASE_YAML, basic, read, startAdmin, type AdminHarness } from './harness.js';

const VIEWER = basic('viewer', 'Viewer-Pw-123456');

const YAML = `${BASE_YAML}
stores:
  - { name: main, type: redis, url: 'redis://:URL-REDIS-PASSWORD@127.0.0.1:1', password: STORE-PASSWORD-LITERAL }
consumers:
  - name: alice
    credentials:
      key-auth: { key: ALICE-KEY-LITERAL }
`;

describe('admin roles: a viewer reads everything with secrets masked and writes nothing', () => {
  let h: AdminHarness;
  before(async () => {
    h = await startAdmin({
      gatewayYaml: YAML,
      admin: 'users: [{ username: viewer, password: Viewer-Pw-123456, role: viewer }]',
    });
  });
  after(() => h.stop());

  const asViewer = (method: string, path: string, body?: unknown) =>
    fetch(h.url + path, {
      method,
      headers: { authorization: VIEWER, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  test('admin roles: the viewer sees routes and stores, with the store passwords masked', async () => {
    const routes = await read(await asViewer('GET', '/api/routes'));
    assert.equal(routes.status, 200);
    assert.match(JSON.stringify(routes.body), /"hello"/);
    const stores = JSON.stringify((await read(await asViewer('GET', '/api/stores'))).body);
    assert.doesNotMatch(stores, /URL-REDIS-PASSWORD|STORE-PASSWORD-LITERAL/);
    assert.match(stores, /127\.0\.0\.1/);
    const consumers = JSON.stringify((await read(await asViewer('GET', '/api/consumers'))).body);
    assert.match(consumers, /alice/);
    assert.doesNotMatch(consumers, /ALICE-KEY-LITERAL/);
  });

  test('admin roles: the viewer export is YAML with secrets masked; the admin export keeps them', async () => {
    const viewer = await asViewer('GET', '/api/config/export');
    assert.equal(viewer.status, 200);
    const text = await viewer.text();
    assert.match(text, /routes:/);
    assert.doesNotMatch(text, /URL-REDIS-PASSWORD|STORE-PASSWORD-LITERAL|ALICE-KEY-LITERAL/);
    const admin = await (await h.call('GET', '/api/config/export')).text();
    assert.match(admin, /STORE-PASSWORD-LITERAL/);
  });

  test('admin roles: every write by the viewer is 403 and changes nothing', async () => {
    const before = await (await h.call('GET', '/api/config/export')).text();
    for (const [method, path, body] of [
      ['POST', '/api/routes', { name: 'x', match: { path: '/x' }, policy: 'hello-policy' }],
      ['PUT', '/api/routes/hello', { name: 'hello', match: { path: '/changed' }, policy: 'hello-policy' }],
      ['DELETE', '/api/routes/hello', undefined],
      ['POST', '/api/config/reload', undefined],
    ] as const) {
      const res = await read(await asViewer(method, path, body));
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.equal((res.body as { error: string }).error, 'forbidden');
    }
    assert.equal(await (await h.call('GET', '/api/config/export')).text(), before);
    assert.equal(
      (await h.call('POST', '/api/routes', { name: 'y', match: { path: '/y' }, policy: 'hello-policy' }))
        .status,
      201,
    );
  });

  test('admin roles: an unknown role is a load error naming the key', async () => {
    await assert.rejects(
      startAdmin({ admin: 'users: [{ username: v, password: Viewer-Pw-123456, role: reader }]' }),
      /admin\.users(\[0\]|\/0|\.0)\.role/,
    );
  });
});
