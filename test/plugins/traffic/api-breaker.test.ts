import assert from 'node:assert/strict';
import { after, mock, test } from 'node:test';
import { apiBreaker } from '../../../src/plugins/traffic/api-breaker.js';
import { BreakerState } from '../../../src/plugins/traffic/breaker-state.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { request } from '../../support/http.js';
import { startOrigin, type Origin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, bodyText, runNow } from '../../support/node-run.js';

let ids = 0;
const pair = (extra: Record<string, unknown> = {}) => {
  const id = `breaker-${++ids}`;
  return {
    check: instantiate(apiBreaker, { phase: 'check', id, ...extra }),
    observe: instantiate(apiBreaker, { role: 'observe', id, ...extra }),
  };
};

function answered(status: number) {
  const ctx = requestContext();
  ctx.response.status = status;
  return ctx;
}

test('api-breaker: observe counts consecutive unhealthy statuses; check then leaves on broken with the break response', () => {
  const { check, observe } = pair({
    unhealthy: { failures: 2 },
    break_response_code: 503,
    break_response_body: 'open',
  });
  assert.equal(runNow(check, requestContext()), 'success');
  assert.equal(runNow(observe, answered(500)), 'success');
  assert.equal(runNow(check, requestContext()), 'success', 'one failure is below the threshold');
  runNow(observe, answered(500));
  const ctx = requestContext();
  assert.equal(runNow(check, ctx), 'broken');
  assert.equal(ctx.response.status, 503);
  assert.equal(bodyText(ctx), 'open');
});

test('api-breaker: a healthy status resets the failure streak; statuses in neither list are ignored', () => {
  const { check, observe } = pair({ unhealthy: { http_statuses: [500, 503], failures: 2 } });
  runNow(observe, answered(503));
  runNow(observe, answered(200));
  runNow(observe, answered(500));
  runNow(observe, answered(404));
  assert.equal(runNow(check, requestContext()), 'success');
  runNow(observe, answered(500));
  assert.equal(runNow(check, requestContext()), 'broken');
});

test('api-breaker: the cooldown doubles per trip up to max_breaker_sec, and healthy successes reset it', () => {
  const policy = { unhealthyFailures: 1, healthySuccesses: 2, breakBaseMs: 2000, maxBreakerMs: 5000 };
  const state = new BreakerState();
  state.recordFailure(policy, 0);
  assert.equal(state.openUntil, 2000);
  assert.equal(state.isOpen(1999), true);
  assert.equal(state.isOpen(2000), false, 'half-open after the cooldown');
  state.recordFailure(policy, 3000);
  assert.equal(state.openUntil, 3000 + 4000);
  state.recordFailure(policy, 8000);
  assert.equal(state.openUntil, 8000 + 5000, 'capped');
  state.recordSuccess(policy);
  state.recordSuccess(policy);
  state.recordFailure(policy, 20000);
  assert.equal(state.openUntil, 22000, 'back to the base cooldown once healthy');
});

test('api-breaker: after the cooldown the check lets requests through again', () => {
  mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  try {
    const { check, observe } = pair({ unhealthy: { failures: 1 }, break_base_sec: 2 });
    runNow(observe, answered(500));
    assert.equal(runNow(check, requestContext()), 'broken');
    mock.timers.tick(1999);
    assert.equal(runNow(check, requestContext()), 'broken');
    mock.timers.tick(1);
    assert.equal(runNow(check, requestContext()), 'success');
  } finally {
    mock.timers.reset();
  }
});

test('api-breaker: nodes with different ids do not share state', () => {
  const a = pair({ unhealthy: { failures: 1 } });
  const b = pair({ unhealthy: { failures: 1 } });
  runNow(a.observe, answered(500));
  assert.equal(runNow(a.check, requestContext()), 'broken');
  assert.equal(runNow(b.check, requestContext()), 'success');
});

test('api-breaker: config rejections', () => {
  assertConfigError(() => instantiate(apiBreaker, { id: 'x' }), 'phase');
  assertConfigError(() => instantiate(apiBreaker, { id: 'x', phase: 'check', role: 'observe' }), 'role');
  assertSchemaRejects(() => instantiate(apiBreaker, { phase: 'check' }), 'id');
  assertSchemaRejects(() => instantiate(apiBreaker, { id: 'x', phase: 'open' }), 'phase');
  assertSchemaRejects(
    () => instantiate(apiBreaker, { id: 'x', phase: 'check', max_breaker_sec: 2 }),
    'max_breaker_sec',
  );
  assertSchemaRejects(
    () => instantiate(apiBreaker, { id: 'x', phase: 'check', unhealthy: { failures: 0 } }),
    'unhealthy.failures',
  );
  assertSchemaRejects(
    () => instantiate(apiBreaker, { id: 'x', phase: 'check', healthy: { http_statuses: [] } }),
    'healthy.http_statuses',
  );
});

const origins: Origin[] = [];
const gateways: RunningGateway[] = [];
after(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await Promise.all(origins.map((o) => o.close()));
});

test('api-breaker: end to end three upstream 500s open the breaker; the next request never reaches the upstream', async () => {
  const failing = await startOrigin((_req, res) => {
    res.writeHead(500);
    res.end('boom');
  });
  origins.push(failing);
  const gw = await startGateway(`
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: check, type: api-breaker, config: { phase: check, id: e2e-orders, break_response_code: 502, break_response_body: breaker open } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${failing.port} }] } }
      - { id: observe, type: api-breaker, config: { phase: observe, id: e2e-orders } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: check.in }
      - { from: check.success, to: up.in }
      - { from: check.broken, to: client.in }
      - { from: up.success, to: observe.in }
      - { from: observe.success, to: client.in }
      - { from: observe.broken, to: client.in }
`);
  gateways.push(gw);
  for (let i = 0; i < 3; i++) assert.equal((await request(`${gw.url}/x`)).status, 500);
  const broken = await request(`${gw.url}/x`);
  assert.equal(broken.status, 502);
  assert.equal(broken.body, 'breaker open');
  assert.equal(failing.requests.length, 3);
});
