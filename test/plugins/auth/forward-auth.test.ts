import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { NodeError } from '../../../src/core/errors.js';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import { forwardAuth } from '../../../src/plugins/auth/forward-auth.js';
import type { NodeInstance } from '../../../src/core/plugin.js';
import { templateFor } from '../../../src/template/index.js';
import { request } from '../../support/http.js';
import { startGateway } from '../../support/in-process.js';
import { deadPort, echo, gate, startOrigin, type Origin } from '../../support/origins.js';
import { instantiate, pluginEnv, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, runNode } from './helpers.js';

const nodes: NodeInstance<string>[] = [];
const stops: (() => Promise<void>)[] = [];
after(async () => {
  for (const node of nodes) await node.close?.();
  await Promise.all(stops.map((stop) => stop()));
  await closeAllPools();
});

/** The mock auth service of the reference e2e: /allow paths pass, anything else is a 403. */
async function authService(): Promise<Origin> {
  const service = await startOrigin((req, res) => {
    const uri = String(req.headers['x-forwarded-uri'] ?? '');
    if (/\/allow(\/|$|\?)/.test(uri)) {
      res.writeHead(200, { 'x-auth-user': 'alice', 'x-other': 'not copied' });
      res.end();
    } else {
      res.writeHead(403, {
        'x-deny-reason': 'forbidden-by-mock',
        'content-type': 'text/plain',
        'x-secret': 's',
      });
      res.end('denied');
    }
  });
  stops.push(() => service.close());
  return service;
}

/** Creates the node with real template compilation (extra_headers are legacy-templated). */
function create(config: Record<string, unknown>): NodeInstance<string> {
  const env = pluginEnv();
  const node = instantiate(forwardAuth, config, {
    ...env,
    template: templateFor({ policy: 'p', node: 'n' }, () => {}, {}),
  });
  nodes.push(node);
  return node;
}

async function fails(node: NodeInstance<string>, status: number): Promise<NodeError> {
  let caught: unknown;
  await assert.rejects(runNode(node, requestContext({ url: '/allow/x' })), (err: unknown) => {
    caught = err;
    return err instanceof NodeError;
  });
  const err = caught as NodeError;
  assert.equal(err.code, 'FORWARD_AUTH_ERROR');
  assert.equal(err.status, status);
  assert.equal(err.error, 'provider_error');
  assert.equal(err.responsePrepared, false);
  return err;
}

test('forward-auth: a 2xx answer leaves by success with upstream_headers copied and absent ones removed', async () => {
  const service = await authService();
  const node = create({
    uri: `http://127.0.0.1:${service.port}/verify`,
    upstream_headers: ['X-Auth-User', 'x-auth-role'],
  });
  const ctx = requestContext({
    url: '/allow/thing?q=1',
    headers: { host: 'gw.test', 'x-auth-role': 'forged' },
  });
  assert.equal(await runNode(node, ctx), 'success');
  assert.equal(ctx.request.headers['x-auth-user'], 'alice');
  assert.equal(
    ctx.request.headers['x-auth-role'],
    undefined,
    'a listed header the service did not send is removed',
  );
  assert.equal(ctx.request.headers['x-other'], undefined);
  assert.equal(ctx.response.status, 0);
});

