import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import { wolfRbac } from '../../../src/plugins/auth/wolf-rbac.js';
import type { NodeInstance } from '../../../src/core/plugin.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { deadPort, echo, startOrigin, type Origin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { startWolfServer, type WolfServer } from '../../support/wolf-server.js';
import { responseJson, runNode } from './helpers.js';
import { assertConfigError, assertSchemaRejects, failsWith } from '../../support/node-run.js';

let wolf: WolfServer;
let backend: Origin;
let gateway: RunningGateway;
let rbac: string;
const alice = { id: 7, username: 'alice', nickname: 'Alice Ω' };
const nodes: NodeInstance<string>[] = [];

before(async () => {
  // The reference e2e's rule: paths under /allow pass.
  wolf = await startWolfServer(
    (_user, _app, action, res) => action !== 'DELETE' && /\/allow(\/|$)/.test(res),
  );
  rbac = `V1#restful#${wolf.login(alice, 'restful')}`;
  backend = await startOrigin(echo('backend'));
  gateway = await startGateway(`
routes:
  - { name: wolf-api, match: { path: /wolf/* }, policy: wolf-policy }
policies:
  - name: wolf-policy
    nodes:
      - { id: listener, type: listener }
      - { id: wolf, type: wolf-rbac, config: { server: "${wolf.url}" } }
      - { id: strip, type: proxy-rewrite, config: { phase: request, strip_path_prefix: /wolf } }
      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${backend.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: wolf.in }
      - { from: wolf.success, to: strip.in }
      - { from: strip.success, to: backend.in }
      - { from: backend.success, to: client.in }
      - { from: wolf.denied, to: client.in }
      - { from: wolf.error, to: client.in }
`);
});

after(async () => {
  for (const node of nodes) await node.close?.();
  await gateway.stop();
  await Promise.all([wolf.close(), backend.close()]);
  await closeAllPools();
});

function create(config: Record<string, unknown> = {}): NodeInstance<string> {
  const node = instantiate(wolfRbac, { server: wolf.url, ...config });
  nodes.push(node);
  return node;
}

test('wolf-rbac: an allowed access check leaves by success with the wolf user attached', async () => {
  const ctx = requestContext({
    url: '/allow/pets?x=1',
    headers: { host: 'gw.test', 'x-rbac-token': rbac, 'x-username': 'forged' },
  });
  assert.equal(await runNode(create(), ctx), 'success');
  assert.equal(ctx.request.headers['x-userid'], '7');
  assert.equal(ctx.request.headers['x-username'], 'alice');
  assert.equal(ctx.request.headers['x-nickname'], encodeURIComponent('Alice Ω'));
  assert.equal(ctx.message['user'], 'alice');
  assert.equal(ctx.message['user_id'], '7');
  assert.equal(ctx.consumer?.name, 'alice');
  assert.equal(ctx.message['consumer.auth_type'], 'wolf-rbac');
  const call = wolf.calls.at(-1)!;
  assert.equal(call.method, 'GET');
  assert.equal(call.headers['x-rbac-token'], rbac.split('#')[2]);
  assert.equal(call.query.get('appID'), 'restful');
  assert.equal(call.query.get('resName'), '/allow/pets');
  assert.equal(call.query.get('action'), 'GET');
  assert.equal(call.query.get('clientIP'), '192.0.2.10');
});

test('wolf-rbac: the token is read from ?rbac_token, Authorization, X-Rbac-Token, then the cookie', async () => {
  const node = create({ header_prefix: 'X-Wolf-' });
  const sources = [
    requestContext({ url: `/allow/a?rbac_token=${encodeURIComponent(rbac)}` }),
    requestContext({ url: '/allow/a', headers: { host: 'gw.test', authorization: rbac } }),
    requestContext({ url: '/allow/a', headers: { host: 'gw.test', cookie: `a=b; x-rbac-token=${rbac}` } }),
  ];
  for (const ctx of sources) {
    assert.equal(await runNode(node, ctx), 'success');
    assert.equal(ctx.request.headers['x-wolf-username'], 'alice');
  }
  const precedence = requestContext({
    url: `/allow/a?rbac_token=${encodeURIComponent(rbac)}`,
    headers: { host: 'gw.test', authorization: 'V1#restful#stale' },
  });
  assert.equal(await runNode(node, precedence), 'success', 'the query argument wins');
});

test('wolf-rbac: a token without appid uses the configured appid', async () => {
  const ctx = requestContext({
    url: '/allow/a',
    headers: { host: 'gw.test', 'x-rbac-token': `V1##${rbac.split('#')[2]}` },
  });
  assert.equal(await runNode(create({ appid: 'restful' }), ctx), 'success');
  assert.equal(wolf.calls.at(-1)!.query.get('appID'), 'restful');
  const none = requestContext({ url: '/allow/a', headers: { host: 'gw.test', 'x-rbac-token': 'V1##tok' } });
  assert.equal(await runNode(create(), none), 'denied');
  assert.deepEqual(responseJson(none), { error: 'forbidden', message: 'invalid rbac token: no appid' });
});

