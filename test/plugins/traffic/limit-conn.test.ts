import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createGatewayScope } from '../../../src/observability/gateway-scope.js';
import { ConcurrencyTable } from '../../../src/plugins/traffic/concurrency.js';
import { limitConn } from '../../../src/plugins/traffic/limit-conn.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { gate, startOrigin, type Origin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import {
  assertConfigError,
  assertSchemaRejects,
  bodyText,
  runNow,
  templatedEnv,
} from '../../support/node-run.js';

function pair(config: Record<string, unknown> = {}) {
  const scope = createGatewayScope();
  return {
    acquire: instantiate(limitConn, { phase: 'acquire', ...config }, templatedEnv({ scope })),
    release: instantiate(limitConn, { role: 'release', ...config }, templatedEnv({ scope })),
  };
}

test('limit-conn: acquire admits conn + burst concurrent requests, then leaves on limited with rejected_code', () => {
  const { acquire } = pair({ conn: 1, burst: 1 });
  assert.equal(runNow(acquire, requestContext()), 'success');
  assert.equal(runNow(acquire, requestContext()), 'success');
  const third = requestContext();
  assert.equal(runNow(acquire, third), 'limited');
  assert.equal(third.response.status, 503);
  assert.equal(bodyText(third), '', 'no rejected_msg: an empty body');
});

test('limit-conn: rejected_msg gives an error_msg JSON body', () => {
  const { acquire } = pair({ conn: 1, rejected_code: 429, rejected_msg: 'busy' });
  runNow(acquire, requestContext());
  const ctx = requestContext();
  assert.equal(runNow(acquire, ctx), 'limited');
  assert.equal(ctx.response.status, 429);
  assert.deepEqual(JSON.parse(bodyText(ctx)), { error_msg: 'busy' });
});

test('limit-conn: release frees the slot its request took, once', () => {
  const { acquire, release } = pair({ conn: 1 });
  const first = requestContext();
  assert.equal(runNow(acquire, first), 'success');
  assert.equal(runNow(acquire, requestContext()), 'limited');
  assert.equal(runNow(release, first), 'success');
  assert.equal(runNow(release, first), 'success', 'a second release changes nothing');
  const second = requestContext();
  assert.equal(runNow(acquire, second), 'success');
  assert.equal(runNow(acquire, requestContext()), 'limited', 'the double release did not free an extra slot');
  assert.equal(
    runNow(release, requestContext()),
    'success',
    'releasing a request that holds nothing is harmless',
  );
});

test('limit-conn: keys are counted apart; constant key_type counts everyone together', () => {
  const { acquire } = pair({ conn: 1, key: '$http_x_user' });
  const as = (user: string) => requestContext({ headers: { host: 'h', 'x-user': user } });
  assert.equal(runNow(acquire, as('a')), 'success');
  assert.equal(runNow(acquire, as('b')), 'success');
  assert.equal(runNow(acquire, as('a')), 'limited');
  const shared = pair({ conn: 1, key: 'all', key_type: 'constant' });
  assert.equal(runNow(shared.acquire, requestContext({ remoteAddress: '192.0.2.1' })), 'success');
  assert.equal(runNow(shared.acquire, requestContext({ remoteAddress: '192.0.2.2' })), 'limited');
});

test('limit-conn: slots of a request dropped without a release come back when it is collected', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const table = new ConcurrencyTable();
  (() => {
    table.acquire(requestContext(), 'k', 1);
  })();
  assert.equal(table.count('k'), 1);
  for (let i = 0; i < 10 && table.count('k') > 0; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.equal(table.count('k'), 0);
});

test('limit-conn: config rejections', () => {
  assertConfigError(() => instantiate(limitConn, {}), 'phase');
  assertConfigError(() => instantiate(limitConn, { phase: 'acquire', role: 'release' }), 'role');
  assertSchemaRejects(() => instantiate(limitConn, { phase: 'hold' }), 'phase');
  assertSchemaRejects(() => instantiate(limitConn, { phase: 'acquire', conn: 0 }), 'conn');
  assertSchemaRejects(() => instantiate(limitConn, { phase: 'acquire', burst: -1 }), 'burst');
  assertSchemaRejects(() => instantiate(limitConn, { phase: 'acquire', policy: 'redis' }), 'policy');
  // APISIX's delay knob is accepted and has no effect.
  instantiate(limitConn, { phase: 'acquire', default_conn_delay: 0.1 });
});

const origins: Origin[] = [];
const gateways: RunningGateway[] = [];
after(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await Promise.all(origins.map((o) => o.close()));
});

test('limit-conn: end to end a second request while the first is upstream is limited; release on both paths', async () => {
  const hold = gate();
  const slow = await startOrigin(async (req, res) => {
    if (req.url === '/slow') await hold.wait;
    res.writeHead(req.url === '/fail' ? 500 : 200);
    res.end('done');
  });
  origins.push(slow);
  const gw = await startGateway(`
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: take, type: limit-conn, config: { phase: acquire, conn: 1, key: all, key_type: constant, rejected_code: 429, rejected_msg: busy } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${slow.port} }] } }
      - { id: give, type: limit-conn, config: { phase: release, key: all, key_type: constant } }
      - { id: give-on-error, type: limit-conn, config: { phase: release, key: all, key_type: constant } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: take.in }
      - { from: take.success, to: up.in }
      - { from: take.limited, to: client.in }
      - { from: up.success, to: give.in }
      - { from: up.error, to: give-on-error.in }
      - { from: give.success, to: client.in }
      - { from: give.limited, to: client.in }
      - { from: give-on-error.success, to: client.in }
      - { from: give-on-error.limited, to: client.in }
`);
  gateways.push(gw);
  const first = request(`${gw.url}/slow`);
  await slow.received(1);
  const second = await request(`${gw.url}/fast`);
  assert.equal(second.status, 429);
  assert.deepEqual(JSON.parse(second.body), { error_msg: 'busy' });
  hold.release();
  assert.equal((await first).status, 200);
  assert.equal((await request(`${gw.url}/fail`)).status, 500, 'an upstream 500 is still the success path');
  assert.equal((await request(`${gw.url}/fast`)).status, 200, 'every slot was given back');
});