test('forward-auth: the callout carries X-Forwarded-*, request_headers and templated extra_headers', async () => {
  const service = await authService();
  const node = create({
    uri: `http://127.0.0.1:${service.port}/verify?tenant=t1`,
    request_headers: ['Authorization', 'x-missing'],
    extra_headers: { 'x-client': '$remote_addr', 'x-method': '{{request.method}}', 'x-static': 'v' },
  });
  const ctx = requestContext({
    method: 'DELETE',
    url: '/allow/a?b=c',
    host: 'gw.test',
    headers: { authorization: 'Bearer t', cookie: 'not-sent' },
  });
  assert.equal(await runNode(node, ctx), 'success');
  const seen = service.requests.at(-1)!;
  assert.equal(seen.method, 'GET');
  assert.equal(seen.url, '/verify?tenant=t1');
  assert.equal(seen.headers['x-forwarded-proto'], 'http');
  assert.equal(seen.headers['x-forwarded-method'], 'DELETE');
  assert.equal(seen.headers['x-forwarded-host'], 'gw.test');
  assert.equal(seen.headers['x-forwarded-uri'], '/allow/a?b=c');
  assert.equal(seen.headers['x-forwarded-for'], '192.0.2.10');
  assert.equal(seen.headers['authorization'], 'Bearer t');
  assert.equal(seen.headers['cookie'], undefined);
  assert.equal(seen.headers['x-client'], '192.0.2.10');
  assert.equal(seen.headers['x-method'], 'DELETE');
  assert.equal(seen.headers['x-static'], 'v');
});

test('forward-auth: request_method POST forwards the body and its content-encoding', async () => {
  const service = await authService();
  const node = create({ uri: `http://127.0.0.1:${service.port}/verify`, request_method: 'post' });
  const ctx = requestContext({
    method: 'PUT',
    url: '/allow/x',
    headers: { host: 'gw.test', 'content-encoding': 'identity' },
    body: Buffer.from('{"a":1}'),
  });
  assert.equal(await runNode(node, ctx), 'success');
  const seen = service.requests.at(-1)!;
  assert.equal(seen.method, 'POST');
  assert.equal(seen.body.toString(), '{"a":1}');
  assert.equal(seen.headers['content-encoding'], 'identity');
});

test('forward-auth: a 403 answer leaves by denied with its status, body, content type and client_headers', async () => {
  const service = await authService();
  const node = create({ uri: `http://127.0.0.1:${service.port}/verify`, client_headers: ['X-Deny-Reason'] });
  const ctx = requestContext({ url: '/deny/thing' });
  assert.equal(await runNode(node, ctx), 'denied');
  assert.equal(ctx.response.status, 403);
  assert.equal(ctx.response.body?.toString(), 'denied');
  assert.equal(ctx.response.headers['content-type'], 'text/plain');
  assert.equal(ctx.response.headers['x-deny-reason'], 'forbidden-by-mock');
  assert.equal(ctx.response.headers['x-secret'], undefined, 'only listed headers reach the client');
  assert.equal(ctx.errors.length, 0);
});

test('forward-auth: 401 and 3xx answers are denials too (challenge or Location passed on when listed)', async () => {
  const service = await startOrigin((req, res) => {
    if (req.url === '/login') res.writeHead(302, { location: 'https://sso.test/login' }).end();
    else res.writeHead(401, { 'www-authenticate': 'Bearer realm="sso"' }).end('{"error":"login"}');
  });
  stops.push(() => service.close());
  const headers = ['www-authenticate', 'location'];
  const unauthorized = requestContext();
  assert.equal(
    await runNode(
      create({ uri: `http://127.0.0.1:${service.port}/check`, client_headers: headers }),
      unauthorized,
    ),
    'denied',
  );
  assert.equal(unauthorized.response.status, 401);
  assert.equal(unauthorized.response.headers['www-authenticate'], 'Bearer realm="sso"');
  const redirect = requestContext();
  assert.equal(
    await runNode(
      create({ uri: `http://127.0.0.1:${service.port}/login`, client_headers: headers }),
      redirect,
    ),
    'denied',
  );
  assert.equal(redirect.response.status, 302);
  assert.equal(redirect.response.headers['location'], 'https://sso.test/login');
});

test('forward-auth: an unreachable auth service → 502 provider_error on error (FORWARD_AUTH_ERROR)', async () => {
  const port = await deadPort();
  const err = await fails(create({ uri: `http://127.0.0.1:${port}/verify` }), 502);
  assert.match(err.message, /forward-auth callout failed: .*refused/);
  assert.deepEqual(err.metadata, { uri: `http://127.0.0.1:${port}/verify` });
});

