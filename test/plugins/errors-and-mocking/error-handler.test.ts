import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { errorHandler } from '../../../src/plugins/errors-and-mocking/error-handler.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { request } from '../../support/http.js';
import { deadPort } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertSchemaRejects, bodyText, runNow } from '../../support/node-run.js';

function failed() {
  const ctx = requestContext();
  ctx.errors.push({ node_id: 'first', code: 'A', message: 'older', metadata: {} });
  ctx.errors.push({ node_id: 'up', code: 'UPSTREAM_TIMEOUT', message: 'said "slow"', metadata: {} });
  ctx.response.status = 504;
  ctx.response.headers = { 'content-encoding': 'gzip', 'content-type': 'text/plain' };
  ctx.response.body = Buffer.from('x');
  return ctx;
}

test('error-handler: renders the last error with its own dialect, JSON-escaped, and forces JSON', () => {
  const node = instantiate(errorHandler, {
    status_code: 502,
    body_template: '{"code": "{{error.code}}", "msg": "{{ error.message }}", "node": "{{error.node_id}}"}',
  });
  const ctx = failed();
  assert.equal(runNow(node, ctx), 'success');
  assert.equal(ctx.response.status, 502);
  assert.deepEqual(JSON.parse(bodyText(ctx)), { code: 'UPSTREAM_TIMEOUT', msg: 'said "slow"', node: 'up' });
  assert.equal(ctx.response.headers['content-type'], 'application/json');
  assert.equal(ctx.response.headers['content-encoding'], undefined);
});

test('error-handler: defaults to 500 and the generic body; gateway templates are not rendered', () => {
  const ctx = failed();
  runNow(instantiate(errorHandler, {}), ctx);
  assert.equal(ctx.response.status, 500);
  assert.deepEqual(JSON.parse(bodyText(ctx)), {
    error: 'internal_error',
    message: 'An unexpected error occurred',
  });
  const literal = failed();
  runNow(instantiate(errorHandler, { body_template: '{"m": "{{request.method}}"}' }), literal);
  assert.equal(bodyText(literal), '{"m": "{{request.method}}"}');
});

test('error-handler: an errorless context passes completely untouched', () => {
  const ctx = requestContext();
  ctx.response.status = 401;
  ctx.response.setBody('{"error":"unauthorized"}', 'application/json');
  runNow(instantiate(errorHandler, { status_code: 500 }), ctx);
  assert.equal(ctx.response.status, 401);
  assert.equal(bodyText(ctx), '{"error":"unauthorized"}');
});

test('error-handler: content_type is accepted and ignored (the body is always JSON)', () => {
  const ctx = failed();
  runNow(instantiate(errorHandler, { content_type: 'text/html' }), ctx);
  assert.equal(ctx.response.headers['content-type'], 'application/json');
});

test('error-handler: config rejections', () => {
  assertSchemaRejects(() => instantiate(errorHandler, { status_code: 99 }), 'status_code');
  assertSchemaRejects(() => instantiate(errorHandler, { headers: {} }), 'headers');
});

const gateways: RunningGateway[] = [];
after(() => Promise.all(gateways.map((g) => g.stop())));

test('error-handler: E2E-DP-08 dead upstream → 502 error-handler JSON through the policy catch-all', async () => {
  const port = await deadPort();
  const gw = await startGateway(`
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    error_handler: eh
    nodes:
      - { id: listener, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - id: eh
        type: error-handler
        config: { status_code: 502, body_template: '{"error": "{{error.code}}", "node": "{{error.node_id}}"}' }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: up.in }
      - { from: up.success, to: client.in }
      - { from: eh.success, to: client.in }
`);
  gateways.push(gw);
  const res = await request(`${gw.url}/x`);
  assert.equal(res.status, 502);
  assert.equal(res.headers['content-type'], 'application/json');
  assert.deepEqual(JSON.parse(res.body), { error: 'UPSTREAM_CONNECTION_ERROR', node: 'up' });
});
