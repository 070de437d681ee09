import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import { authzKeycloak } from '../../../src/plugins/auth/authz-keycloak.js';
import type { NodeInstance } from '../../../src/core/plugin.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { startKeycloakServer, type KeycloakServer } from '../../support/keycloak-server.js';
import { deadPort, echo, startOrigin, type Origin } from '../../support/origins.js';
import { instantiate, pluginEnv, requestContext } from '../../support/plugin-env.js';
import { responseJson, runNode } from './helpers.js';
import { assertConfigError, assertSchemaRejects, failsWith } from '../../support/node-run.js';

let kc: KeycloakServer;
let backend: Origin;
let gateway: RunningGateway;
let token: string;
const nodes: NodeInstance<string>[] = [];
const NOT_AUTHORIZED = { error: 'access_denied', error_description: 'not_authorized' };

before(async () => {
  kc = await startKeycloakServer();
  token = kc.issueToken(['allow-resource', 'orders#GET', 'orders#read']);
  backend = await startOrigin(echo('backend'));
  const dead = await deadPort();
  const policy = (name: string, endpoint: string, permission: string) => `
  - name: ${name}
    nodes:
      - { id: listener, type: listener }
      - id: keycloak
        type: authz-keycloak
        config: { token_endpoint: "${endpoint}", client_id: e2e-client, permissions: ["${permission}"] }
      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${backend.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: keycloak.in }
      - { from: keycloak.success, to: backend.in }
      - { from: backend.success, to: client.in }
      - { from: keycloak.denied, to: client.in }
      - { from: keycloak.error, to: client.in }`;
  gateway = await startGateway(`
routes:
  - { name: kc-allow, match: { path: /kc-allow/* }, policy: kc-allow-policy }
  - { name: kc-deny, match: { path: /kc-deny/* }, policy: kc-deny-policy }
  - { name: kc-down, match: { path: /kc-down/* }, policy: kc-down-policy }
policies:${policy('kc-allow-policy', kc.tokenEndpoint, 'allow-resource')}${policy('kc-deny-policy', kc.tokenEndpoint, 'deny-resource')}${policy('kc-down-policy', `http://127.0.0.1:${dead}/token`, 'allow-resource')}
`);
});

after(async () => {
  for (const node of nodes) await node.close?.();
  await gateway.stop();
  await Promise.all([kc.close(), backend.close()]);
  await closeAllPools();
});

function create(config: Record<string, unknown>, env = pluginEnv()): NodeInstance<string> {
  const node = instantiate(
    authzKeycloak,
    { token_endpoint: kc.tokenEndpoint, client_id: 'e2e-client', ...config },
    env,
  );
  nodes.push(node);
  return node;
}

const bearer = (value: string) => requestContext({ headers: { host: 'gw.test', authorization: value } });

test('authz-keycloak: a granted permission leaves by success; the callout is a UMA decision request', async () => {
  const node = create({ permissions: ['allow-resource', 'orders#read'] });
  assert.equal(await runNode(node, bearer(`Bearer ${token}`)), 'success');
  const call = kc.calls.at(-1)!;
  assert.equal(call.method, 'POST');
  assert.equal(call.headers['content-type'], 'application/x-www-form-urlencoded');
  assert.equal(call.headers.authorization, `Bearer ${token}`);
  assert.equal(call.form.get('grant_type'), 'urn:ietf:params:oauth:grant-type:uma-ticket');
  assert.equal(call.form.get('audience'), 'e2e-client');
  assert.equal(call.form.get('response_mode'), 'decision');
  assert.deepEqual(call.form.getAll('permission'), ['allow-resource', 'orders#read']);
});

test('authz-keycloak: the Bearer prefix is optional in the request', async () => {
  assert.equal(await runNode(create({ permissions: ['allow-resource'] }), bearer(token)), 'success');
  assert.equal(kc.calls.at(-1)!.headers.authorization, `Bearer ${token}`);
});

test('authz-keycloak: a refused permission leaves by denied with 403 access_denied', async () => {
  const ctx = bearer(`Bearer ${token}`);
  assert.equal(await runNode(create({ permissions: ['deny-resource'] }), ctx), 'denied');
  assert.equal(ctx.response.status, 403);
  assert.deepEqual(responseJson(ctx), NOT_AUTHORIZED);
  assert.equal(ctx.response.headers['content-type'], 'application/json');
  assert.equal(ctx.errors.length, 0);
});

test('authz-keycloak: no bearer token is a 403 before any callout', async () => {
  const calls = kc.calls.length;
  const ctx = requestContext();
  assert.equal(await runNode(create({ permissions: ['allow-resource'] }), ctx), 'denied');
  assert.equal(ctx.response.status, 403);
  assert.deepEqual(responseJson(ctx), NOT_AUTHORIZED);
  assert.equal(kc.calls.length, calls);
});

test('authz-keycloak: a token Keycloak refuses (401) is a 401 invalid_token denial', async () => {
  const ctx = bearer('Bearer not-a-token');
  assert.equal(await runNode(create({ permissions: ['allow-resource'] }), ctx), 'denied');
  assert.equal(ctx.response.status, 401);
  assert.deepEqual(responseJson(ctx), { error: 'invalid_token', error_description: 'Invalid bearer token' });
  assert.equal(ctx.response.headers['www-authenticate'], 'Bearer error="invalid_token"');
});

test('authz-keycloak: a permission Keycloak does not know (400 invalid_resource) → 502 AUTHZ_KEYCLOAK_ERROR', async () => {
  const failure = await failsWith(
    create({ permissions: ['ghost'] }),
    bearer(`Bearer ${token}`),
    'AUTHZ_KEYCLOAK_ERROR',
    502,
  );
  assert.match(failure.message, /Keycloak answered 400/);
});

test('authz-keycloak: http_method_as_scope asks for resource#METHOD, appended to listed scopes', async () => {
  const node = create({ permissions: ['orders'], http_method_as_scope: true });
  assert.equal(await runNode(node, bearer(`Bearer ${token}`)), 'success');
  assert.deepEqual(kc.calls.at(-1)!.form.getAll('permission'), ['orders#GET']);
  const post = requestContext({
    method: 'POST',
    headers: { host: 'gw.test', authorization: `Bearer ${token}` },
  });
  assert.equal(await runNode(node, post), 'denied');
  assert.deepEqual(kc.calls.at(-1)!.form.getAll('permission'), ['orders#POST']);
  const listed = create({ permissions: ['orders#read'], http_method_as_scope: true });
  assert.equal(await runNode(listed, bearer(`Bearer ${token}`)), 'success');
  assert.deepEqual(kc.calls.at(-1)!.form.getAll('permission'), ['orders#read,GET']);
});

test('authz-keycloak: no permissions: ENFORCING denies, PERMISSIVE lets through, neither calls out', async () => {
  const calls = kc.calls.length;
  const env = pluginEnv();
  const enforcing = requestContext();
  assert.equal(await runNode(create({}, env), enforcing), 'denied');
  assert.equal(enforcing.response.status, 403);
  assert.match(env.warnings[0]?.message ?? '', /every request is denied/);
  const permissive = create({ policy_enforcement_mode: 'PERMISSIVE' });
  assert.equal(await runNode(permissive, requestContext()), 'success');
  assert.equal(kc.calls.length, calls);
});

test('authz-keycloak: no decision (500, 404, reset) → 502; a non-JSON 200 grants AUTHZ_KEYCLOAK_ERROR', async () => {
  const node = create({ permissions: ['allow-resource'] });
  try {
    kc.fault = 'status-500';
    const status = await failsWith(node, bearer(token), 'AUTHZ_KEYCLOAK_ERROR', 502);
    assert.equal(status.error, 'provider_error');
    assert.match(status.message, /Keycloak answered 500/);
    assert.deepEqual(status.metadata, { endpoint: kc.tokenEndpoint });
    kc.fault = 'garbage';
    assert.equal(await runNode(node, bearer(token)), 'success', 'any 2xx is a grant');
    kc.fault = 'reset';
    await failsWith(node, bearer(token), 'AUTHZ_KEYCLOAK_ERROR', 502);
  } finally {
    kc.fault = 'none';
  }
  const wrongPath = create({ token_endpoint: `${kc.url}/realms/e2e/nope`, permissions: ['allow-resource'] });
  const notFound = await failsWith(wrongPath, bearer(token), 'AUTHZ_KEYCLOAK_ERROR', 502);
  assert.match(notFound.message, /answered 404/);
});

test('authz-keycloak: Keycloak unreachable or slower than timeout → 502 AUTHZ_KEYCLOAK_ERROR', async () => {
  const port = await deadPort();
  const refused = create({ token_endpoint: `http://127.0.0.1:${port}/token`, permissions: ['a'] });
  assert.match((await failsWith(refused, bearer(token), 'AUTHZ_KEYCLOAK_ERROR', 502)).message, /refused/);
  kc.fault = 'hang';
  try {
    const slow = create({ permissions: ['allow-resource'], timeout: 120 });
    assert.match(
      (await failsWith(slow, bearer(token), 'AUTHZ_KEYCLOAK_ERROR', 502)).message,
      /no answer within 120 ms/,
    );
  } finally {
    kc.fault = 'none';
  }
});

test('authz-keycloak: config rejections', () => {
  const base = { token_endpoint: 'http://kc/token', client_id: 'c' };
  assertSchemaRejects(() => instantiate(authzKeycloak, { client_id: 'c' }), 'token_endpoint');
  assertSchemaRejects(() => instantiate(authzKeycloak, { token_endpoint: 'http://kc/token' }), 'client_id');
  assertConfigError(
    () => instantiate(authzKeycloak, { ...base, token_endpoint: '/token' }),
    'token_endpoint',
  );
  assertConfigError(
    () => instantiate(authzKeycloak, { ...base, token_endpoint: 'ldap://kc' }),
    'token_endpoint',
  );
  assertSchemaRejects(
    () => instantiate(authzKeycloak, { ...base, policy_enforcement_mode: 'LAX' }),
    'policy_enforcement_mode',
  );
  assertSchemaRejects(() => instantiate(authzKeycloak, { ...base, timeout: 0 }), 'timeout');
  assertSchemaRejects(() => instantiate(authzKeycloak, { ...base, permissions: 'orders' }), 'permissions');
  assertSchemaRejects(
    () => instantiate(authzKeycloak, { ...base, discovery: 'http://kc/.well-known' }),
    'discovery',
  );
});

test('authz-keycloak: E2E-KC-01 permit proxies; E2E-KC-02 refusal is 403; E2E-KC-03 no bearer is 403', async () => {
  const headers = { authorization: `Bearer ${token}` };
  const permitted = await request(`${gateway.url}/kc-allow/thing`, { headers });
  assert.equal(permitted.status, 200);
  assert.equal((JSON.parse(permitted.body) as { url: string }).url, '/kc-allow/thing');
  const before = backend.requests.length;
  const refused = await request(`${gateway.url}/kc-deny/thing`, { headers });
  assert.equal(refused.status, 403);
  assert.deepEqual(JSON.parse(refused.body), NOT_AUTHORIZED);
  const calls = kc.calls.length;
  const anonymous = await request(`${gateway.url}/kc-allow/thing`);
  assert.equal(anonymous.status, 403);
  assert.equal(kc.calls.length, calls, 'no bearer: rejected before any callout');
  assert.equal(backend.requests.length, before);
});

test('authz-keycloak: Keycloak down through a real gateway → 502 provider_error, no challenge', async () => {
  const down = await request(`${gateway.url}/kc-down/x`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(down.status, 502);
  assert.equal((JSON.parse(down.body) as { error: string }).error, 'provider_error');
  assert.equal(down.headers['www-authenticate'], undefined);
});
