import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mocking } from '../../../src/plugins/errors-and-mocking/mocking.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import {
  assertConfigError,
  assertSchemaRejects,
  bodyText,
  runNow,
  templatedEnv,
} from '../../support/node-run.js';

test('mocking: response_example with status, content type, headers and the mock header', () => {
  const node = instantiate(
    mocking,
    {
      response_example: '{"path": "$uri", "m": "{{request.method}}"}',
      response_status: 201,
      response_headers: { 'X-Tenant': '$http_x_tenant', 'x-n': 7 },
    },
    templatedEnv(),
  );
  const ctx = requestContext({ url: '/orders/1', headers: { host: 'h', 'x-tenant': 'acme' } });
  assert.equal(runNow(node, ctx), 'success');
  assert.equal(ctx.response.status, 201);
  assert.deepEqual(JSON.parse(bodyText(ctx)), { path: '/orders/1', m: 'GET' });
  assert.equal(ctx.response.headers['content-type'], 'application/json;charset=utf8');
  assert.equal(ctx.response.headers['x-tenant'], 'acme');
  assert.equal(ctx.response.headers['x-n'], '7');
  assert.equal(ctx.response.headers['x-mock-by'], 'switchyard-mocking');
});

test('mocking: with_mock_header false leaves the mock header out', () => {
  const ctx = requestContext();
  runNow(instantiate(mocking, { response_example: 'x', with_mock_header: false }, templatedEnv()), ctx);
  assert.equal(ctx.response.headers['x-mock-by'], undefined);
});

test('mocking: delay waits before answering', async () => {
  const node = instantiate(mocking, { response_example: 'late', delay: 0.05 }, templatedEnv());
  const started = Date.now();
  const ctx = requestContext();
  assert.equal(await node.run(ctx), 'success');
  assert.ok(Date.now() - started >= 45);
  assert.equal(bodyText(ctx), 'late');
});

test('mocking: response_schema generates a body of the schema on each request', () => {
  const node = instantiate(
    mocking,
    {
      response_schema: {
        type: 'object',
        properties: {
          id: { type: 'integer', minimum: 10, maximum: 20 },
          name: { type: 'string', minLength: 3, maxLength: 5 },
          status: { type: 'string', enum: ['active', 'closed'] },
          plan: { type: 'string', example: 'pro' },
          ok: { type: 'boolean' },
          tags: { type: 'array', items: { type: 'string' }, minItems: 2, maxItems: 2 },
          owner: { $ref: '#/definitions/user' },
          price: { type: 'number', minimum: 1, maximum: 2 },
        },
        definitions: { user: { type: 'object', properties: { email: { type: 'string', format: 'email' } } } },
      },
    },
    templatedEnv(),
  );
  for (let i = 0; i < 20; i++) {
    const ctx = requestContext();
    runNow(node, ctx);
    const doc = JSON.parse(bodyText(ctx)) as Record<string, unknown>;
    assert.ok(Number.isInteger(doc.id) && (doc.id as number) >= 10 && (doc.id as number) <= 20);
    assert.match(doc.name as string, /^[A-Za-z0-9]{3,5}$/);
    assert.ok(['active', 'closed'].includes(doc.status as string));
    assert.equal(doc.plan, 'pro');
    assert.equal(typeof doc.ok, 'boolean');
    assert.equal((doc.tags as unknown[]).length, 2);
    assert.match((doc.owner as { email: string }).email, /@example\.com$/);
    assert.ok((doc.price as number) >= 1 && (doc.price as number) <= 2);
  }
});

test('mocking: response_example wins over response_schema, with a load warning', () => {
  const env = templatedEnv();
  const ctx = requestContext();
  runNow(instantiate(mocking, { response_example: 'fixed', response_schema: { type: 'object' } }, env), ctx);
  assert.equal(bodyText(ctx), 'fixed');
  assert.ok(env.warnings.some((w) => w.key === 'response_schema'));
});

test('mocking: config rejections', () => {
  assertConfigError(() => instantiate(mocking, {}), 'response_example', /response_schema/);
  assertConfigError(
    () => instantiate(mocking, { response_example: 'x', content_type: 'image/png' }),
    'content_type',
  );
  assertConfigError(
    () => instantiate(mocking, { response_schema: { $ref: 'http://elsewhere/schema' } }),
    'response_schema',
  );
  assertSchemaRejects(
    () => instantiate(mocking, { response_example: 'x', response_status: 700 }),
    'response_status',
  );
  assertSchemaRejects(() => instantiate(mocking, { response_schema: 'not a schema' }), 'response_schema');
});
