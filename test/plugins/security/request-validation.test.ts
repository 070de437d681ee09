import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { requestValidation } from '../../../src/plugins/security/request-validation.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { echo, startOrigin, type Origin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { LINEAR_BOUND_MS, REDOS_VALUE_RULE, redosInput, timed } from '../../support/redos.js';
import { assertConfigError, assertSchemaRejects, runNow, templatedEnv } from '../../support/node-run.js';
import { responseJson } from '../../support/assertions.js';

const NAME_SCHEMA = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1 }, age: { type: 'integer' } },
};

function post(body: string, contentType = 'application/json', headers: Record<string, string> = {}) {
  return requestContext({
    method: 'POST',
    headers: { host: 'gw', 'content-type': contentType, ...headers },
    body: Buffer.from(body),
  });
}

test('request-validation: a body that matches body_schema leaves by success, unchanged', () => {
  const node = instantiate(requestValidation, { body_schema: NAME_SCHEMA });
  const ctx = post('{"name":  "jack", "age": 3}');
  assert.equal(runNow(node, ctx), 'success');
  assert.equal(ctx.request.body?.toString(), '{"name":  "jack", "age": 3}');
});

test('request-validation: a body that fails body_schema is denied with 400 validation_failed and the detail', () => {
  const node = instantiate(requestValidation, { body_schema: NAME_SCHEMA });
  const ctx = post('{"age": "three"}');
  assert.equal(runNow(node, ctx), 'denied');
  assert.equal(ctx.response.status, 400);
  const body = responseJson(ctx) as { error: string; message: string };
  assert.equal(body.error, 'validation_failed');
  assert.match(body.message, /^body validation failed: body must have required property 'name'/);
  assert.equal(ctx.errors.length, 0);
});

test('request-validation: an empty or undecodable body is denied when body_schema is set', () => {
  const node = instantiate(requestValidation, { body_schema: { type: 'object' } });
  const empty = post('');
  assert.equal(runNow(node, empty), 'denied');
  assert.deepEqual(responseJson(empty), { error: 'validation_failed', message: 'request body is required' });
  const junk = post('not json');
  assert.equal(runNow(node, junk), 'denied');
  assert.match((responseJson(junk) as { message: string }).message, /^failed to decode the request body/);
});

test('request-validation: form-urlencoded bodies validate as a flat object', () => {
  const node = instantiate(requestValidation, {
    body_schema: {
      type: 'object',
      required: ['user'],
      properties: { user: { type: 'string', minLength: 2 } },
    },
  });
  assert.equal(
    runNow(node, post('user=jack&note=hello%20world', 'application/x-www-form-urlencoded')),
    'success',
  );
  assert.equal(runNow(node, post('note=only', 'application/x-www-form-urlencoded')), 'denied');
});

test('request-validation: header_schema sees lowercase names, first values, coerced types', () => {
  const node = instantiate(requestValidation, {
    header_schema: {
      type: 'object',
      required: ['x-api-version'],
      properties: { 'x-api-version': { type: 'integer', enum: [2] } },
    },
  });
  assert.equal(runNow(node, requestContext({ headers: { host: 'gw', 'x-api-version': '2' } })), 'success');
  const missing = requestContext();
  assert.equal(runNow(node, missing), 'denied');
  assert.match(
    (responseJson(missing) as { message: string }).message,
    /^header validation failed: headers must have/,
  );
  assert.equal(runNow(node, requestContext({ headers: { host: 'gw', 'x-api-version': '3' } })), 'denied');
});

test('request-validation: rejected_code and a templated rejected_msg replace status and detail', () => {
  const node = instantiate(
    requestValidation,
    { body_schema: { type: 'object' }, rejected_code: 422, rejected_msg: 'bad payload for {{request.path}}' },
    templatedEnv(),
  );
  const ctx = post('[1,2,3]');
  assert.equal(runNow(node, ctx), 'denied');
  assert.equal(ctx.response.status, 422);
  assert.deepEqual(responseJson(ctx), { error: 'validation_failed', message: 'bad payload for /' });
});

const CONDITIONS = [
  ['http_authorization', 'present'],
  ['http_authorization', 'contains', 'Bearer'],
  ['OR', ['$.user.email', 'present'], ['NOT', ['$.user.id', 'is_null']]],
];

test('request-validation: conditions pass, or deny with "request conditions not satisfied"', () => {
  const node = instantiate(requestValidation, { conditions: CONDITIONS, rejected_code: 401 });
  const ok = post('{"user":{"email":"a@b.c"}}', 'application/json', { authorization: 'Bearer tok' });
  assert.equal(runNow(node, ok), 'success');
  const no = post('{"user":{"id":null}}', 'application/json', { authorization: 'Bearer tok' });
  assert.equal(runNow(node, no), 'denied');
  assert.equal(no.response.status, 401);
  assert.deepEqual(responseJson(no), {
    error: 'validation_failed',
    message: 'request conditions not satisfied',
  });
});

