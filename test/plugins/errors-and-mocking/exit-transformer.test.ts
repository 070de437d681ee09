import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exitTransformer } from '../../../src/plugins/errors-and-mocking/exit-transformer.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertSchemaRejects, bodyText, runNow, templatedEnv } from '../../support/node-run.js';

function gatewayExit(status = 502) {
  const ctx = requestContext({ url: '/orders' });
  ctx.errors.push({ node_id: 'up', code: 'UPSTREAM_CONNECTION_ERROR', message: 'refused', metadata: {} });
  ctx.response.json(status, { error: 'bad_gateway', message: 'refused' });
  return ctx;
}

test('exit-transformer: remaps the status, then renders the body ($status is the new status)', () => {
  const node = instantiate(
    exitTransformer,
    { status_map: { '502': 503, '401': 403 }, body: '{"status": $status, "path": "{{request.path}}"}' },
    templatedEnv(),
  );
  const ctx = gatewayExit();
  assert.equal(runNow(node, ctx), 'success');
  assert.equal(ctx.response.status, 503);
  assert.deepEqual(JSON.parse(bodyText(ctx)), { status: 503, path: '/orders' });
  assert.equal(ctx.response.headers['content-type'], 'application/json', 'content type kept');
});

test('exit-transformer: a status without a mapping keeps its value', () => {
  const ctx = gatewayExit(500);
  runNow(instantiate(exitTransformer, { status_map: { '502': 503 } }, templatedEnv()), ctx);
  assert.equal(ctx.response.status, 500);
});

test('exit-transformer: upstream responses (no recorded error) pass untouched unless always', () => {
  const node = instantiate(exitTransformer, { status_map: { '502': 503 }, body: 'x' }, templatedEnv());
  const clean = requestContext();
  clean.response.status = 502;
  clean.response.setBody('from upstream');
  runNow(node, clean);
  assert.equal(clean.response.status, 502);
  assert.equal(bodyText(clean), 'from upstream');
  const always = instantiate(exitTransformer, { status_map: { '502': 503 }, always: true }, templatedEnv());
  runNow(always, clean);
  assert.equal(clean.response.status, 503);
});

test('exit-transformer: a body referencing $resp_body reads the response body (streaming inference)', () => {
  const reads = (c: object): boolean => exitTransformer.readsResponseBody!(c as never);
  assert.equal(reads({ status_map: {}, always: false, body: '$status' }), false);
  assert.equal(reads({ status_map: {}, always: false, body: 'was: $resp_body' }), true);
  assert.equal(reads({ status_map: {}, always: false, body: '{{response.body}}' }), true);
});

test('exit-transformer: config rejections', () => {
  assertSchemaRejects(() => instantiate(exitTransformer, { status_map: { abc: 503 } }), 'status_map');
  assertSchemaRejects(() => instantiate(exitTransformer, { status_map: { '502': 700 } }), 'status_map[502]');
  assertSchemaRejects(() => instantiate(exitTransformer, { functions: [] }), 'functions');
});
