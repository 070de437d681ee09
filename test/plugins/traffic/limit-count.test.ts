import assert from 'node:assert/strict';
import { after, mock, test } from 'node:test';
import { createGatewayScope } from '../../../src/observability/gateway-scope.js';
import { limitCount } from '../../../src/plugins/traffic/limit-count.js';
import { LocalWindowCounters } from '../../../src/plugins/traffic/window-counter.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import {
  assertConfigError,
  assertSchemaRejects,
  bodyText,
  runNow,
  templatedEnv,
} from '../../support/node-run.js';

const node = (config: Record<string, unknown>, nodeId = 'quota') =>
  instantiate(limitCount, config, templatedEnv({ nodeId }));

test('limit-count: count requests pass with quota headers, the next leaves on limited with 503 and error_msg', () => {
  const limit = node({ count: 2, time_window: 60 });
  const first = requestContext();
  assert.equal(runNow(limit, first), 'success');
  assert.equal(first.response.headers['x-ratelimit-limit'], '2');
  assert.equal(first.response.headers['x-ratelimit-remaining'], '1');
  assert.equal(first.response.headers['x-ratelimit-reset'], '60');
  const second = requestContext();
  assert.equal(runNow(limit, second), 'success');
  assert.equal(second.response.headers['x-ratelimit-remaining'], '0');
  const third = requestContext();
  assert.equal(runNow(limit, third), 'limited');
  assert.equal(third.response.status, 503);
  assert.deepEqual(JSON.parse(bodyText(third)), { error_msg: 'Requests over the limit' });
  assert.equal(third.response.headers['content-type'], 'application/json');
  assert.equal(third.response.headers['x-ratelimit-remaining'], '0');
  assert.equal(third.errors.length, 0, 'an outcome exit records no error');
});

test('limit-count: rejected_code and rejected_msg shape the rejection', () => {
  const limit = node({ count: 1, time_window: 10, rejected_code: 429, rejected_msg: 'slow down' });
  runNow(limit, requestContext());
  const ctx = requestContext();
  assert.equal(runNow(limit, ctx), 'limited');
  assert.equal(ctx.response.status, 429);
  assert.deepEqual(JSON.parse(bodyText(ctx)), { error_msg: 'slow down' });
});

test('limit-count: show_limit_quota_header false sends no X-RateLimit headers', () => {
  const limit = node({ count: 1, time_window: 10, show_limit_quota_header: false });
  const ok = requestContext();
  runNow(limit, ok);
  const over = requestContext();
  assert.equal(runNow(limit, over), 'limited');
  for (const ctx of [ok, over]) assert.equal(ctx.response.headers['x-ratelimit-limit'], undefined);
});

test('limit-count: the window resets after time_window seconds', () => {
  mock.timers.enable({ apis: ['Date'], now: 5_000_000 });
  try {
    const limit = node({ count: 1, time_window: 2 });
    assert.equal(runNow(limit, requestContext()), 'success');
    mock.timers.tick(1500);
    const waiting = requestContext();
    assert.equal(runNow(limit, waiting), 'limited');
    assert.equal(waiting.response.headers['x-ratelimit-reset'], '1');
    mock.timers.tick(500);
    const fresh = requestContext();
    assert.equal(runNow(limit, fresh), 'success');
    assert.equal(fresh.response.headers['x-ratelimit-reset'], '2');
  } finally {
    mock.timers.reset();
  }
});

test('limit-count: keys count apart; the default key is the client IP', () => {
  const limit = node({ count: 1, time_window: 60 });
  assert.equal(runNow(limit, requestContext({ remoteAddress: '192.0.2.1' })), 'success');
  assert.equal(runNow(limit, requestContext({ remoteAddress: '192.0.2.1', remotePort: 1 })), 'limited');
  assert.equal(runNow(limit, requestContext({ remoteAddress: '192.0.2.2' })), 'success');
});

test('limit-count: key is a legacy $var field that also renders {{…}}; an empty key falls back to the IP', () => {
  const byHeader = node({ count: 1, time_window: 60, key: '$http_x_api_key' });
  const withKey = (key: string, ip = '192.0.2.1') =>
    requestContext({ remoteAddress: ip, headers: { host: 'gateway.test', 'x-api-key': key } });
  assert.equal(runNow(byHeader, withKey('a')), 'success');
  assert.equal(runNow(byHeader, withKey('a', '192.0.2.9')), 'limited', 'same key from another IP');
  assert.equal(runNow(byHeader, withKey('b')), 'success');
  assert.equal(runNow(byHeader, requestContext({ remoteAddress: '198.51.100.1' })), 'success');
  assert.equal(runNow(byHeader, requestContext({ remoteAddress: '198.51.100.1' })), 'limited');

  const templated = node({ count: 1, time_window: 60, key: '{{request.headers.x-api-key}}' }, 'tpl');
  assert.equal(runNow(templated, withKey('a')), 'success');
  assert.equal(runNow(templated, withKey('a', '192.0.2.7')), 'limited');
});