test('forward-auth: an auth service slower than timeout → 502 provider_error; status_on_error overrides', async () => {
  const hold = gate();
  const slow = await startOrigin(async (_req, res) => {
    await hold.wait;
    res.end();
  });
  stops.push(async () => {
    hold.release();
    await slow.close();
  });
  const started = Date.now();
  await fails(create({ uri: `http://127.0.0.1:${slow.port}/verify`, timeout: 150 }), 502);
  assert.ok(Date.now() - started >= 140);
  await fails(
    create({ uri: `http://127.0.0.1:${slow.port}/verify`, timeout: 100, status_on_error: 403 }),
    403,
  );
});

test('forward-auth: allow_degradation lets the request through when the service is down', async () => {
  const port = await deadPort();
  const node = create({ uri: `http://127.0.0.1:${port}/verify`, allow_degradation: true });
  assert.equal(await runNode(node, requestContext()), 'success');
});

test('forward-auth: config rejections', () => {
  assertSchemaRejects(() => instantiate(forwardAuth, {}), 'uri');
  assertConfigError(() => instantiate(forwardAuth, { uri: 'auth-service/verify' }), 'uri', /absolute URL/);
  assertConfigError(() => instantiate(forwardAuth, { uri: 'ftp://auth/verify' }), 'uri', /http/);
  assertSchemaRejects(
    () => instantiate(forwardAuth, { uri: 'http://a/v', request_method: 'PUT' }),
    'request_method',
  );
  assertSchemaRejects(() => instantiate(forwardAuth, { uri: 'http://a/v', timeout: 0 }), 'timeout');
  assertSchemaRejects(
    () => instantiate(forwardAuth, { uri: 'http://a/v', status_on_error: 200 }),
    'status_on_error',
  );
  assertSchemaRejects(
    () => instantiate(forwardAuth, { uri: 'http://a/v', request_headers: 'authorization' }),
    'request_headers',
  );
  assertSchemaRejects(() => instantiate(forwardAuth, { uri: 'http://a/v', keepalive: true }), 'keepalive');
});

test('forward-auth: E2E-FAUTH-01..03 and a provider failure through a real gateway', async () => {
  const service = await authService();
  const backend = await startOrigin(echo('backend'));
  stops.push(() => backend.close());
  const dead = await deadPort();
  const policy = (name: string, uri: string) => `
  - name: ${name}
    nodes:
      - { id: listener, type: listener }
      - id: fauth
        type: forward-auth
        config: { uri: "${uri}", upstream_headers: [x-auth-user], client_headers: [x-deny-reason] }
      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${backend.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: fauth.in }
      - { from: fauth.success, to: backend.in }
      - { from: fauth.denied, to: client.in }
      - { from: fauth.error, to: client.in }
      - { from: backend.success, to: client.in }`;
  const gw = await startGateway(`
routes:
  - { name: fauth-api, match: { path: /fauth/* }, policy: fauth }
  - { name: down-api, match: { path: /down/* }, policy: down }
policies:${policy('fauth', `http://127.0.0.1:${service.port}/forward-auth/verify`)}${policy('down', `http://127.0.0.1:${dead}/verify`)}
`);
  stops.push(() => gw.stop());

  const allowed = await request(`${gw.url}/fauth/allow/resource`);
  assert.equal(allowed.status, 200);
  const seen = JSON.parse(allowed.body) as { headers: Record<string, string> };
  assert.equal(seen.headers['x-auth-user'], 'alice');

  const denied = await request(`${gw.url}/fauth/deny/resource`);
  assert.equal(denied.status, 403);
  assert.equal(denied.headers['x-deny-reason'], 'forbidden-by-mock');
  assert.equal(denied.body, 'denied');
  assert.equal(backend.requests.length, 1, 'a denied request never reaches the upstream');

  const down = await request(`${gw.url}/down/x`);
  assert.equal(down.status, 502);
  assert.equal((JSON.parse(down.body) as { error: string }).error, 'provider_error');
  assert.equal(down.headers['www-authenticate'], undefined);
});
