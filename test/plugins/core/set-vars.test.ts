import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { setVars } from '../../../src/plugins/core/set-vars.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { echo, startOrigin, type Origin } from '../../support/origins.js';
import { request } from '../../support/http.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, runNow, templatedEnv } from '../../support/node-run.js';

test('set-vars: map form renders templates into context.message, overwriting', () => {
  const node = instantiate(
    setVars,
    {
      vars: {
        tenant: '{{request.headers.x-tenant}}',
        'route.key': '{{request.method}}:{{request.path}}',
        n: 5,
      },
    },
    templatedEnv(),
  );
  const ctx = requestContext({ url: '/a', headers: { host: 'h', 'x-tenant': 'acme' } });
  ctx.message.tenant = 'old';
  assert.equal(runNow(node, ctx), 'success');
  assert.equal(ctx.message.tenant, 'acme');
  assert.equal(ctx.message['route.key'], 'GET:/a');
  assert.equal(ctx.message.n, '5');
});

test('set-vars: list form — value takes {{…}} only, from also takes legacy $var', () => {
  const node = instantiate(
    setVars,
    {
      vars: [
        { name: 'a', value: '{{request.method}} $keep' },
        { name: 'b', from: '$http_x_tenant/{{client.ip}}' },
      ],
    },
    templatedEnv(),
  );
  const ctx = requestContext({ headers: { host: 'h', 'x-tenant': 'acme' } });
  runNow(node, ctx);
  assert.equal(ctx.message.a, 'GET $keep');
  assert.equal(ctx.message.b, 'acme/192.0.2.10');
});

test('set-vars: entries render against the context as it entered (no chaining inside one node)', () => {
  const node = instantiate(setVars, { vars: { a: 'hello', b: '[{{message.a}}]' } }, templatedEnv());
  const ctx = requestContext();
  runNow(node, ctx);
  assert.equal(ctx.message.b, '[]');
  assert.equal(ctx.message.a, 'hello');
});

test('set-vars: after an upstream, response fields hold the real response', () => {
  const node = instantiate(setVars, { vars: { status: '{{response.status}}' } }, templatedEnv());
  const ctx = requestContext();
  ctx.response.status = 201;
  runNow(node, ctx);
  assert.equal(ctx.message.status, '201');
});

test('set-vars: config rejections', () => {
  assertSchemaRejects(() => instantiate(setVars, {}), 'vars');
  assertSchemaRejects(() => instantiate(setVars, { vars: {} }), 'vars');
  assertSchemaRejects(() => instantiate(setVars, { vars: [] }), 'vars');
  assertConfigError(() => instantiate(setVars, { vars: { 'bad name': 'x' } }), 'vars.bad name', /A-Z/);
  assertConfigError(() => instantiate(setVars, { vars: { __internal: 'x' } }), 'vars.__internal', /reserved/);
  assertConfigError(
    () =>
      instantiate(setVars, {
        vars: [
          { name: 'a', value: 'x' },
          { name: 'a', value: 'y' },
        ],
      }),
    'vars[1]',
    /duplicate/,
  );
  assertConfigError(() => instantiate(setVars, { vars: [{ name: '', value: 'x' }] }), 'vars[0]');
  assertConfigError(() => instantiate(setVars, { vars: [{ name: 'a' }] }), 'vars[0]', /no value/);
  assertConfigError(() => instantiate(setVars, { vars: [{ name: 'a', value: 'x', from: 'y' }] }), 'vars[0]');
});

const gateways: RunningGateway[] = [];
const origins: Origin[] = [];
after(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await Promise.all(origins.map((o) => o.close()));
});

test('set-vars: E2E-SV-01 set-vars → message.tenant → proxy-rewrite header at the upstream', async () => {
  const origin = await startOrigin(echo('api'));
  origins.push(origin);
  const gw = await startGateway(`
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: vars, type: set-vars, config: { vars: { tenant: '{{request.headers.x-tenant-id}}' } } }
      - { id: rw, type: proxy-rewrite, config: { add_headers: { x-tenant: '{{message.tenant}}' } } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: vars.in }
      - { from: vars.success, to: rw.in }
      - { from: rw.success, to: up.in }
      - { from: up.success, to: client.in }
`);
  gateways.push(gw);
  const res = await request(`${gw.url}/x`, { headers: { 'x-tenant-id': 'acme' } });
  assert.equal(res.status, 200);
  assert.equal(origin.requests[0]?.headers['x-tenant'], 'acme');
});