test('request-validation: schemas run before conditions', () => {
  const node = instantiate(requestValidation, {
    body_schema: NAME_SCHEMA,
    conditions: [['http_x_never', 'present']],
  });
  const ctx = post('{}');
  runNow(node, ctx);
  assert.match((responseJson(ctx) as { message: string }).message, /^body validation failed/);
});

test('request-validation: only conditions over response_body count for streaming', () => {
  const reads = (conditions?: unknown[]) =>
    requestValidation.readsResponseBody?.({ rejected_code: 400, ...(conditions ? { conditions } : {}) });
  assert.equal(reads(), false);
  assert.equal(reads(CONDITIONS), false);
  assert.equal(reads([['response_body:$.ok', '==', true]]), true);
});

test('request-validation: config rejections — no check at all, invalid schema, bad conditions, bad status', () => {
  assertConfigError(() => instantiate(requestValidation, {}), '');
  assertConfigError(
    () => instantiate(requestValidation, { body_schema: { type: 'strng' } }),
    'body_schema',
    /JSON Schema/,
  );
  assertConfigError(
    () => instantiate(requestValidation, { header_schema: { properties: { a: { minLength: -1 } } } }),
    'header_schema',
  );
  assert.throws(() => instantiate(requestValidation, { conditions: [['http_a', 'no-such-op', 'x']] }), {
    name: 'ConfigError',
  });
  assertSchemaRejects(() => instantiate(requestValidation, { body_schema: 'x' }), 'body_schema');
  assertSchemaRejects(
    () => instantiate(requestValidation, { body_schema: {}, rejected_code: 600 }),
    'rejected_code',
  );
});

let gw: RunningGateway;
let origin: Origin;

before(async () => {
  origin = await startOrigin(echo('vc'));
  gw = await startGateway(`
routes:
  - { name: vc-route, match: { path: /conditions/* }, policy: vc-policy }
policies:
  - name: vc-policy
    nodes:
      - { id: listener, type: listener }
      - id: validate
        type: request-validation
        config:
          rejected_code: 401
          conditions: ${JSON.stringify(CONDITIONS)}
      - { id: echo-backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: validate.in }
      - { from: validate.success, to: echo-backend.in }
      - { from: validate.denied, to: client.in }
      - { from: echo-backend.success, to: client.in }
`);
});

after(async () => {
  await gw.stop();
  await origin.close();
});

async function send(headers: Record<string, string>, body: unknown): Promise<Response> {
  return fetch(`${gw.url}/conditions/x`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const DENIED = { error: 'validation_failed', message: 'request conditions not satisfied' };

test('request-validation: E2E-VC-01 bearer auth and an email reach the upstream (200)', async () => {
  const before = origin.requests.length;
  const res = await send({ authorization: 'Bearer tok' }, { user: { email: 'a@b.c' } });
  assert.equal(res.status, 200);
  assert.equal(((await res.json()) as { origin: string }).origin, 'vc');
  assert.equal(origin.requests.length, before + 1);
});

test('request-validation: E2E-VC-02 no authorization header → 401 validation_failed', async () => {
  const res = await send({}, { user: { email: 'a@b.c' } });
  assert.equal(res.status, 401);
  assert.deepEqual(await res.json(), DENIED);
});

test('request-validation: E2E-VC-03 a Basic scheme fails the contains "Bearer" rule → 401', async () => {
  const res = await send({ authorization: 'Basic xyz' }, { user: { email: 'a@b.c' } });
  assert.equal(res.status, 401);
  assert.deepEqual(await res.json(), DENIED);
});

test('request-validation: E2E-VC-04 no email and a null id fail the OR group → 401', async () => {
  const res = await send({ authorization: 'Bearer tok' }, { user: { id: null } });
  assert.equal(res.status, 401);
  assert.deepEqual(await res.json(), DENIED);
});

test('request-validation: E2E-VC-05 a non-null id satisfies NOT is_null → 200', async () => {
  const res = await send({ authorization: 'Bearer tok' }, { user: { id: 7 } });
  assert.equal(res.status, 200);
});

test('request-validation: M3 a nested-quantifier schema pattern checks a crafted field in linear time', () => {
  const schema = { type: 'object', properties: { name: { type: 'string', pattern: REDOS_VALUE_RULE } } };
  const node = instantiate(requestValidation, { body_schema: schema });
  const run = timed(() => runNow(node, post(JSON.stringify({ name: redosInput(30) }))));
  assert.equal(run.value, 'denied');
  assert.ok(run.ms < LINEAR_BOUND_MS, `took ${run.ms.toFixed(1)} ms`);
  assert.equal(runNow(node, post('{"name":"aaa"}')), 'success');
});

test('request-validation: M3 a schema pattern that needs backtracking is refused at load', () => {
  assertConfigError(
    () =>
      instantiate(requestValidation, {
        body_schema: { type: 'object', properties: { p: { type: 'string', pattern: '^(?=.*\\d).{8,}$' } } },
      }),
    'body_schema',
    /lookahead/,
  );
});
