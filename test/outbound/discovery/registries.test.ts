/**
 * Service discovery from Eureka and Nacos (docs/service-discovery.md#eureka, #nacos) against local
 * servers speaking their documented HTTP APIs, polled every refresh_s: instances added, marked
 * down or unhealthy, removed; Nacos weights; none of it a configuration reload.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { startEurekaServer, type EurekaServer } from '../../support/eureka-server.js';
import { startNacosServer, type NacosServer } from '../../support/nacos-server.js';
import {
  metricSum,
  startNamedOrigin,
  tally,
  upstreamPolicy,
  whoAnswers,
  type NamedOrigin,
} from '../../support/discovery.js';
import { waitFor } from '../../support/wait.js';

let eureka: EurekaServer;
let nacos: NacosServer;
let gw: RunningGateway;
const web: NamedOrigin[] = [];

/** refresh_s is 1: generously a few polls. */
const FOLLOW_MS = 10000;

before(async () => {
  for (const name of ['web1', 'web2', 'web3']) web.push(await startNamedOrigin(name));
  eureka = await startEurekaServer();
  nacos = await startNacosServer();
  eureka.register('web', { instanceId: 'web-1', ipAddr: '127.0.0.1', port: web[0]!.port, status: 'UP' });
  nacos.register('web', { ip: '127.0.0.1', port: web[0]!.port, weight: 3, healthy: true }, 'PROD');
  gw = await startGateway(
    [
      'routes:',
      '  - { name: eureka, match: { path: /eureka }, policy: eureka }',
      '  - { name: nacos, match: { path: /nacos }, policy: nacos }',
      'policies:',
      upstreamPolicy(
        'eureka',
        `{ discovery: { type: eureka, address: "${eureka.url}", service: web, refresh_s: 1 } }`,
      ),
      upstreamPolicy(
        'nacos',
        `{ discovery: { type: nacos, address: "${nacos.url}", service: web, group: PROD, refresh_s: 1 } }`,
      ),
      '',
    ].join('\n'),
  );
});

after(async () => {
  await gw?.stop();
  await eureka?.close();
  await nacos?.close();
  for (const origin of web) await origin.close();
});

const targets = (policy: string) =>
  metricSum(gw, 'gateway_discovery_targets', { policy, node_id: 'up', source: `${policy}:web` });
const names = async (path: string, n: number) => [...(await tally(`${gw.url}${path}`, n)).keys()].sort();

test('discovery eureka: an added instance joins the pool', async () => {
  await waitFor(async () => (await whoAnswers(`${gw.url}/eureka`)) === 'web1', {
    timeoutMs: FOLLOW_MS,
    what: 'the first answer (one instance: an object in Eureka JSON)',
  });
  assert.equal(eureka.queries.at(-1)?.accept, 'application/json');
  eureka.register('web', { instanceId: 'web-2', ipAddr: '127.0.0.1', port: web[1]!.port, status: 'UP' });
  await waitFor(async () => (await targets('eureka')) === 2, { timeoutMs: FOLLOW_MS, what: 'web-2 to join' });
  assert.deepEqual(await names('/eureka', 10), ['web1', 'web2']);
});

test('discovery eureka: an instance that is not UP leaves the pool, and comes back', async () => {
  eureka.setStatus('web', 'web-1', 'DOWN');
  await waitFor(async () => (await targets('eureka')) === 1, {
    timeoutMs: FOLLOW_MS,
    what: 'web-1 to leave',
  });
  assert.deepEqual(await names('/eureka', 10), ['web2']);
  eureka.setStatus('web', 'web-1', 'UP');
  await waitFor(async () => (await targets('eureka')) === 2, {
    timeoutMs: FOLLOW_MS,
    what: 'web-1 to return',
  });
});

test('discovery eureka: a removed instance leaves the pool', async () => {
  eureka.deregister('web', 'web-2');
  await waitFor(async () => (await targets('eureka')) === 1, {
    timeoutMs: FOLLOW_MS,
    what: 'web-2 to leave',
  });
  assert.deepEqual(await names('/eureka', 10), ['web1']);
});

test('discovery nacos: added instances join with their weights', async () => {
  await waitFor(async () => (await whoAnswers(`${gw.url}/nacos`)) === 'web1', {
    timeoutMs: FOLLOW_MS,
    what: 'the first answer',
  });
  const asked = nacos.queries.at(-1)!;
  assert.equal(asked.get('groupName'), 'PROD');
  assert.equal(asked.get('healthyOnly'), 'true');
  nacos.register('web', { ip: '127.0.0.1', port: web[1]!.port, weight: 1, healthy: true }, 'PROD');
  await waitFor(async () => (await targets('nacos')) === 2, { timeoutMs: FOLLOW_MS, what: 'web-2 to join' });
  const counts = await tally(`${gw.url}/nacos`, 400);
  const a = counts.get('web1') ?? 0;
  const b = counts.get('web2') ?? 0;
  assert.equal(a + b, 400, JSON.stringify([...counts]));
  assert.ok(a >= 260 && a <= 340 && b >= 60 && b <= 140, `web1=${a} web2=${b}`);
});

test('discovery nacos: unhealthy and disabled instances leave the pool', async () => {
  nacos.register('web', { ip: '127.0.0.1', port: web[2]!.port, weight: 1, healthy: true }, 'PROD');
  await waitFor(async () => (await targets('nacos')) === 3, { timeoutMs: FOLLOW_MS, what: 'web-3 to join' });
  nacos.update('web', '127.0.0.1', web[0]!.port, { healthy: false }, 'PROD');
  nacos.update('web', '127.0.0.1', web[2]!.port, { enabled: false }, 'PROD');
  await waitFor(async () => (await targets('nacos')) === 1, {
    timeoutMs: FOLLOW_MS,
    what: 'web-1 and web-3 to leave',
  });
  assert.deepEqual(await names('/nacos', 10), ['web2']);
  nacos.update('web', '127.0.0.1', web[0]!.port, { healthy: true }, 'PROD');
  await waitFor(async () => (await targets('nacos')) === 2, {
    timeoutMs: FOLLOW_MS,
    what: 'web-1 to return',
  });
});

test('discovery nacos: a removed instance leaves the pool', async () => {
  nacos.deregister('web', '127.0.0.1', web[1]!.port, 'PROD');
  await waitFor(async () => (await targets('nacos')) === 1, { timeoutMs: FOLLOW_MS, what: 'web-2 to leave' });
  assert.deepEqual(await names('/nacos', 10), ['web1']);
});

test('discovery eureka, nacos: a registry that goes away keeps the last pool and counts errors', async () => {
  await eureka.close();
  await waitFor(
    async () => (await metricSum(gw, 'gateway_discovery_errors_total', { source: 'eureka:web' })) > 0,
    {
      timeoutMs: FOLLOW_MS,
      what: 'a failed poll to be counted',
    },
  );
  assert.deepEqual(await names('/eureka', 10), ['web1']);
  assert.equal(await metricSum(gw, 'gateway_discovery_errors_total', { source: 'nacos:web' }), 0);
});

test('discovery eureka, nacos: no change above was a configuration reload', async () => {
  assert.equal(await metricSum(gw, 'gateway_config_reloads_total'), 0);
});
