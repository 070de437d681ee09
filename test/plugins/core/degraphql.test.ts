import assert from 'node:assert/strict';
import { test } from 'node:test';
import { degraphql } from '../../../src/plugins/core/degraphql.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, failsWith, runNow } from '../../support/node-run.js';

const QUERY = 'query ($name: String!, $age: Int) { persons(filter: { name: $name, age: $age }) { id name } }';

test('degraphql: a GET becomes a GraphQL POST, variables from the query string', () => {
  const node = instantiate(degraphql, { query: QUERY, variables: ['name', 'age'], operation_name: 'q' });
  const ctx = requestContext({ url: '/persons?name=ada', headers: { host: 'h', 'content-length': '0' } });
  assert.equal(runNow(node, ctx), 'success');
  assert.equal(ctx.request.method, 'POST');
  assert.equal(ctx.request.headers['content-type'], 'application/json');
  assert.equal(ctx.request.headers['content-length'], undefined);
  assert.deepEqual(JSON.parse(ctx.request.body!.toString()), {
    query: QUERY,
    operationName: 'q',
    variables: { name: 'ada' },
  });
});

test('degraphql: a POST takes variables from the JSON body, query parameters first', () => {
  const node = instantiate(degraphql, { query: QUERY, variables: ['name', 'age'] });
  const ctx = requestContext({
    method: 'POST',
    url: '/p?name=q',
    body: Buffer.from('{"name":"b","age":36}'),
  });
  runNow(node, ctx);
  const sent = JSON.parse(ctx.request.body!.toString()) as { variables: unknown };
  assert.deepEqual(sent.variables, { name: 'q', age: 36 });
});

test('degraphql: without variables only the query is sent', () => {
  const ctx = requestContext();
  runNow(instantiate(degraphql, { query: '{ me { id } }' }), ctx);
  assert.deepEqual(JSON.parse(ctx.request.body!.toString()), { query: '{ me { id } }' });
});

test('degraphql: methods other than GET/POST → 405 METHOD_NOT_ALLOWED', async () => {
  const node = instantiate(degraphql, { query: QUERY });
  await failsWith(node, requestContext({ method: 'PUT' }), 'METHOD_NOT_ALLOWED', 405);
});

test('degraphql: a body needed for variables that is not JSON → 400 INVALID_REQUEST_BODY', async () => {
  const node = instantiate(degraphql, { query: QUERY, variables: ['name'] });
  await failsWith(
    node,
    requestContext({ method: 'POST', body: Buffer.from('name=x') }),
    'INVALID_REQUEST_BODY',
    400,
  );
});

test('degraphql: config rejections', () => {
  assertSchemaRejects(() => instantiate(degraphql, {}), 'query');
  assertSchemaRejects(() => instantiate(degraphql, { query: 'x'.repeat(1025) }), 'query');
  assertSchemaRejects(() => instantiate(degraphql, { query: QUERY, variables: [] }), 'variables');
  assertConfigError(() => instantiate(degraphql, { query: '{ a { b }' }), 'query', /unbalanced/);
  assertConfigError(() => instantiate(degraphql, { query: 'query' }), 'query', /selection/);
});
