import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requestId } from '../../../src/plugins/core/request-id.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, runNow, templatedEnv } from '../../support/node-run.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('request-id: a uuid v4 is generated when absent and echoed on the response', () => {
  const ctx = requestContext();
  assert.equal(instantiate(requestId, {}).run(ctx), 'success');
  const id = ctx.request.headers['x-request-id'] as string;
  assert.match(id, UUID);
  assert.equal(ctx.response.headers['x-request-id'], id);
});

test('request-id: a client-supplied id is kept; an empty one is replaced', () => {
  const node = instantiate(requestId, {});
  const kept = requestContext({ headers: { host: 'gw', 'x-request-id': 'client-1' } });
  runNow(node, kept);
  assert.equal(kept.request.headers['x-request-id'], 'client-1');
  assert.equal(kept.response.headers['x-request-id'], 'client-1');
  const empty = requestContext({ headers: { host: 'gw', 'x-request-id': '' } });
  runNow(node, empty);
  assert.match(empty.request.headers['x-request-id'] as string, UUID);
});

test('request-id: an id already on the response wins; include_in_response false leaves it alone', () => {
  const ctx = requestContext();
  ctx.response.headers['x-request-id'] = 'upstream-id';
  runNow(instantiate(requestId, {}), ctx);
  assert.equal(ctx.response.headers['x-request-id'], 'upstream-id');
  const quiet = requestContext();
  runNow(instantiate(requestId, { include_in_response: false }), quiet);
  assert.equal(quiet.response.headers['x-request-id'], undefined);
});

test('request-id: nanoid gives 21 URL-safe characters; range_id follows char_set and length', () => {
  const nano = requestContext();
  runNow(instantiate(requestId, { algorithm: 'nanoid', header_name: 'X-Trace' }), nano);
  assert.match(nano.request.headers['x-trace'] as string, /^[A-Za-z0-9_-]{21}$/);
  const ids = new Set<string>();
  const node = instantiate(requestId, { algorithm: 'range_id', range_id: { char_set: 'ab', length: 32 } });
  for (let i = 0; i < 50; i++) {
    const ctx = requestContext();
    runNow(node, ctx);
    const id = ctx.request.headers['x-request-id'] as string;
    assert.match(id, /^[ab]{32}$/);
    ids.add(id);
  }
  assert.equal(ids.size, 50);
  const dflt = requestContext();
  runNow(instantiate(requestId, { algorithm: 'range_id' }), dflt);
  assert.match(dflt.request.headers['x-request-id'] as string, /^[A-Za-z0-9]{16}$/);
});

test('request-id: header_name is templated and lowercased', () => {
  const node = instantiate(requestId, { header_name: 'X-{{request.headers.x-tenant}}-Id' }, templatedEnv());
  const ctx = requestContext({ headers: { host: 'gw', 'x-tenant': 'Acme' } });
  runNow(node, ctx);
  assert.match(ctx.request.headers['x-acme-id'] as string, UUID);
  assert.equal(ctx.response.headers['x-acme-id'], ctx.request.headers['x-acme-id']);
});

test('request-id: only a header_name that renders the response body counts for streaming', () => {
  const reads = (config: Record<string, unknown>) =>
    requestId.readsResponseBody?.({
      header_name: 'X-Request-Id',
      include_in_response: true,
      algorithm: 'uuid',
      range_id: { char_set: 'a', length: 1 },
      ...config,
    });
  assert.equal(reads({}), false);
  assert.equal(reads({ header_name: 'x-response-body-id' }), false);
  assert.equal(reads({ header_name: 'x-id-{{ response.body }}' }), true);
});

test('request-id: config rejections — unknown algorithm, bad header name, bad range_id', () => {
  assertSchemaRejects(() => instantiate(requestId, { algorithm: 'ksuid' }), 'algorithm');
  assertConfigError(
    () => instantiate(requestId, { header_name: 'bad header' }, templatedEnv()),
    'header_name',
  );
  assertSchemaRejects(() => instantiate(requestId, { range_id: { length: 0 } }), 'range_id.length');
  assertSchemaRejects(() => instantiate(requestId, { range_id: { size: 3 } }), 'range_id.size');
});
