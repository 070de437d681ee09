import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { parse } from 'yaml';
import { checkGatewayShape } from '../../../src/config/gateway.js';
import { ConfigRejected } from '../../../src/config/schema-validate.js';
import { compileGateway } from '../../../src/engine/compile.js';
import { templateFactory } from '../../../src/engine/templates.js';
import { silentLogger } from '../../../src/core/logger.js';
import { registry } from '../../../src/plugins/index.js';
import { cors } from '../../../src/plugins/security/cors.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { echo, startOrigin, type Origin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { LINEAR_BOUND_MS, redosInput, timed } from '../../support/redos.js';
import { assertConfigError, assertSchemaRejects, runNow, templatedEnv } from '../../support/node-run.js';

const ORIGIN = 'https://app.example.com';

function preflight(headers: Record<string, string> = {}) {
  return requestContext({ method: 'OPTIONS', headers: { host: 'gw', origin: ORIGIN, ...headers } });
}

test('cors: OPTIONS preflight from an allowed origin leaves by preflight with a prepared 204', () => {
  const node = instantiate(cors, {
    allowed_origins: [ORIGIN],
    allowed_methods: ['GET', 'POST'],
    max_age: 50,
  });
  const ctx = preflight({ 'access-control-request-method': 'POST' });
  assert.equal(node.run(ctx), 'preflight');
  assert.equal(ctx.response.status, 204);
  assert.equal(ctx.response.body?.length, 0);
  const h = ctx.response.headers;
  assert.equal(h['access-control-allow-origin'], ORIGIN);
  assert.equal(h['access-control-allow-methods'], 'GET, POST');
  assert.equal(h['access-control-allow-headers'], '*');
  assert.equal(h['access-control-max-age'], '50');
  assert.equal(h.vary, 'Origin');
  assert.equal(h['access-control-allow-credentials'], undefined);
});

test('cors: defaults allow any origin with * and advertise the default methods and max-age', () => {
  const node = instantiate(cors, {});
  const ctx = preflight();
  assert.equal(node.run(ctx), 'preflight');
  const h = ctx.response.headers;
  assert.equal(h['access-control-allow-origin'], '*');
  assert.equal(h['access-control-allow-methods'], 'GET, POST, PUT, DELETE, OPTIONS');
  assert.equal(h['access-control-max-age'], '3600');
  assert.equal(h.vary, undefined);
});

test('cors: an actual request from an allowed origin leaves by success with the CORS headers', () => {
  const node = instantiate(cors, {
    allowed_origins: [ORIGIN],
    expose_headers: ['x-total', 'x-page'],
    allow_credentials: true,
  });
  const ctx = requestContext({ method: 'GET', headers: { host: 'gw', origin: ORIGIN } });
  assert.equal(node.run(ctx), 'success');
  assert.equal(ctx.response.status, 0);
  const h = ctx.response.headers;
  assert.equal(h['access-control-allow-origin'], ORIGIN);
  assert.equal(h['access-control-allow-credentials'], 'true');
  assert.equal(h['access-control-expose-headers'], 'x-total, x-page');
  assert.equal(h['access-control-allow-methods'], undefined);
});

test('cors: a disallowed origin passes through success untouched, even an OPTIONS', () => {
  const node = instantiate(cors, { allowed_origins: [ORIGIN] });
  for (const method of ['GET', 'OPTIONS']) {
    const ctx = requestContext({ method, headers: { host: 'gw', origin: 'https://evil.example' } });
    assert.equal(node.run(ctx), 'success');
    assert.equal(ctx.response.status, 0);
    assert.deepEqual(ctx.response.headers, {});
  }
});

test('cors: a request without Origin gets no headers; origins are compared verbatim', () => {
  const node = instantiate(cors, { allowed_origins: [ORIGIN] });
  const none = requestContext({ method: 'GET' });
  assert.equal(node.run(none), 'success');
  assert.deepEqual(none.response.headers, {});
  const env = templatedEnv();
  const strict = instantiate(
    cors,
    { allowed_origins: ['https://APP.example.com', 'https://{{request.host}}'] },
    env,
  );
  for (const origin of [ORIGIN, 'https://gw']) {
    const ctx = requestContext({ method: 'OPTIONS', headers: { host: 'gw', origin } });
    assert.equal(strict.run(ctx), 'success', origin);
  }
});

test('cors: regex origins match when the exact list does not', () => {
  const node = instantiate(cors, { allowed_origins_by_regex: ['^https://[a-z]+\\.example\\.org$'] });
  const ok = requestContext({
    method: 'OPTIONS',
    headers: { host: 'gw', origin: 'https://api.example.org' },
  });
  assert.equal(node.run(ok), 'preflight');
  assert.equal(ok.response.headers['access-control-allow-origin'], 'https://api.example.org');
  const no = requestContext({
    method: 'OPTIONS',
    headers: { host: 'gw', origin: 'https://example.org.evil' },
  });
  assert.equal(node.run(no), 'success');
});

