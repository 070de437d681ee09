import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requestSizeLimit } from '../../../src/plugins/security/request-size-limit.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertSchemaRejects } from '../../support/node-run.js';
import { responseJson } from '../../support/assertions.js';

const post = (body: string | null) =>
  requestContext({ method: 'POST', body: body === null ? null : Buffer.from(body) });

test('request-size-limit: a body up to max_bytes leaves by success (the limit itself included)', () => {
  const node = instantiate(requestSizeLimit, { max_bytes: 5 });
  assert.equal(node.run(post('12345')), 'success');
  assert.equal(node.run(post(null)), 'success');
  assert.equal(instantiate(requestSizeLimit, { max_bytes: 0 }).run(post('')), 'success');
});

test('request-size-limit: a larger body is denied with 413 payload_too_large', () => {
  const ctx = post('123456');
  assert.equal(instantiate(requestSizeLimit, { max_bytes: 5 }).run(ctx), 'denied');
  assert.equal(ctx.response.status, 413);
  assert.deepEqual(responseJson(ctx), {
    error: 'payload_too_large',
    message: 'Request body exceeds size limit',
  });
});

test('request-size-limit: the default limit is 1 MiB', () => {
  const node = instantiate(requestSizeLimit, {});
  assert.equal(node.run(post('x'.repeat(1048576))), 'success');
  assert.equal(node.run(post('x'.repeat(1048577))), 'denied');
});

test('request-size-limit: config rejections — negative or non-integer max_bytes, unknown key', () => {
  assertSchemaRejects(() => instantiate(requestSizeLimit, { max_bytes: -1 }), 'max_bytes');
  assertSchemaRejects(() => instantiate(requestSizeLimit, { max_bytes: 1.5 }), 'max_bytes');
  assertSchemaRejects(() => instantiate(requestSizeLimit, { limit: 5 }), 'limit');
});
