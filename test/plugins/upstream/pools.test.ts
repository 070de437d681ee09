import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { sharedPoolCount } from '../../../src/outbound/pool-registry.js';
import { echo, gate, startOrigin, type Origin } from '../../support/origins.js';
import { requestContext } from '../../support/plugin-env.js';
import { answeredBy, closeAll, createUpstream } from './helpers.js';
import { runOk } from '../../support/node-run.js';

const origins: Origin[] = [];
after(async () => {
  await closeAll();
  await Promise.all(origins.map((o) => o.close()));
});

test('upstream pools: a reload keeps warm keep-alive connections', async () => {
  const origin = await startOrigin(echo('a'), { name: 'a' });
  origins.push(origin);
  const config = { targets: [origin.target] };
  const { node: before } = createUpstream(config);
  for (let i = 0; i < 4; i++) await runOk(before, requestContext());
  const warm = origin.connections;
  // undici frees a connection one tick after the response, so back-to-back requests may use two.
  assert.ok(warm <= 2, `4 sequential requests opened ${warm} connections`);

  // Reload: the new configuration is compiled, then the old one is retired.
  const { node: reloaded } = createUpstream(config);
  before.close();
  for (let i = 0; i < 4; i++) await runOk(reloaded, requestContext());
  assert.equal(origin.connections, warm, 'the reloaded node used the warm connections');
  assert.equal(origin.requests.length, 8);
});

test('upstream pools: a request in flight on a retired configuration completes', async () => {
  const hold = gate();
  const origin = await startOrigin(
    async (req, res, body) => {
      if (req.url === '/slow') await hold.wait;
      echo('a')(req, res, body);
    },
    { name: 'a' },
  );
  origins.push(origin);
  const { node: old } = createUpstream({ targets: [origin.target] });
  const ctx = requestContext({ url: '/slow' });
  const inFlight = runOk(old, ctx);
  await origin.received(1);
  createUpstream({ targets: [origin.target] });
  old.close();
  hold.release();
  await inFlight;
  assert.equal(answeredBy(ctx), 'a');
});

test('upstream pools: targets with the same origin and TLS settings share one pool', async () => {
  const a = await startOrigin(echo('a'), { name: 'a' });
  const b = await startOrigin(echo('b'), { name: 'b' });
  origins.push(a, b);
  const before = sharedPoolCount();
  createUpstream({ targets: [a.target, b.target] });
  createUpstream({ targets: [b.target, a.target], load_balancing: 'least_connections' });
  assert.equal(sharedPoolCount() - before, 2);
  createUpstream({ targets: [a.target], timeout_ms: 1234 });
  assert.equal(sharedPoolCount() - before, 3, 'a different connect timeout is a different pool');
});
