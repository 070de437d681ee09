import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { authzCasbin } from '../../../src/plugins/auth/authz-casbin.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { instantiate, pluginEnv, requestContext } from '../../support/plugin-env.js';
import { tempDir } from '../../support/temp-dir.js';
import { assertConfigError, assertSchemaRejects, bodyText, runNow } from '../../support/node-run.js';

const MODEL = `[request_definition]
r = sub, obj, act

[policy_definition]
p = sub, obj, act

[role_definition]
g = _, _

[policy_effect]
e = some(where (p.eft == allow))

[matchers]
m = g(r.sub, p.sub) && keyMatch(r.obj, p.obj) && r.act == p.act
`;

const POLICY = `# admins read everything under /data
p, admin, /data/*, GET
p, anonymous, /public/*, GET
p, bob, /data/bob, GET
g, alice, admin
`;

const ctxFor = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  requestContext({ url: path, method, headers });

describe('authz-casbin: decisions', () => {
  const node = (extra: Record<string, unknown> = {}) =>
    instantiate(authzCasbin, { model: MODEL, policy: POLICY, ...extra });

  test('authz-casbin: a subject allowed through a role passes', () => {
    const ctx = ctxFor('/data/reports', { 'x-user': 'alice' });
    assert.equal(runNow(node(), ctx), 'success');
    assert.equal(ctx.response.status, 0);
  });

  test('authz-casbin: regexMatch runs on the linear-time engine: a (a+)+ policy line cannot stall the loop', () => {
    const regexModel = MODEL.replace('keyMatch(r.obj, p.obj)', 'regexMatch(r.obj, p.obj)');
    const regexNode = instantiate(authzCasbin, {
      model: regexModel,
      policy: 'p, alice, ^/redos/(a+)+$, GET\np, alice, ^/ok/[0-9]+$, GET\n',
    });
    const started = process.hrtime.bigint();
    const attack = ctxFor(`/redos/${'a'.repeat(40)}!`, { 'x-user': 'alice' });
    assert.equal(runNow(regexNode, attack), 'denied');
    // A backtracking RegExp needs minutes for 40 a's; the bound is loose on purpose.
    assert.ok(process.hrtime.bigint() - started < 2_000_000_000n, 'answered within 2 s');
    assert.equal(runNow(regexNode, ctxFor('/ok/42', { 'x-user': 'alice' })), 'success');
    assert.equal(runNow(regexNode, ctxFor('/ok/x', { 'x-user': 'alice' })), 'denied');
  });

  test('authz-casbin: a refused request is denied 403 {"message":"Access Denied"}', () => {
    for (const ctx of [
      ctxFor('/data/reports', { 'x-user': 'bob' }),
      ctxFor('/data/reports', { 'x-user': 'alice' }, 'DELETE'),
      ctxFor('/data/reports'),
    ]) {
      assert.equal(runNow(node(), ctx), 'denied');
      assert.equal(ctx.response.status, 403);
      assert.equal(ctx.response.headers['content-type'], 'application/json');
      assert.deepEqual(JSON.parse(bodyText(ctx)), { message: 'Access Denied' });
    }
  });

  test('authz-casbin: the consumer wins over the header; no identity is "anonymous"', () => {
    const withConsumer = ctxFor('/data/bob', { 'x-user': 'alice' });
    withConsumer.setConsumer({ name: 'bob' });
    assert.equal(runNow(node(), withConsumer), 'success');
    const spoof = ctxFor('/data/reports', { 'x-user': 'alice' });
    spoof.setConsumer({ name: 'bob' });
    assert.equal(runNow(node(), spoof), 'denied');
    assert.equal(runNow(node(), ctxFor('/public/logo.png')), 'success');
  });

  test('authz-casbin: username_header is case-insensitive', () => {
    const n = node({ username_header: 'X-Remote-User' });
    assert.equal(runNow(n, ctxFor('/data/x', { 'x-remote-user': 'alice' })), 'success');
    assert.equal(runNow(n, ctxFor('/data/x', { 'x-user': 'alice' })), 'denied');
  });

  test('authz-casbin: fields are never templates', () => {
    assert.deepEqual(authzCasbin.templated, []);
    const n = node({ policy: 'p, {{request.headers.x-user}}, /data/*, GET' });
    assert.equal(runNow(n, ctxFor('/data/x', { 'x-user': '{{request.headers.x-user}}' })), 'success');
    assert.equal(runNow(n, ctxFor('/data/x', { 'x-user': 'alice' })), 'denied');
  });
});

