import assert from 'node:assert/strict';
import { test } from 'node:test';
import { oasValidator } from '../../../src/plugins/security/oas-validator.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { LINEAR_BOUND_MS, REDOS_VALUE_RULE, redosInput, timed } from '../../support/redos.js';
import { assertConfigError, assertSchemaRejects, runNow, templatedEnv } from '../../support/node-run.js';
import { responseJson } from '../../support/assertions.js';

const SPEC = {
  openapi: '3.0.3',
  info: { title: 'users', version: '1' },
  servers: [{ url: 'https://api.example.com/v1' }],
  components: {
    schemas: {
      User: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string', minLength: 1 },
          email: { type: 'string', format: 'email', nullable: true },
        },
        additionalProperties: false,
      },
    },
    parameters: { Tenant: { name: 'X-Tenant', in: 'header', required: true, schema: { type: 'string' } } },
  },
  paths: {
    '/users': {
      get: {
        parameters: [
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100 } },
          { name: 'tags', in: 'query', schema: { type: 'array', items: { type: 'string' } }, explode: false },
        ],
      },
      post: {
        parameters: [{ $ref: '#/components/parameters/Tenant' }],
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: { $ref: '#/components/schemas/User' } },
            'application/x-www-form-urlencoded': {
              schema: {
                type: 'object',
                required: ['name'],
                properties: { name: { type: 'string' }, age: { type: 'integer' } },
              },
            },
          },
        },
      },
    },
    '/users/{id}': {
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }],
      get: {
        parameters: [
          { name: 'session', in: 'cookie', required: true, schema: { type: 'string', minLength: 4 } },
        ],
      },
    },
    '/users/me': { get: {} },
  },
};

function request(method: string, url: string, headers: Record<string, string> = {}, body?: string) {
  return requestContext({
    method,
    url,
    headers: { host: 'gw', ...headers },
    ...(body === undefined ? {} : { body: Buffer.from(body) }),
  });
}

const node = instantiate(oasValidator, { spec: SPEC });

function denied(ctx: ReturnType<typeof request>, message: RegExp, status = 400): void {
  assert.equal(runNow(node, ctx), 'denied');
  assert.equal(ctx.response.status, status);
  const body = responseJson(ctx) as { error: string; message: string };
  assert.equal(body.error, 'oas_validation_failed');
  assert.match(body.message, message);
}

test('oas-validator: a request that matches its operation leaves by success', () => {
  assert.equal(runNow(node, request('GET', '/users?limit=10&tags=a,b')), 'success');
  const json = request(
    'POST',
    '/users',
    { 'x-tenant': 't', 'content-type': 'application/json' },
    '{"name":"ann"}',
  );
  assert.equal(runNow(node, json), 'success');
  assert.equal(runNow(node, request('GET', '/users/7', { cookie: 'session=abcd' })), 'success');
});

test('oas-validator: query parameters are coerced and validated', () => {
  denied(request('GET', '/users?limit=0'), /^query parameter 'limit' must be >= 1/);
  denied(request('GET', '/users?limit=ten'), /^query parameter 'limit' must be integer/);
});

test('oas-validator: path parameters are validated; a concrete path wins over a template', () => {
  denied(request('GET', '/users/abc', { cookie: 'session=abcd' }), /^path parameter 'id' must be integer/);
  assert.equal(runNow(node, request('GET', '/users/me')), 'success');
});

test('oas-validator: required headers (through $ref) and cookies must be present', () => {
  denied(
    request('POST', '/users', { 'content-type': 'application/json' }, '{"name":"a"}'),
    /missing required header parameter 'x-tenant'/,
  );
  denied(request('GET', '/users/7'), /missing required cookie parameter 'session'/);
  denied(
    request('GET', '/users/7', { cookie: 'session=ab' }),
    /^cookie parameter 'session' must NOT have fewer than 4/,
  );
});

test('oas-validator: the JSON body is validated against the schema, $refs and nullable included', () => {
  const post = (body: string, type = 'application/json') =>
    request('POST', '/users', { 'x-tenant': 't', 'content-type': type }, body);
  assert.equal(runNow(node, post('{"name":"ann","email":null}')), 'success');
  denied(post('{"email":"a@b.c"}'), /^body validation failed: body must have required property 'name'/);
  denied(post('{"name":"ann","email":"nope"}'), /body\/email must match format "email"/);
  denied(post('{"name":'), /^failed to decode the request body/);
  denied(post(''), /^request body is required$/);
  denied(post('<user/>', 'application/xml'), /^unsupported content type 'application\/xml'$/);
});

