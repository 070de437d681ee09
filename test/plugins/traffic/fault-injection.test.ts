import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { faultInjection } from '../../../src/plugins/traffic/fault-injection.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { request } from '../../support/http.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import {
  assertConfigError,
  assertSchemaRejects,
  bodyText,
  runNow,
  templatedEnv,
} from '../../support/node-run.js';

test('fault-injection: abort prepares status, templated body and headers, and leaves on abort', () => {
  const node = instantiate(
    faultInjection,
    {
      abort: {
        http_status: 503,
        body: 'injected for $uri ({{request.method}})',
        headers: { 'X-Fault': '$http_x_id' },
      },
    },
    templatedEnv(),
  );
  const ctx = requestContext({ url: '/pay', headers: { host: 'h', 'x-id': 'r1' } });
  assert.equal(runNow(node, ctx), 'abort');
  assert.equal(ctx.response.status, 503);
  assert.equal(bodyText(ctx), 'injected for /pay (GET)');
  assert.equal(ctx.response.headers['x-fault'], 'r1');
});

test('fault-injection: percentage 0 never aborts, 100 always does', () => {
  const never = instantiate(faultInjection, { abort: { http_status: 500, percentage: 0 } }, templatedEnv());
  const always = instantiate(
    faultInjection,
    { abort: { http_status: 500, percentage: 100 } },
    templatedEnv(),
  );
  for (let i = 0; i < 50; i++) {
    assert.equal(runNow(never, requestContext()), 'success');
    assert.equal(runNow(always, requestContext()), 'abort');
  }
});

test('fault-injection: percentage samples about that share of requests', () => {
  const node = instantiate(faultInjection, { abort: { http_status: 500, percentage: 30 } }, templatedEnv());
  let aborted = 0;
  for (let i = 0; i < 2000; i++) if (runNow(node, requestContext()) === 'abort') aborted++;
  assert.ok(aborted > 450 && aborted < 750, `aborted ${aborted} of 2000`);
});

test('fault-injection: vars is a list of expressions, any of which triggers the fault', () => {
  const node = instantiate(
    faultInjection,
    {
      abort: {
        http_status: 418,
        vars: [
          [
            ['arg_name', '==', 'jack'],
            ['arg_age', '>', 18],
          ],
          [['http_x_chaos', '==', 'on']],
        ],
      },
    },
    templatedEnv(),
  );
  assert.equal(runNow(node, requestContext({ url: '/?name=jack&age=20' })), 'abort');
  assert.equal(runNow(node, requestContext({ url: '/?name=jack&age=10' })), 'success');
  assert.equal(runNow(node, requestContext({ headers: { host: 'h', 'x-chaos': 'on' } })), 'abort');
  const flat = instantiate(
    faultInjection,
    { abort: { http_status: 418, vars: [['arg_x', '==', '1']] } },
    templatedEnv(),
  );
  assert.equal(runNow(flat, requestContext({ url: '/?x=1' })), 'abort');
  assert.equal(runNow(flat, requestContext({ url: '/?x=2' })), 'success');
});

test('fault-injection: delay waits, then continues on success (or aborts after it)', async () => {
  const node = instantiate(faultInjection, { delay: { duration: 0.05 } }, templatedEnv());
  const started = Date.now();
  assert.equal(await node.run(requestContext()), 'success');
  assert.ok(Date.now() - started >= 45);
  const both = instantiate(
    faultInjection,
    { delay: { duration: 0.02 }, abort: { http_status: 504 } },
    templatedEnv(),
  );
  const ctx = requestContext();
  assert.equal(await both.run(ctx), 'abort');
  assert.equal(ctx.response.status, 504);
  const gated = instantiate(
    faultInjection,
    { delay: { duration: 5, vars: [[['arg_slow', '==', '1']]] } },
    templatedEnv(),
  );
  assert.equal(runNow(gated, requestContext()), 'success', 'no delay, no promise');
});

test('fault-injection: a delay ends early when the client goes away', async () => {
  const node = instantiate(faultInjection, { delay: { duration: 30 } }, templatedEnv());
  const controller = new AbortController();
  const pending = node.run(requestContext({}, controller.signal));
  controller.abort();
  assert.equal(await pending, 'success');
});

test('fault-injection: config rejections', () => {
  assertConfigError(() => instantiate(faultInjection, {}), '', /abort.*delay/);
  assertSchemaRejects(() => instantiate(faultInjection, { abort: {} }), 'abort.http_status');
  assertSchemaRejects(
    () => instantiate(faultInjection, { abort: { http_status: 100 } }),
    'abort.http_status',
  );
  assertSchemaRejects(
    () => instantiate(faultInjection, { abort: { http_status: 500, percentage: 101 } }),
    'abort.percentage',
  );
  assertSchemaRejects(() => instantiate(faultInjection, { delay: {} }), 'delay.duration');
  assertConfigError(
    () => instantiate(faultInjection, { abort: { http_status: 500, vars: [[['x', 'nope', 1]]] } }),
    'abort.vars[0][0][1]',
  );
});

const gateways: RunningGateway[] = [];
after(() => Promise.all(gateways.map((g) => g.stop())));

test('fault-injection: end to end the abort port answers the client, success reaches the backend', async () => {
  const gw = await startGateway(`
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - id: chaos
        type: fault-injection
        config: { abort: { http_status: 503, body: 'chaos', vars: [[["http_x_chaos", "==", "on"]]] } }
      - { id: backend, type: mocking, config: { response_example: ok, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: chaos.in }
      - { from: chaos.abort, to: client.in }
      - { from: chaos.success, to: backend.in }
      - { from: backend.success, to: client.in }
`);
  gateways.push(gw);
  const aborted = await request(`${gw.url}/`, { headers: { 'x-chaos': 'on' } });
  assert.equal(aborted.status, 503);
  assert.equal(aborted.body, 'chaos');
  assert.equal((await request(`${gw.url}/`)).body, 'ok');
});
