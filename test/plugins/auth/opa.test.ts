import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import { opa } from '../../../src/plugins/auth/opa.js';
import type { NodeInstance } from '../../../src/core/plugin.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { startOpaServer, type OpaServer } from '../../support/opa-server.js';
import { deadPort, echo, startOrigin, type Origin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { responseJson, runNode } from './helpers.js';
import { assertConfigError, assertSchemaRejects, bodyText, failsWith } from '../../support/node-run.js';

let server: OpaServer;
let backend: Origin;
let gateway: RunningGateway;
const nodes: NodeInstance<string>[] = [];

/** The reference e2e's policy: paths under /allow pass with X-Opa-User, anything else is refused. */
function e2ePolicy(input: Record<string, unknown>): unknown {
  const path = String((input['request'] as Record<string, unknown>)['path']);
  return /\/allow(\/|$)/.test(path)
    ? { allow: true, headers: { 'X-Opa-User': 'alice' } }
    : { allow: false, status_code: 403, reason: 'denied-by-opa' };
}

before(async () => {
  server = await startOpaServer({
    'e2e/allow': e2ePolicy,
    'custom/deny': () => ({
      allow: false,
      status: 401,
      reason: { message: 'log in first' },
      headers: { 'WWW-Authenticate': 'Bearer realm="opa"', 'X-Count': 2 },
    }),
    'custom/bare-deny': () => ({ allow: false }),
    'bool/yes': () => true,
    'bool/no': () => false,
    'odd/string': () => 'maybe',
    'odd/status': () => ({ allow: false, status_code: 99, reason: 'r' }),
    echo: (input) => ({ allow: true, headers: { 'x-input': JSON.stringify(input) } }),
  });
  backend = await startOrigin(echo('backend'));
  const dead = await deadPort();
  const policy = (name: string, host: string, decision: string) => `
  - name: ${name}
    nodes:
      - { id: listener, type: listener }
      - id: opa
        type: opa
        config: { host: "${host}", policy: ${decision}, send_headers_upstream: [x-opa-user] }
      - { id: strip, type: proxy-rewrite, config: { phase: request, strip_path_prefix: /opa } }
      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${backend.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: opa.in }
      - { from: opa.success, to: strip.in }
      - { from: strip.success, to: backend.in }
      - { from: backend.success, to: client.in }
      - { from: opa.denied, to: client.in }
      - { from: opa.error, to: client.in }`;
  gateway = await startGateway(`
routes:
  - { name: opa-api, match: { path: /opa/* }, policy: opa-policy }
  - { name: down-api, match: { path: /down/* }, policy: down-policy }
policies:${policy('opa-policy', server.url, 'e2e/allow')}${policy('down-policy', `http://127.0.0.1:${dead}`, 'e2e/allow')}
`);
});

after(async () => {
  for (const node of nodes) await node.close?.();
  await gateway.stop();
  await Promise.all([server.close(), backend.close()]);
  await closeAllPools();
});

function create(config: Record<string, unknown>): NodeInstance<string> {
  const node = instantiate(opa, { host: server.url, ...config });
  nodes.push(node);
  return node;
}

test('opa: an allow decision leaves by success with send_headers_upstream copied and absent ones removed', async () => {
  const node = create({ policy: 'e2e/allow', send_headers_upstream: ['X-OPA-User', 'x-opa-role'] });
  const ctx = requestContext({ url: '/allow/thing', headers: { host: 'gw.test', 'x-opa-role': 'forged' } });
  assert.equal(await runNode(node, ctx), 'success');
  assert.equal(ctx.request.headers['x-opa-user'], 'alice');
  assert.equal(ctx.request.headers['x-opa-role'], undefined, 'a listed header OPA did not send is removed');
  assert.equal(ctx.response.status, 0);
  const call = server.calls.at(-1)!;
  assert.equal(call.method, 'POST');
  assert.equal(call.path, '/v1/data/e2e/allow');
  assert.equal(call.headers['content-type'], 'application/json');
});

test('opa: the input document describes the request like APISIX (type, request, var)', async () => {
  const node = create({ host: `${server.url}/`, policy: '/echo', send_headers_upstream: ['x-input'] });
  const ctx = requestContext({
    method: 'PUT',
    url: '/orders/7?a=1&b=2&b=3',
    host: 'shop.test:8443',
    scheme: 'https',
    headers: { host: 'shop.test:8443', 'x-multi': ['one', 'two'], authorization: 'Bearer t' },
  });
  ctx.setConsumer({ name: 'alice', group: 'staff' });
  ctx.route = 'orders';
  assert.equal(await runNode(node, ctx), 'success');
  const input = JSON.parse(String(ctx.request.headers['x-input'])) as Record<string, Record<string, unknown>>;
  assert.equal(server.calls.at(-1)!.path, '/v1/data/echo', 'slashes around host and policy are trimmed');
  assert.equal(input['type'], 'http');
  assert.deepEqual(input['request'], {
    scheme: 'https',
    method: 'PUT',
    host: 'shop.test',
    port: 8443,
    path: '/orders/7',
    headers: { host: 'shop.test:8443', 'x-multi': ['one', 'two'], authorization: 'Bearer t' },
    query: { a: '1', b: ['2', '3'] },
  });
  assert.equal(input['var']!['remote_addr'], '192.0.2.10');
  assert.equal(input['var']!['remote_port'], 40000);
  assert.equal(typeof input['var']!['timestamp'], 'number');
  assert.equal(input['consumer'], undefined, 'no consumer without with_consumer');
  assert.equal(input['route'], undefined);
});

test('opa: with_consumer and with_route add the consumer and the route to input', async () => {
  const node = create({
    policy: 'echo',
    with_consumer: true,
    with_route: true,
    send_headers_upstream: ['x-input'],
  });
  const ctx = requestContext({ url: '/x' });
  ctx.setConsumer({ name: 'alice', group: 'staff' });
  ctx.message['consumer.auth_type'] = 'key-auth';
  ctx.route = 'orders';
  ctx.policy = 'orders-policy';
  assert.equal(await runNode(node, ctx), 'success');
  const input = JSON.parse(String(ctx.request.headers['x-input'])) as Record<string, unknown>;
  assert.deepEqual(input['consumer'], {
    username: 'alice',
    name: 'alice',
    group: 'staff',
    auth_type: 'key-auth',
  });
  assert.deepEqual(input['route'], { name: 'orders', policy: 'orders-policy' });
  assert.equal(input['request'] !== undefined && input['var'] !== undefined, true);
});

test('opa: a deny decision leaves by denied with 403 and the reason as a text body', async () => {
  const node = create({ policy: 'e2e/allow' });
  const ctx = requestContext({ url: '/deny/thing' });
  assert.equal(await runNode(node, ctx), 'denied');
  assert.equal(ctx.response.status, 403);
  assert.equal(bodyText(ctx), 'denied-by-opa');
  assert.equal(ctx.response.headers['content-type'], 'text/plain; charset=utf-8');
  assert.equal(ctx.errors.length, 0);
});

test('opa: a denial uses result.status, result.headers and a JSON reason', async () => {
  const ctx = requestContext();
  assert.equal(await runNode(create({ policy: 'custom/deny' }), ctx), 'denied');
  assert.equal(ctx.response.status, 401);
  assert.deepEqual(responseJson(ctx), { message: 'log in first' });
  assert.equal(ctx.response.headers['content-type'], 'application/json');
  assert.equal(ctx.response.headers['www-authenticate'], 'Bearer realm="opa"');
  assert.equal(ctx.response.headers['x-count'], '2');
});

test('opa: a denial without reason is an empty 403; an unusable status falls back to 403', async () => {
  const bare = requestContext();
  assert.equal(await runNode(create({ policy: 'custom/bare-deny' }), bare), 'denied');
  assert.equal(bare.response.status, 403);
  assert.equal(bodyText(bare), '');
  const odd = requestContext();
  assert.equal(await runNode(create({ policy: 'odd/status' }), odd), 'denied');
  assert.equal(odd.response.status, 403);
});

test('opa: a boolean result decides on its own', async () => {
  assert.equal(await runNode(create({ policy: 'bool/yes' }), requestContext()), 'success');
  const ctx = requestContext();
  assert.equal(await runNode(create({ policy: 'bool/no' }), ctx), 'denied');
  assert.equal(ctx.response.status, 403);
});

test('opa: no decision (undefined document, odd result, not JSON, 500) → 502 OPA_ERROR', async () => {
  const undefinedDoc = await failsWith(
    create({ policy: 'no/such/rule' }),
    requestContext(),
    'OPA_ERROR',
    502,
  );
  assert.equal(undefinedDoc.error, 'provider_error');
  assert.match(undefinedDoc.message, /no decision at 'no\/such\/rule'/);
  assert.deepEqual(undefinedDoc.metadata, { endpoint: `${server.url}/v1/data/no/such/rule` });
  await failsWith(create({ policy: 'odd/string' }), requestContext(), 'OPA_ERROR', 502);
  try {
    server.fault = 'garbage';
    const garbage = await failsWith(create({ policy: 'e2e/allow' }), requestContext(), 'OPA_ERROR', 502);
    assert.match(garbage.message, /not a JSON object/);
    server.fault = 'status-500';
    const status = await failsWith(create({ policy: 'e2e/allow' }), requestContext(), 'OPA_ERROR', 502);
    assert.match(status.message, /OPA answered 500/);
    server.fault = 'reset';
    await failsWith(create({ policy: 'e2e/allow' }), requestContext(), 'OPA_ERROR', 502);
  } finally {
    server.fault = 'none';
  }
});

test('opa: OPA unreachable or slower than timeout → 502 OPA_ERROR', async () => {
  const port = await deadPort();
  const refused = await failsWith(
    create({ host: `http://127.0.0.1:${port}`, policy: 'p' }),
    requestContext(),
    'OPA_ERROR',
    502,
  );
  assert.match(refused.message, /refused/);
  server.fault = 'hang';
  try {
    const started = Date.now();
    const slow = await failsWith(
      create({ policy: 'e2e/allow', timeout: 150 }),
      requestContext(),
      'OPA_ERROR',
      502,
    );
    assert.match(slow.message, /no answer within 150 ms/);
    assert.ok(Date.now() - started < 2000);
  } finally {
    server.fault = 'none';
  }
});

test('opa: a client that goes away mid-callout is UPSTREAM_CLIENT_ABORTED, not a provider failure', async () => {
  server.fault = 'hang';
  try {
    const abort = new AbortController();
    const ctx = requestContext({}, abort.signal);
    setTimeout(() => abort.abort(), 50);
    await failsWith(create({ policy: 'e2e/allow' }), ctx, 'UPSTREAM_CLIENT_ABORTED', 499);
  } finally {
    server.fault = 'none';
  }
});

test('opa: config rejections', () => {
  assertSchemaRejects(() => instantiate(opa, { policy: 'p' }), 'host');
  assertSchemaRejects(() => instantiate(opa, { host: 'http://opa' }), 'policy');
  assertConfigError(() => instantiate(opa, { host: 'opa/v1', policy: 'p' }), 'host', /absolute URL/);
  assertConfigError(() => instantiate(opa, { host: 'ftp://opa', policy: 'p' }), 'host', /http/);
  assertConfigError(() => instantiate(opa, { host: 'http://opa', policy: '///' }), 'policy');
  assertSchemaRejects(() => instantiate(opa, { host: 'http://opa', policy: 'p', timeout: 0 }), 'timeout');
  assertSchemaRejects(
    () => instantiate(opa, { host: 'http://opa', policy: 'p', keepalive: true }),
    'keepalive',
  );
  assertSchemaRejects(
    () => instantiate(opa, { host: 'http://opa', policy: 'p', send_headers_upstream: 'x-user' }),
    'send_headers_upstream',
  );
  const node = instantiate(opa, { host: 'http://opa', policy: 'p', with_route: true, with_service: true });
  void node.close?.();
});

test('opa: E2E-OPA-01 allow proxies with the OPA header; E2E-OPA-02 deny is 403 with the reason', async () => {
  const allowed = await request(`${gateway.url}/opa/allow/thing`);
  assert.equal(allowed.status, 200);
  const seen = JSON.parse(allowed.body) as { url: string; headers: Record<string, string> };
  assert.equal(seen.url, '/allow/thing');
  assert.equal(seen.headers['x-opa-user'], 'alice');

  const before = backend.requests.length;
  const denied = await request(`${gateway.url}/opa/deny/thing`);
  assert.equal(denied.status, 403);
  assert.match(denied.body, /denied-by-opa/);
  assert.equal(backend.requests.length, before, 'a denied request never reaches the upstream');
});

test('opa: OPA down through a real gateway → 502 provider_error, no challenge header', async () => {
  const down = await request(`${gateway.url}/down/allow/x`);
  assert.equal(down.status, 502);
  assert.equal((JSON.parse(down.body) as { error: string }).error, 'provider_error');
  assert.equal(down.headers['www-authenticate'], undefined);
});