test('oas-validator: form bodies are validated with coerced types', () => {
  const form = (body: string) =>
    request('POST', '/users', { 'x-tenant': 't', 'content-type': 'application/x-www-form-urlencoded' }, body);
  assert.equal(runNow(node, form('name=ann&age=3')), 'success');
  denied(form('name=ann&age=old'), /body\/age must be integer/);
});

test('oas-validator: requests no operation describes pass; the server base path is honoured', () => {
  assert.equal(runNow(node, request('GET', '/elsewhere')), 'success');
  assert.equal(runNow(node, request('DELETE', '/users')), 'success');
  denied(request('GET', '/v1/users?limit=0'), /limit/);
});

test('oas-validator: rejected_code and a templated rejected_msg shape the denial; YAML text specs load', () => {
  const yaml = `
openapi: 3.1.0
info: { title: t, version: "1" }
paths:
  /items/{id}:
    get:
      parameters:
        - { name: id, in: path, required: true, schema: { type: integer } }
`;
  const custom = instantiate(
    oasValidator,
    { spec: yaml, rejected_code: 422, rejected_msg: 'bad {{request.method}}' },
    templatedEnv(),
  );
  const ctx = request('GET', '/items/x');
  assert.equal(runNow(custom, ctx), 'denied');
  assert.equal(ctx.response.status, 422);
  assert.deepEqual(responseJson(ctx), { error: 'oas_validation_failed', message: 'bad GET' });
  assert.equal(runNow(custom, request('GET', '/items/3')), 'success');
});

test('oas-validator: config rejections — not OpenAPI 3, bad schema, unresolved $ref, bad parameter, bad status', () => {
  assertSchemaRejects(() => instantiate(oasValidator, {}), 'spec');
  assertConfigError(() => instantiate(oasValidator, { spec: { swagger: '2.0', paths: {} } }), 'spec.openapi');
  assertConfigError(() => instantiate(oasValidator, { spec: 'openapi: [' }), 'spec');
  assertConfigError(() => instantiate(oasValidator, { spec: { openapi: '3.0.0' } }), 'spec.paths');
  const op = (get: unknown) => ({ spec: { openapi: '3.0.0', paths: { '/a': { get } } } });
  assertConfigError(
    () =>
      instantiate(oasValidator, op({ parameters: [{ name: 'q', in: 'query', schema: { type: 'strng' } }] })),
    'spec.paths./a.get.parameters[0].schema',
    /JSON Schema/,
  );
  assertConfigError(
    () => instantiate(oasValidator, op({ parameters: [{ $ref: '#/components/parameters/Nope' }] })),
    'spec.paths./a.get.parameters[0].$ref',
  );
  assertConfigError(
    () => instantiate(oasValidator, op({ parameters: [{ $ref: 'other.yaml#/x' }] })),
    'spec.paths./a.get.parameters[0].$ref',
  );
  assertConfigError(
    () => instantiate(oasValidator, op({ parameters: [{ name: 'q', in: 'body' }] })),
    'spec.paths./a.get.parameters[0].in',
  );
  assertSchemaRejects(() => instantiate(oasValidator, { spec: SPEC, rejected_code: 302 }), 'rejected_code');
});

const patternSpec = (pattern: string) => ({
  openapi: '3.0.3',
  info: { title: 'p', version: '1' },
  paths: {
    '/items/{a}{b}': {
      parameters: [
        { name: 'a', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'b', in: 'path', required: true, schema: { type: 'string' } },
      ],
      get: { parameters: [{ name: 'q', in: 'query', schema: { type: 'string', pattern } }] },
    },
  },
});

test('oas-validator: M3 path templates and schema patterns run on the linear-time engine', () => {
  const node = instantiate(oasValidator, { spec: patternSpec(REDOS_VALUE_RULE) });
  // Adjacent templates compile to ([^/]+)([^/]+): quadratic on a backtracking engine.
  const path = timed(() => runNow(node, request('GET', `/items/${'x'.repeat(50_000)}/`)));
  assert.equal(path.value, 'success');
  assert.ok(path.ms < LINEAR_BOUND_MS, `path took ${path.ms.toFixed(1)} ms`);
  const query = timed(() => runNow(node, request('GET', `/items/ab?q=${redosInput(30)}`)));
  assert.equal(query.value, 'denied');
  assert.ok(query.ms < LINEAR_BOUND_MS, `pattern took ${query.ms.toFixed(1)} ms`);
  assert.equal(runNow(node, request('GET', '/items/ab?q=aaa')), 'success');
});

test('oas-validator: M3 a schema pattern that needs backtracking is refused at load', () => {
  assertConfigError(
    () => instantiate(oasValidator, { spec: patternSpec('^(?!admin)') }),
    'spec.paths./items/{a}{b}.get.parameters[0].schema',
    /lookahead/,
  );
});