test('wolf-rbac: an access check wolf refuses leaves by denied with 401 and wolf reason', async () => {
  const ctx = requestContext({ url: '/deny/pets', headers: { host: 'gw.test', 'x-rbac-token': rbac } });
  assert.equal(await runNode(create(), ctx), 'denied');
  assert.equal(ctx.response.status, 401);
  assert.deepEqual(responseJson(ctx), { error: 'forbidden', message: 'ERR_ACCESS_DENIED' });
  assert.equal(ctx.request.headers['x-username'], undefined, 'no identity goes upstream on a denial');
  const unknown = requestContext({
    url: '/allow/a',
    headers: { host: 'gw.test', 'x-rbac-token': 'V1#restful#nope' },
  });
  assert.equal(await runNode(create(), unknown), 'denied');
  assert.deepEqual(responseJson(unknown), { error: 'forbidden', message: 'ERR_TOKEN_INVALID' });
});

test('wolf-rbac: a missing or malformed token is a 401 before any callout', async () => {
  const calls = wolf.calls.length;
  const missing = requestContext();
  assert.equal(await runNode(create(), missing), 'denied');
  assert.equal(missing.response.status, 401);
  assert.deepEqual(responseJson(missing), { error: 'forbidden', message: 'Missing rbac token in request' });
  for (const bad of ['not-valid', 'V2#restful#tok', 'V1#restful', 'V1#restful#']) {
    const ctx = requestContext({ headers: { host: 'gw.test', 'x-rbac-token': bad } });
    assert.equal(await runNode(create(), ctx), 'denied', bad);
    assert.deepEqual(responseJson(ctx), { error: 'forbidden', message: 'invalid rbac token: parse failed' });
  }
  assert.equal(wolf.calls.length, calls);
});

test('wolf-rbac: no decision (500, non-JSON 200, reset) → 502 WOLF_RBAC_UPSTREAM_ERROR', async () => {
  const ctx = () => requestContext({ url: '/allow/a', headers: { host: 'gw.test', 'x-rbac-token': rbac } });
  try {
    wolf.fault = 'status-500';
    const status = await failsWith(create(), ctx(), 'WOLF_RBAC_UPSTREAM_ERROR', 502);
    assert.equal(status.error, 'provider_error');
    assert.match(status.message, /wolf-server answered 500/);
    assert.deepEqual(status.metadata, { endpoint: `${wolf.url}/wolf/rbac/access_check` });
    wolf.fault = 'garbage';
    assert.match((await failsWith(create(), ctx(), 'WOLF_RBAC_UPSTREAM_ERROR', 502)).message, /not JSON/);
    wolf.fault = 'reset';
    await failsWith(create(), ctx(), 'WOLF_RBAC_UPSTREAM_ERROR', 502);
    wolf.fault = 'hang';
    const slow = await failsWith(create({ timeout_ms: 100 }), ctx(), 'WOLF_RBAC_UPSTREAM_ERROR', 502);
    assert.match(slow.message, /no answer within 100 ms/);
  } finally {
    wolf.fault = 'none';
  }
  const port = await deadPort();
  const refused = await failsWith(
    create({ server: `http://127.0.0.1:${port}` }),
    ctx(),
    'WOLF_RBAC_UPSTREAM_ERROR',
    502,
  );
  assert.match(refused.message, /refused/);
});

test('wolf-rbac: config rejections and defaults', () => {
  assertConfigError(() => instantiate(wolfRbac, { server: 'wolf:12180' }), 'server');
  assertConfigError(() => instantiate(wolfRbac, { server: 'tcp://wolf' }), 'server');
  assertSchemaRejects(() => instantiate(wolfRbac, { timeout_ms: 0 }), 'timeout_ms');
  assertSchemaRejects(() => instantiate(wolfRbac, { appid: '' }), 'appid');
  assertSchemaRejects(() => instantiate(wolfRbac, { rejected_code: 403 }), 'rejected_code');
  const node = instantiate(wolfRbac, {});
  void node.close?.();
});

test('wolf-rbac: E2E-WOLF-01 allow proxies; E2E-WOLF-02 deny rejected; E2E-WOLF-03 malformed token rejected', async () => {
  const allowed = await request(`${gateway.url}/wolf/allow/thing`, { headers: { 'x-rbac-token': rbac } });
  assert.equal(allowed.status, 200);
  const seen = JSON.parse(allowed.body) as { url: string; headers: Record<string, string> };
  assert.equal(seen.url, '/allow/thing');
  assert.equal(seen.headers['x-username'], 'alice');
  const denied = await request(`${gateway.url}/wolf/deny/thing`, { headers: { 'x-rbac-token': rbac } });
  assert.equal(denied.status, 401);
  const malformed = await request(`${gateway.url}/wolf/allow/thing`, {
    headers: { 'x-rbac-token': 'not-valid' },
  });
  assert.equal(malformed.status, 401);
  wolf.fault = 'status-500';
  try {
    const down = await request(`${gateway.url}/wolf/allow/thing`, { headers: { 'x-rbac-token': rbac } });
    assert.equal(down.status, 502);
    assert.equal((JSON.parse(down.body) as { error: string }).error, 'provider_error');
  } finally {
    wolf.fault = 'none';
  }
});
