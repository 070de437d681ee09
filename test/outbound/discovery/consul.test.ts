/**
 * Service discovery from Consul (docs/service-discovery.md#consul) against a local server speaking
 * Consul's health API with blocking queries: instances added, failing their Consul check,
 * failing the gateway's own probe, deregistered; the registry going away; no config reload.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { parseGatewayConfig } from '../../../src/config/gateway.js';
import { startConsulServer, type ConsulServer } from '../../support/consul-server.js';
import {
  metricSum,
  startNamedOrigin,
  tally,
  upstreamPolicy,
  whoAnswers,
  type NamedOrigin,
} from '../../support/discovery.js';
import { waitFor } from '../../support/wait.js';

let consul: ConsulServer;
let gw: RunningGateway;
const web: NamedOrigin[] = [];

/** Blocking queries answer as soon as the catalog changes: this is only a generous bound. */
const FOLLOW_MS = 10000;

before(async () => {
  for (const name of ['web1', 'web2', 'web3']) web.push(await startNamedOrigin(name));
  consul = await startConsulServer();
  consul.register('web', { id: 'web-1', address: '127.0.0.1', port: web[0]!.port, status: 'passing' });
  gw = await startGateway(gatewayYaml());
});

after(async () => {
  await gw?.stop();
  await consul?.close();
  for (const origin of web) await origin.close();
});

/** The gateway.yaml of the tests; `extra` goes into the upstream's config (a reload that keeps the block). */
function gatewayYaml(extra = ''): string {
  return [
    'routes:',
    '  - { name: web, match: { path: /web }, policy: web }',
    'policies:',
    upstreamPolicy(
      'web',
      `{ discovery: { type: consul, address: "${consul.url}", service: web }, health_check: { active: { path: /healthz, interval_ms: 100, unhealthy_threshold: 1, healthy_threshold: 1 } }${extra} }`,
    ),
    '',
  ].join('\n');
}

const targets = () =>
  metricSum(gw, 'gateway_discovery_targets', { policy: 'web', node_id: 'up', source: 'consul:web' });
const names = async (n: number) => [...(await tally(`${gw.url}/web`, n)).keys()].sort();

test('discovery consul: an added instance joins the pool through a blocking query', async () => {
  await waitFor(async () => (await whoAnswers(`${gw.url}/web`)) === 'web1', {
    timeoutMs: FOLLOW_MS,
    what: 'the first answer',
  });
  // The gateway now holds a blocking query open on the index it was given.
  await waitFor(() => consul.blocked > 0, { timeoutMs: FOLLOW_MS, what: 'a blocking query' });
  const last = consul.queries.at(-1)!;
  assert.equal(last.passing, true);
  assert.equal(last.wait, '30s');
  assert.ok(last.index !== undefined && last.index > 0, `index ${last.index}`);

  consul.register('web', { id: 'web-2', address: '127.0.0.1', port: web[1]!.port, status: 'passing' });
  await waitFor(async () => (await targets()) === 2, { timeoutMs: FOLLOW_MS, what: 'web-2 to join' });
  assert.deepEqual(await names(10), ['web1', 'web2']);
});

test('discovery consul: an instance whose Consul check fails leaves the pool, and comes back', async () => {
  consul.setStatus('web', 'web-1', 'critical');
  await waitFor(async () => (await targets()) === 1, { timeoutMs: FOLLOW_MS, what: 'web-1 to leave' });
  assert.deepEqual(await names(10), ['web2']);
  consul.setStatus('web', 'web-1', 'passing');
  await waitFor(async () => (await targets()) === 2, { timeoutMs: FOLLOW_MS, what: 'web-1 to return' });
});

test("discovery consul: a discovered target that fails the gateway's health check is skipped", async () => {
  web[2]!.healthy = false;
  consul.register('web', { id: 'web-3', address: '127.0.0.1', port: web[2]!.port, status: 'passing' });
  await waitFor(async () => (await targets()) === 3, { timeoutMs: FOLLOW_MS, what: 'web-3 to join' });
  await waitFor(
    async () =>
      (await metricSum(gw, 'gateway_upstream_target_up', { policy: 'web', target: web[2]!.address })) === 0 &&
      (await metricSum(gw, 'gateway_upstream_target_up', { policy: 'web' })) === 2,
    { timeoutMs: FOLLOW_MS, what: 'the probe to mark web-3 down' },
  );
  assert.deepEqual(await names(20), ['web1', 'web2']);
});

test('discovery consul: a deregistered instance is removed', async () => {
  consul.deregister('web', 'web-2');
  await waitFor(async () => (await targets()) === 2, { timeoutMs: FOLLOW_MS, what: 'web-2 to leave' });
  // web-3 is still probed down: web-1 alone serves.
  assert.deepEqual(await names(10), ['web1']);
});

test('discovery consul: the registry going away keeps the last pool and counts errors', async () => {
  await consul.close();
  await waitFor(
    async () => (await metricSum(gw, 'gateway_discovery_errors_total', { source: 'consul:web' })) > 0,
    {
      timeoutMs: FOLLOW_MS,
      what: 'a failed query to be counted',
    },
  );
  assert.deepEqual(await names(10), ['web1']);
  assert.equal(await targets(), 2);
});

test('discovery consul: no change above was a configuration reload', async () => {
  assert.equal(await metricSum(gw, 'gateway_config_reloads_total'), 0);
});

test('discovery consul: a reload that keeps the block keeps the source and its pool (even with the registry down)', async () => {
  await gw.gateway.apply(parseGatewayConfig(gatewayYaml(', timeout_ms: 5000')), 'admin');
  assert.equal(await metricSum(gw, 'gateway_config_reloads_total', { result: 'success' }), 1);
  // The new node starts with the pool the running source holds; a new source could not ask the
  // (closed) registry and would answer UPSTREAM_NO_HEALTHY_TARGET.
  assert.equal(await whoAnswers(`${gw.url}/web`), 'web1');
  assert.equal(await targets(), 2);
});
