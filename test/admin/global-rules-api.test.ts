/**
 * /api/global-rules (docs/admin-api.md, docs/global-rules.md): CRUD through
 * the same validate → compile → persist → swap path as every resource, live on
 * the data plane at once, kept in gateway.yaml as written, read-only for
 * viewers; a supernode still used by a rule cannot be deleted.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { parse } from 'yaml';
import { BASE_YAML, basic, read, startAdmin, type AdminHarness } from './harness.js';

const YAML = `${BASE_YAML}
supernodes:
  - name: tag
    params:
      value: { type: string, default: default-tag }
    nodes:
      - { id: input, type: input }
      - { id: deny, type: mocking, config: { response_example: 'blocked {{params.value}}', response_status: 403, with_mock_header: false } }
      - { id: output, type: output }
      - { id: gate, type: condition, config: { conditions: [['http_x_block', '==', 'yes']] } }
      - { id: reject, type: client }
    edges:
      - { from: input.out, to: gate.in }
      - { from: gate.true, to: deny.in }
      - { from: gate.false, to: output.in }
      - { from: deny.success, to: reject.in }
`;

const VIEWER = basic('viewer', 'Viewer-Pw-123456');

describe('admin global rules', () => {
  let h: AdminHarness;
  before(async () => {
    h = await startAdmin({
      gatewayYaml: YAML,
      onDisk: true,
      admin: 'users: [{ username: viewer, password: Viewer-Pw-123456, role: viewer }]',
    });
  });
  after(() => h.stop());

  test('admin global rules: POST adds a rule that is live on every route at once, and is saved as written', async () => {
    assert.equal((await fetch(`${h.data}/hello`, { headers: { 'x-block': 'yes' } })).status, 200);
    const created = await h.call('POST', '/api/global-rules', {
      name: 'blocker',
      supernode: 'tag',
      params: { value: 'by-rule' },
    });
    assert.equal(created.status, 201, await created.clone().text());
    assert.equal(created.headers.get('location'), '/api/global-rules/blocker');
    const blocked = await fetch(`${h.data}/hello`, { headers: { 'x-block': 'yes' } });
    assert.equal(blocked.status, 403);
    assert.equal(await blocked.text(), 'blocked by-rule');
    assert.equal(await (await fetch(`${h.data}/hello`)).text(), 'hello');

    const saved = parse(readFileSync(h.file as string, 'utf8')) as { global_rules: unknown[] };
    assert.deepEqual(saved.global_rules, [
      { name: 'blocker', supernode: 'tag', params: { value: 'by-rule' } },
    ]);
    const list = await read(await h.call('GET', '/api/global-rules'));
    assert.deepEqual(list.body, [{ name: 'blocker', supernode: 'tag', params: { value: 'by-rule' } }]);
    const duplicate = await h.call('POST', '/api/global-rules', { name: 'blocker', supernode: 'tag' });
    assert.equal(duplicate.status, 409);
  });

  test('admin global rules: PUT replaces a rule (params default applies) and GET one has an ETag', async () => {
    const put = await h.call('PUT', '/api/global-rules/blocker', { supernode: 'tag' });
    assert.equal(put.status, 200);
    const one = await h.call('GET', '/api/global-rules/blocker');
    assert.ok(one.headers.get('etag'));
    assert.deepEqual(await one.json(), { name: 'blocker', supernode: 'tag' });
    const blocked = await fetch(`${h.data}/hello`, { headers: { 'x-block': 'yes' } });
    assert.equal(await blocked.text(), 'blocked default-tag');
  });

  test('admin global rules: an unknown supernode or undeclared param → 400 naming the key path; nothing changes', async () => {
    const unknown = await read(await h.call('PUT', '/api/global-rules/blocker', { supernode: 'tga' }));
    assert.equal(unknown.status, 400);
    const paths = (unknown.body as { details: { path: string }[] }).details.map((d) => d.path);
    assert.deepEqual(paths, ['global_rules[0].supernode']);
    const param = await read(
      await h.call('PUT', '/api/global-rules/blocker', { supernode: 'tag', params: { vaule: 'x' } }),
    );
    assert.equal(param.status, 400);
    assert.deepEqual(
      (param.body as { details: { path: string }[] }).details.map((d) => d.path),
      ['global_rules[0].params.vaule'],
    );
    const missing = await read(await h.call('POST', '/api/global-rules', { name: 'x' }));
    assert.equal(missing.status, 400);
    assert.equal((await read(await h.call('GET', '/api/global-rules/blocker'))).status, 200);
    assert.equal((await fetch(`${h.data}/hello`, { headers: { 'x-block': 'yes' } })).status, 403);
  });

  test('admin global rules: a viewer reads them and cannot write', async () => {
    const list = await fetch(`${h.url}/api/global-rules`, { headers: { authorization: VIEWER } });
    assert.equal(list.status, 200);
    const write = await fetch(`${h.url}/api/global-rules/blocker`, {
      method: 'DELETE',
      headers: { authorization: VIEWER },
    });
    assert.equal(write.status, 403);
    assert.equal((await h.call('GET', '/api/global-rules/blocker')).status, 200);
  });

  test('admin global rules: the supernode a rule uses cannot be deleted; DELETE of the rule frees it', async () => {
    const blocked = await read(await h.call('DELETE', '/api/supernodes/tag'));
    assert.equal(blocked.status, 400);
    assert.ok(
      (blocked.body as { details: { path: string }[] }).details.some(
        (d) => d.path === 'global_rules[0].supernode',
      ),
      JSON.stringify(blocked.body),
    );
    assert.equal((await h.call('DELETE', '/api/global-rules/blocker')).status, 200);
    assert.equal((await fetch(`${h.data}/hello`, { headers: { 'x-block': 'yes' } })).status, 200);
    const saved = parse(readFileSync(h.file as string, 'utf8')) as { global_rules?: unknown[] };
    assert.deepEqual(saved.global_rules ?? [], []);
    assert.equal((await h.call('DELETE', '/api/supernodes/tag')).status, 200);
  });
});