test('limit-count: key_type var reads a bare name as a variable; constant shares one counter', () => {
  const bare = node({ count: 1, time_window: 60, key: 'remote_addr' }, 'bare');
  assert.equal(runNow(bare, requestContext({ remoteAddress: '192.0.2.1' })), 'success');
  assert.equal(runNow(bare, requestContext({ remoteAddress: '192.0.2.2' })), 'success');
  const constant = node({ count: 1, time_window: 60, key: 'everyone', key_type: 'constant' }, 'const');
  assert.equal(runNow(constant, requestContext({ remoteAddress: '192.0.2.1' })), 'success');
  assert.equal(runNow(constant, requestContext({ remoteAddress: '192.0.2.2' })), 'limited');
});

test('limit-count: nodes count apart unless they name the same group', () => {
  const scope = createGatewayScope();
  const make = (nodeId: string, extra: Record<string, unknown> = {}) =>
    instantiate(limitCount, { count: 1, time_window: 60, ...extra }, templatedEnv({ nodeId, scope }));
  const a = make('a');
  const b = make('b');
  assert.equal(runNow(a, requestContext()), 'success');
  assert.equal(runNow(b, requestContext()), 'success');
  const g1 = make('g1', { group: 'shared' });
  const g2 = make('g2', { group: 'shared' });
  assert.equal(runNow(g1, requestContext()), 'success');
  assert.equal(runNow(g2, requestContext()), 'limited');
});

test('limit-count: a recompiled node keeps its window (counters live in the gateway scope)', () => {
  const scope = createGatewayScope();
  const make = () => instantiate(limitCount, { count: 1, time_window: 60 }, templatedEnv({ scope }));
  assert.equal(runNow(make(), requestContext()), 'success');
  assert.equal(runNow(make(), requestContext()), 'limited');
});

test('limit-count: expired windows are swept as new keys arrive', () => {
  const counters = new LocalWindowCounters();
  for (let i = 0; i < 1000; i++) counters.take(`k${i}`, 1, 1000, 0);
  assert.equal(counters.size, 1000);
  for (let i = 0; i < 100; i++) counters.take(`n${i}`, 1, 1000, 5000);
  assert.ok(counters.size < 200, `expected a sweep, ${counters.size} windows left`);
});

test('limit-count: config rejections', () => {
  assertSchemaRejects(() => node({ time_window: 60 }), 'count');
  assertSchemaRejects(() => node({ count: 1 }), 'time_window');
  assertSchemaRejects(() => node({ count: 0, time_window: 60 }), 'count');
  assertSchemaRejects(() => node({ count: 1, time_window: 0 }), 'time_window');
  assertSchemaRejects(() => node({ count: 1, time_window: 1, rejected_code: 600 }), 'rejected_code');
  assertSchemaRejects(() => node({ count: 1, time_window: 1, policy: 'redis-cluster' }), 'policy');
  assertSchemaRejects(() => node({ count: 1, time_window: 1, window_type: 'sliding' }), 'window_type');
  assertConfigError(() => node({ count: 1, time_window: 1, policy: 'redis' }), 'store', /required/);
  assertConfigError(
    () => node({ count: 1, time_window: 1, policy: 'kvstore', store: 'nope' }),
    'store',
    /nope/,
  );
});

test('limit-count: store with policy local is ignored with a warning', () => {
  const env = templatedEnv();
  instantiate(limitCount, { count: 1, time_window: 1, store: 'main' }, env);
  assert.deepEqual(
    env.warnings.map((w) => w.key),
    ['store'],
  );
});

const gateways: RunningGateway[] = [];
after(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
});

test('limit-count: end to end the limited port answers the client; quota headers reach it', async () => {
  const gw = await startGateway(`
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: quota, type: limit-count, config: { count: 2, time_window: 60, rejected_code: 429 } }
      - { id: ok, type: mocking, config: { response_example: fine, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: quota.in }
      - { from: quota.success, to: ok.in }
      - { from: quota.limited, to: client.in }
      - { from: ok.success, to: client.in }
`);
  gateways.push(gw);
  const first = await request(`${gw.url}/a`);
  assert.equal(first.status, 200);
  assert.equal(first.body, 'fine');
  assert.equal(first.headers['x-ratelimit-limit'], '2');
  assert.equal(first.headers['x-ratelimit-remaining'], '1');
  assert.equal((await request(`${gw.url}/a`)).status, 200);
  const third = await request(`${gw.url}/a`);
  assert.equal(third.status, 429);
  assert.deepEqual(JSON.parse(third.body), { error_msg: 'Requests over the limit' });
  assert.equal(third.headers['x-ratelimit-remaining'], '0');
});
