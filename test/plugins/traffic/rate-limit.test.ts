import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { rateLimit } from '../../../src/plugins/traffic/rate-limit.js';
import { TokenBuckets } from '../../../src/plugins/traffic/token-buckets.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, bodyText, runNow } from '../../support/node-run.js';

test('rate-limit: burst requests pass, the next leaves on limited with 429, rate_limited and retry-after', () => {
  const limit = instantiate(rateLimit, { requests_per_second: 1, burst: 2 });
  assert.equal(runNow(limit, requestContext()), 'success');
  assert.equal(runNow(limit, requestContext()), 'success');
  const ctx = requestContext();
  assert.equal(runNow(limit, ctx), 'limited');
  assert.equal(ctx.response.status, 429);
  assert.deepEqual(JSON.parse(bodyText(ctx)), { error: 'rate_limited', message: 'Too many requests' });
  assert.equal(ctx.response.headers['retry-after'], '1');
  assert.equal(ctx.response.headers['content-type'], 'application/json');
});

test('rate-limit: burst defaults to the rate; rate is an alias of requests_per_second', () => {
  const limit = instantiate(rateLimit, { rate: 3 });
  for (let i = 0; i < 3; i++) assert.equal(runNow(limit, requestContext()), 'success');
  assert.equal(runNow(limit, requestContext()), 'limited');
  assertConfigError(() => instantiate(rateLimit, { rate: 3, requests_per_second: 4 }), 'rate');
});

test('rate-limit: tokens refill at the rate', () => {
  const buckets = new TokenBuckets(10, 1, 0);
  assert.equal(buckets.take('k', 0).kind, 'now');
  assert.equal(buckets.take('k', 50).kind, 'limited');
  assert.equal(buckets.take('k', 100).kind, 'now', 'one token after 1/rate seconds');
});

test('rate-limit: clients are keyed by IP, or by a header with key_from', () => {
  const byIp = instantiate(rateLimit, { requests_per_second: 1, burst: 1 });
  assert.equal(runNow(byIp, requestContext({ remoteAddress: '192.0.2.1', remotePort: 1 })), 'success');
  assert.equal(runNow(byIp, requestContext({ remoteAddress: '192.0.2.1', remotePort: 2 })), 'limited');
  assert.equal(runNow(byIp, requestContext({ remoteAddress: '192.0.2.2' })), 'success');
  const byHeader = instantiate(rateLimit, { requests_per_second: 1, burst: 1, key_from: 'header:X-Api-Key' });
  const withKey = (key: string, ip: string) =>
    requestContext({ remoteAddress: ip, headers: { host: 'h', 'x-api-key': key } });
  assert.equal(runNow(byHeader, withKey('k1', '192.0.2.1')), 'success');
  assert.equal(runNow(byHeader, withKey('k1', '192.0.2.2')), 'limited');
  assert.equal(runNow(byHeader, withKey('k2', '192.0.2.1')), 'success');
});

test('rate-limit: nodelay false spaces requests at the rate, delaying up to burst of them', async () => {
  // A slow rate: a busy machine pausing this test for 50 ms must not refill a token in between.
  const limit = instantiate(rateLimit, { requests_per_second: 2, burst: 1, nodelay: false });
  assert.equal(runNow(limit, requestContext()), 'success');
  const started = performance.now();
  const delayed = limit.run(requestContext());
  assert.ok(delayed instanceof Promise, 'the second request waits for its token');
  assert.equal(runNow(limit, requestContext()), 'limited', 'a third exceeds the queue');
  assert.equal(await delayed, 'success');
  assert.ok(performance.now() - started >= 400, 'waited about 1/rate seconds');
});

test('rate-limit: config rejections', () => {
  assertSchemaRejects(() => instantiate(rateLimit, { requests_per_second: 0 }), 'requests_per_second');
  assertSchemaRejects(() => instantiate(rateLimit, { burst: 0 }), 'burst');
  assertSchemaRejects(() => instantiate(rateLimit, { policy: 'redis' }), 'policy');
  assertConfigError(() => instantiate(rateLimit, { key_from: 'cookie:id' }), 'key_from');
  assertConfigError(() => instantiate(rateLimit, { key_from: 'header:' }), 'key_from');
});

const gateways: RunningGateway[] = [];
after(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
});

test('rate-limit: E2E-DP-07 past burst → 429', async () => {
  const gw = await startGateway(`
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: throttle, type: rate-limit, config: { requests_per_second: 1, burst: 3 } }
      - { id: ok, type: mocking, config: { response_example: ok, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: throttle.in }
      - { from: throttle.success, to: ok.in }
      - { from: throttle.limited, to: client.in }
      - { from: ok.success, to: client.in }
`);
  gateways.push(gw);
  for (let i = 0; i < 3; i++) assert.equal((await request(`${gw.url}/x`)).status, 200);
  const over = await request(`${gw.url}/x`);
  assert.equal(over.status, 429);
  assert.equal(over.headers['retry-after'], '1');
});
