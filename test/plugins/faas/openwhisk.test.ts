import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ConfigRejected } from '../../../src/config/schema-validate.js';
import { ConfigError } from '../../../src/core/plugin.js';
import { openwhisk } from '../../../src/plugins/faas/openwhisk.js';
import { deadPort, gate, type Origin } from '../../support/origins.js';
import { requestContext } from '../../support/plugin-env.js';
import { closeAll, createNode, echoRequest, startFunction } from './helpers.js';
import { failsWith, runOk } from '../../support/node-run.js';

after(closeAll);

const CODE = 'OPENWHISK_CALLOUT_ERROR';

function base(fn: Origin, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { api_host: `http://127.0.0.1:${fn.port}`, service_token: 'user:pass', action: 'hello', ...extra };
}

/** Answers like an action whose result is `reply` (any JSON value or raw text). */
async function action(reply: unknown, status = 200): Promise<Origin> {
  return startFunction((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', 'x-openwhisk-activation-id': 'a1' });
    res.end(typeof reply === 'string' ? reply : JSON.stringify(reply));
  });
}

test('openwhisk: api_host, service_token and action are required', () => {
  assert.throws(() => createNode(openwhisk, { service_token: 't', action: 'a' }), ConfigRejected);
  assert.throws(() => createNode(openwhisk, { api_host: 'http://ow.test', action: 'a' }), ConfigRejected);
  assert.throws(
    () => createNode(openwhisk, { api_host: 'http://ow.test', service_token: 't' }),
    ConfigRejected,
  );
});

test('openwhisk: api_host may not be built from request data, nor be an invalid URI', () => {
  const reject = (api_host: string): void =>
    assert.throws(
      () => createNode(openwhisk, { api_host, service_token: 't', action: 'a' }),
      (err: unknown) => err instanceof ConfigError && err.path === 'api_host',
      api_host,
    );
  reject('http://{{request.headers.x-ow-host}}');
  reject('https://ow.test{{request.path}}');
  reject('ow.test:3233');
  reject('http://ow.test/?x=1');
});

test('openwhisk: api_host accepts {{env.NAME}}, resolved at load', async () => {
  const fn = await startFunction(echoRequest);
  process.env.SWITCHYARD_TEST_OW_HOST = `http://127.0.0.1:${fn.port}`;
  try {
    const { node } = createNode(openwhisk, {
      api_host: '{{env.SWITCHYARD_TEST_OW_HOST}}',
      service_token: 'user:pass',
      action: 'hello',
    });
    const ctx = requestContext();
    await runOk(node, ctx);
    assert.equal(fn.requests.length, 1);
  } finally {
    delete process.env.SWITCHYARD_TEST_OW_HOST;
  }
});

test('openwhisk: POSTs the body to /api/v1/namespaces/<ns>/actions/<pkg>/<action> with Basic auth', async () => {
  const fn = await startFunction(echoRequest);
  const { node } = createNode(openwhisk, base(fn, { namespace: 'guest', package: 'tools', timeout: 2500 }));
  const ctx = requestContext({
    method: 'PUT',
    url: '/client/path?ignored=1',
    headers: { host: 'gw', 'content-type': 'application/json', 'x-client': 'not forwarded' },
    body: Buffer.from('{"name":"x"}'),
  });
  await runOk(node, ctx);
  const seen = fn.requests[0]!;
  assert.equal(seen.method, 'POST');
  assert.equal(
    seen.url,
    '/api/v1/namespaces/guest/actions/tools/hello?blocking=true&result=true&timeout=2500',
  );
  assert.equal(seen.headers.authorization, `Basic ${Buffer.from('user:pass').toString('base64')}`);
  assert.equal(seen.headers['content-type'], 'application/json');
  assert.equal(seen.headers.host, `127.0.0.1:${fn.port}`);
  assert.equal(seen.headers['x-client'], undefined);
  assert.equal(seen.body.toString(), '{"name":"x"}');
});

test('openwhisk: namespace defaults to _, no package, result=false is passed on', async () => {
  const fn = await startFunction(echoRequest);
  const { node } = createNode(openwhisk, base(fn, { result: false }));
  await runOk(node, requestContext());
  assert.equal(
    fn.requests[0]!.url,
    '/api/v1/namespaces/_/actions/hello?blocking=true&result=false&timeout=3000',
  );
});

test('openwhisk: templated namespace, package and action are percent-encoded per byte into one segment each', async () => {
  const fn = await startFunction(echoRequest);
  const { node } = createNode(
    openwhisk,
    base(fn, {
      namespace: '{{request.headers.x-ns}}',
      package: 'pkg-{{request.query.pkg}}',
      action: '{{message.action}}',
    }),
  );
  const ctx = requestContext({ url: '/?pkg=caf%C3%A9%20bar', headers: { host: 'gw', 'x-ns': 'team a+b' } });
  ctx.message.action = "run!'()*~";
  await runOk(node, ctx);
  assert.equal(
    fn.requests[0]!.url,
    '/api/v1/namespaces/team%20a%2Bb/actions/pkg-caf%C3%A9%20bar/run%21%27%28%29%2A~?blocking=true&result=true&timeout=3000',
  );
});