describe('authz-casbin: model and policy files', () => {
  let dir: ReturnType<typeof tempDir>;
  before(() => {
    dir = tempDir('switchyard-casbin-');
    writeFileSync(join(dir.path, 'model.conf'), MODEL);
    writeFileSync(join(dir.path, 'policy.csv'), POLICY);
  });
  after(() => dir.remove());

  test('authz-casbin: paths resolve against the gateway.yaml directory, or stand absolute', () => {
    const relative = instantiate(
      authzCasbin,
      { model_path: 'model.conf', policy_path: 'policy.csv' },
      pluginEnv({ configDir: dir.path }),
    );
    assert.equal(runNow(relative, ctxFor('/data/x', { 'x-user': 'alice' })), 'success');
    const absolute = instantiate(authzCasbin, {
      model_path: join(dir.path, 'model.conf'),
      policy_path: join(dir.path, 'policy.csv'),
    });
    assert.equal(runNow(absolute, ctxFor('/data/x', { 'x-user': 'bob' })), 'denied');
  });

  test('authz-casbin: an unreadable file is rejected at load with its key', () => {
    assertConfigError(
      () =>
        instantiate(
          authzCasbin,
          { model_path: 'model.conf', policy_path: 'missing.csv' },
          pluginEnv({ configDir: dir.path }),
        ),
      'policy_path',
      /ENOENT/,
    );
  });
});

describe('authz-casbin: configuration', () => {
  const build = (config: Record<string, unknown>) => instantiate(authzCasbin, config);

  test('authz-casbin: exactly one source pair is required', () => {
    assertConfigError(() => build({}), 'model');
    assertConfigError(() => build({ model: MODEL }), 'policy');
    assertConfigError(() => build({ policy: POLICY }), 'model');
    assertConfigError(() => build({ model_path: '/m' }), 'policy_path');
    assertConfigError(() => build({ policy_path: '/p' }), 'model_path');
    assertConfigError(() => build({ model: MODEL, policy: POLICY, model_path: '/m' }), 'model', /not both/);
    assertSchemaRejects(() => build({ model: MODEL, policy: POLICY, adapter: 'x' }), 'adapter');
  });

  test('authz-casbin: a malformed model, matcher or request definition is rejected at load', () => {
    assertConfigError(() => build({ model: 'not a model', policy: '' }), 'model');
    assertConfigError(() => build({ model: MODEL.replace('[matchers]', '[nothing]'), policy: '' }), 'model');
    assertConfigError(
      () => build({ model: MODEL.replace('m = g(r.sub', 'm = g((r.sub'), policy: POLICY }),
      'model',
    );
    assertConfigError(
      () => build({ model: MODEL.replace('r = sub, obj, act', 'r = sub, dom, obj, act'), policy: '' }),
      'model',
    );
  });

  test('authz-casbin: policy lines of unknown types or the wrong width are rejected with the line', () => {
    assertConfigError(() => build({ model: MODEL, policy: 'x, alice, /a, GET' }), 'policy', /line 1/);
    assertConfigError(() => build({ model: MODEL, policy: '\np, alice, /a' }), 'policy', /line 2.*takes 3/);
    assertConfigError(() => build({ model: MODEL, policy: 'g, alice' }), 'policy', /line 1/);
  });
});

describe('authz-casbin: through a gateway', () => {
  let gw: RunningGateway;
  before(async () => {
    gw = await startGateway(`
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - id: authz
        type: authz-casbin
        config:
          model: ${JSON.stringify(MODEL)}
          policy: ${JSON.stringify(POLICY)}
      - { id: ok, type: echo, config: { body: allowed } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: authz.in }
      - { from: authz.success, to: ok.in }
      - { from: authz.denied, to: out.in }
      - { from: ok.success, to: out.in }
`);
  });
  after(async () => {
    await gw?.stop();
  });

  test('authz-casbin: allowed and denied requests end to end', async () => {
    const ok = await request(`${gw.url}/data/x`, { headers: { 'x-user': 'alice' } });
    assert.deepEqual([ok.status, ok.body], [200, 'allowed']);
    const no = await request(`${gw.url}/data/x`, { headers: { 'x-user': 'bob' } });
    assert.deepEqual([no.status, no.body], [403, '{"message":"Access Denied"}']);
  });
});