test('cors: allowed_methods and allowed_headers are templated per request', () => {
  const node = instantiate(
    cors,
    {
      allowed_origins: [ORIGIN],
      allowed_methods: ['GET', '{{request.headers.x-extra-method}}'],
      allowed_headers: ['{{request.headers.x-extra-header}}'],
    },
    templatedEnv(),
  );
  const ctx = preflight({ 'x-extra-method': 'PATCH', 'x-extra-header': 'x-custom' });
  assert.equal(node.run(ctx), 'preflight');
  assert.equal(ctx.response.headers['access-control-allow-methods'], 'GET, PATCH');
  assert.equal(ctx.response.headers['access-control-allow-headers'], 'x-custom');
});

test('cors: with credentials a wildcard echoes the origin and the requested headers', () => {
  const node = instantiate(cors, { allow_credentials: true });
  const ctx = preflight({ 'access-control-request-headers': 'x-a, x-b' });
  assert.equal(node.run(ctx), 'preflight');
  const h = ctx.response.headers;
  assert.equal(h['access-control-allow-origin'], ORIGIN);
  assert.equal(h['access-control-allow-credentials'], 'true');
  assert.equal(h['access-control-allow-headers'], 'x-a, x-b');
});

test('cors: max_age -1 omits the max-age header', () => {
  const ctx = preflight();
  runNow(instantiate(cors, { max_age: -1 }), ctx);
  assert.equal(ctx.response.headers['access-control-max-age'], undefined);
});

test('cors: legacy editor keys are accepted, ignored and warned about', () => {
  const env = templatedEnv();
  const node = instantiate(cors, { allow_origins: 'https://x', max_age_s: 5 }, env);
  const ctx = preflight();
  assert.equal(node.run(ctx), 'preflight');
  assert.equal(ctx.response.headers['access-control-allow-origin'], '*');
  assert.deepEqual(
    env.warnings.map((w) => w.key),
    ['allow_origins', 'max_age_s'],
  );
});

test('cors: config rejections — an invalid origin regex, an unknown key, a bad max_age', () => {
  assertConfigError(
    () => instantiate(cors, { allowed_origins_by_regex: ['ok', '(['] }),
    'allowed_origins_by_regex[1]',
  );
  assertSchemaRejects(() => instantiate(cors, { allowed_origin: ['x'] }), 'allowed_origin');
  assertSchemaRejects(() => instantiate(cors, { max_age: -2 }), 'max_age');
});

const policy = (edges: string) => `
routes:
  - { name: api, match: { path: /api/* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: cors, type: cors, config: { allowed_origins: ["${ORIGIN}"], allowed_methods: [GET, POST, OPTIONS] } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: 9 }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: cors.in }
      - { from: cors.success, to: up.in }
      - { from: up.success, to: client.in }
${edges}
`;

test('cors: E2E-API-13 a policy without the preflight edge is rejected with "must be wired — add an edge from"', () => {
  assert.throws(
    () =>
      compileGateway(checkGatewayShape(parse(policy(''))), {
        registry,
        logger: silentLogger,
        env: {},
        templateFactory: templateFactory({}),
      }),
    (err: unknown) => {
      assert.ok(err instanceof ConfigRejected);
      assert.match(
        err.message,
        /output port 'preflight' of node 'cors' \(type 'cors'\) must be wired — add an edge from 'cors\.preflight'/,
      );
      return true;
    },
  );
});

let gw: RunningGateway;
let origin: Origin;

before(async () => {
  origin = await startOrigin(echo('api'));
  gw = await startGateway(
    policy('      - { from: cors.preflight, to: client.in }').replace('port: 9', `port: ${origin.port}`),
  );
});

after(async () => {
  await gw.stop();
  await origin.close();
});

test('cors: E2E-DP-09 an OPTIONS preflight gets 204 + allow-origin and never reaches the upstream', async () => {
  const res = await fetch(`${gw.url}/api/hello`, {
    method: 'OPTIONS',
    headers: { origin: ORIGIN, 'access-control-request-method': 'POST' },
  });
  assert.equal(res.status, 204);
  assert.equal(res.headers.get('access-control-allow-origin'), ORIGIN);
  assert.equal(res.headers.get('access-control-allow-methods'), 'GET, POST, OPTIONS');
  assert.equal(await res.text(), '');
  assert.equal(origin.requests.length, 0);
  const get = await fetch(`${gw.url}/api/hello`, { headers: { origin: ORIGIN } });
  assert.equal(get.status, 200);
  assert.equal(origin.requests.length, 1);
});

test('cors: M3 a nested-quantifier origin regex answers a crafted Origin in linear time', () => {
  const node = instantiate(cors, { allowed_origins_by_regex: ['^https://(a+)+\\.example\\.org$'] });
  const attack = requestContext({
    method: 'OPTIONS',
    headers: { host: 'gw', origin: `https://${redosInput(30)}` },
  });
  const run = timed(() => node.run(attack));
  assert.equal(run.value, 'success', 'a disallowed origin passes through untouched');
  assert.ok(run.ms < LINEAR_BOUND_MS, `took ${run.ms.toFixed(1)} ms`);
  const ok = requestContext({
    method: 'OPTIONS',
    headers: { host: 'gw', origin: 'https://aaa.example.org' },
  });
  assert.equal(node.run(ok), 'preflight');
});

test('cors: M3 an origin regex that needs backtracking is refused at load naming the entry', () => {
  assertConfigError(
    () => instantiate(cors, { allowed_origins_by_regex: ['^https://(?!evil)[a-z]+\\.example\\.org$'] }),
    'allowed_origins_by_regex[0]',
    /lookahead/,
  );
});