test('openwhisk: a templated value holding /../, ?, # or @ cannot steer the callout out of its segment', async () => {
  const fn = await startFunction(echoRequest);
  const { node } = createNode(
    openwhisk,
    base(fn, { namespace: '{{request.headers.x-ns}}', action: '{{request.query.action}}' }),
  );
  const hostile = [
    ['/../../admin', '%2F..%2F..%2Fadmin'],
    ['x?blocking=false&y=', 'x%3Fblocking%3Dfalse%26y%3D'],
    ['x#frag', 'x%23frag'],
    ['user@evil.example', 'user%40evil.example'],
    ['a/../b?c#d@e', 'a%2F..%2Fb%3Fc%23d%40e'],
  ] as const;
  for (const [value, encoded] of hostile) {
    const before = fn.requests.length;
    const ctx = requestContext({
      url: `/?action=${encodeURIComponent(value)}`,
      headers: { host: 'gw', 'x-ns': value },
    });
    await runOk(node, ctx);
    const seen = fn.requests[before]!;
    assert.equal(
      seen.url,
      `/api/v1/namespaces/${encoded}/actions/${encoded}?blocking=true&result=true&timeout=3000`,
      value,
    );
    assert.equal(seen.headers.host, `127.0.0.1:${fn.port}`, 'the host never changes');
  }
});

test('openwhisk: a segment rendering to . or .. or an empty action fails with 502; nothing is sent', async () => {
  const fn = await startFunction(echoRequest);
  const { node } = createNode(openwhisk, base(fn, { action: '{{request.query.a}}' }));
  for (const url of ['/?a=..', '/?a=.', '/']) {
    await failsWith(node, requestContext({ url }), CODE, 502);
  }
  assert.equal(fn.requests.length, 0);
  assert.throws(
    () => createNode(openwhisk, base(fn, { namespace: '..' })),
    (err: unknown) => err instanceof ConfigError && err.path === 'namespace',
  );
});

test('openwhisk: an envelope {statusCode, headers, body} becomes the response', async () => {
  const fn = await action({
    statusCode: 201,
    headers: { 'X-Out': 'yes', 'Content-Type': 'text/plain' },
    body: 'hi',
  });
  const { node } = createNode(openwhisk, base(fn));
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(ctx.response.status, 201);
  assert.equal(ctx.response.headers['x-out'], 'yes');
  assert.equal(ctx.response.headers['content-type'], 'text/plain');
  assert.equal(ctx.response.body?.toString(), 'hi');
});

test('openwhisk: an envelope body that is JSON is serialised with a JSON content type', async () => {
  const fn = await action({ statusCode: 418, body: { tea: true } });
  const { node } = createNode(openwhisk, base(fn));
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(ctx.response.status, 418);
  assert.equal(ctx.response.headers['content-type'], 'application/json');
  assert.equal(ctx.response.body?.toString(), '{"tea":true}');
});

test('openwhisk: a plain JSON result and a platform error are relayed with their status (500 passes)', async () => {
  const plain = await action({ greeting: 'hello' });
  const a = createNode(openwhisk, base(plain)).node;
  const ctx = requestContext();
  await runOk(a, ctx);
  assert.equal(ctx.response.status, 200);
  assert.equal(ctx.response.headers['x-openwhisk-activation-id'], 'a1');
  assert.equal(ctx.response.body?.toString(), '{"greeting":"hello"}');

  const failing = await action({ error: 'The action did not produce a valid response.' }, 502);
  const b = createNode(openwhisk, base(failing)).node;
  const ctx2 = requestContext();
  await runOk(b, ctx2);
  assert.equal(ctx2.response.status, 502);
  assert.equal(ctx2.errors.length, 0);

  const five = await action({ statusCode: 500, body: 'boom' });
  const c = createNode(openwhisk, base(five)).node;
  const ctx3 = requestContext();
  await runOk(c, ctx3);
  assert.equal(ctx3.response.status, 500);
});

test('openwhisk: a reply that is not JSON, or an invalid statusCode, fails with 503', async () => {
  const text = await action('<html>gateway</html>');
  await failsWith(createNode(openwhisk, base(text)).node, requestContext(), CODE, 503);
  const bad = await action({ statusCode: 'ok' });
  await failsWith(createNode(openwhisk, base(bad)).node, requestContext(), CODE, 503);
});

test('openwhisk: timeout → 504, connection refused → 503', async () => {
  const hold = gate();
  const slow = await startFunction(async (_req, res) => {
    await hold.wait;
    res.end('{}');
  });
  await failsWith(createNode(openwhisk, base(slow, { timeout: 150 })).node, requestContext(), CODE, 504);
  hold.release();
  const dead = { port: await deadPort() } as Origin;
  await failsWith(createNode(openwhisk, base(dead)).node, requestContext(), CODE, 503);
});
