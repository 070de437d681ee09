import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorPage } from '../../../src/plugins/errors-and-mocking/error-page.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertSchemaRejects, bodyText, runNow, templatedEnv } from '../../support/node-run.js';

function gatewayError(status: number) {
  const ctx = requestContext({ url: '/missing' });
  ctx.errors.push({ node_id: 'up', code: 'X', message: 'x', metadata: {} });
  ctx.response.json(status, { error: 'e' });
  ctx.response.headers['content-encoding'] = 'gzip';
  return ctx;
}

test('error-page: a configured page replaces the body and content type of a gateway error', () => {
  const node = instantiate(
    errorPage,
    {
      error_502: {
        body: '{"error": "upstream down", "path": "{{request.path}}"}',
        content_type: 'application/json',
      },
    },
    templatedEnv(),
  );
  const ctx = gatewayError(502);
  assert.equal(runNow(node, ctx), 'success');
  assert.equal(ctx.response.status, 502);
  assert.deepEqual(JSON.parse(bodyText(ctx)), { error: 'upstream down', path: '/missing' });
  assert.equal(ctx.response.headers['content-type'], 'application/json');
  assert.equal(ctx.response.headers['content-encoding'], undefined);
});

test('error-page: {} selects the built-in HTML page', () => {
  const ctx = gatewayError(503);
  runNow(instantiate(errorPage, { error_503: {} }, templatedEnv()), ctx);
  assert.match(bodyText(ctx), /<h1>503 Service Unavailable<\/h1>/);
  assert.equal(ctx.response.headers['content-type'], 'text/html');
});

test('error-page: statuses without a page, and upstream responses without errors, pass untouched', () => {
  const node = instantiate(errorPage, { error_404: {}, error_500: {} }, templatedEnv());
  const other = gatewayError(502);
  runNow(node, other);
  assert.deepEqual(JSON.parse(bodyText(other)), { error: 'e' });
  const upstream = requestContext();
  upstream.response.status = 404;
  upstream.response.setBody('upstream 404');
  runNow(node, upstream);
  assert.equal(bodyText(upstream), 'upstream 404');
});

test('error-page: config rejections', () => {
  assertSchemaRejects(() => instantiate(errorPage, { error_418: {} }), 'error_418');
  assertSchemaRejects(
    () => instantiate(errorPage, { error_404: { body: 1, color: 'red' } }),
    'error_404.color',
  );
  assertSchemaRejects(() => instantiate(errorPage, { error_404: 'page' }), 'error_404');
});
