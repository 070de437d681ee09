/**
 * Service discovery from Kubernetes EndpointSlices (docs/service-discovery.md#kubernetes) against the
 * test API server (test/support/kube-api-server.ts), followed through a watch: an endpoint
 * added, marked not ready, removed, a slice of another Service ignored, the watch history
 * compacted (410: listed again); none of it a configuration reload.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { KubeApiServer, type KubeObject } from '../../support/kube-api-server.js';
import { tempDir } from '../../support/temp-dir.js';
import {
  metricSum,
  startNamedOrigin,
  tally,
  upstreamPolicy,
  whoAnswers,
  type NamedOrigin,
} from '../../support/discovery.js';
import { waitFor } from '../../support/wait.js';

let api: KubeApiServer;
let gw: RunningGateway;
let dir: { path: string; remove(): void };
let savedKubeconfig: string | undefined;
const web: NamedOrigin[] = [];
const FOLLOW_MS = 10000;

/** web1..3 listen on 127.0.0.1-3 on one port, so a named slice port reaches each of them. */
async function startOrigins(): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const first = await startNamedOrigin('web1', '127.0.0.1');
    try {
      web.push(first);
      web.push(await startNamedOrigin('web2', '127.0.0.2', first.port));
      web.push(await startNamedOrigin('web3', '127.0.0.3', first.port));
      return;
    } catch (err) {
      for (const origin of web.splice(0)) await origin.close();
      if (attempt >= 5) throw err;
    }
  }
}

function slice(
  name: string,
  service: string,
  endpoints: { ip: string; ready?: boolean }[],
  port = web[0]!.port,
): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace: 'shop', labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    ports: [
      { name: 'metrics', port: 1, protocol: 'TCP' },
      { name: 'http', port, protocol: 'TCP' },
    ],
    endpoints: endpoints.map((e) => ({
      addresses: [e.ip],
      ...(e.ready === undefined ? {} : { conditions: { ready: e.ready } }),
    })),
  };
}

before(async () => {
  await startOrigins();
  api = await KubeApiServer.start({ bookmarkIntervalMs: 200 });
  dir = tempDir('switchyard-k8s-discovery-');
  const kubeconfig = api.writeKubeconfig(join(dir.path, 'kubeconfig'));
  // Without `kubeconfig` (and outside a pod) the source reads $KUBECONFIG: told apart by its token.
  savedKubeconfig = process.env.KUBECONFIG;
  process.env.KUBECONFIG = api.writeKubeconfig(join(dir.path, 'env-kubeconfig'), 'env-token');
  // An API server that is not there: a closed port.
  const dead = await KubeApiServer.start();
  const deadKubeconfig = dead.writeKubeconfig(join(dir.path, 'dead-kubeconfig'));
  await dead.close();
  api.apply(slice('web-a', 'web', [{ ip: '127.0.0.1' }]));
  // Another Service's slice in the same namespace: never a target of shop/web.
  api.apply(slice('other-a', 'other', [{ ip: '127.0.0.3' }]));
  gw = await startGateway(
    [
      'routes:',
      '  - { name: k8s, match: { path: /k8s }, policy: k8s }',
      '  - { name: k8s-env, match: { path: /env }, policy: k8s-env }',
      '  - { name: k8s-dead, match: { path: /dead }, policy: k8s-dead }',
      'policies:',
      upstreamPolicy(
        'k8s',
        `{ discovery: { type: kubernetes, service: shop/web, port: http, kubeconfig: "${kubeconfig}" } }`,
      ),
      upstreamPolicy(
        'k8s-dead',
        `{ discovery: { type: kubernetes, service: shop/dead, port: http, kubeconfig: "${deadKubeconfig}" } }`,
      ),
      upstreamPolicy(
        'k8s-env',
        `{ discovery: { type: kubernetes, service: shop/web, port: ${web[0]!.port} } }`,
      ),
      '',
    ].join('\n'),
  );
});

after(async () => {
  await gw?.stop();
  await api?.close();
  for (const origin of web) await origin.close();
  dir?.remove();
  if (savedKubeconfig === undefined) delete process.env.KUBECONFIG;
  else process.env.KUBECONFIG = savedKubeconfig;
});

const targets = () =>
  metricSum(gw, 'gateway_discovery_targets', { policy: 'k8s', node_id: 'up', source: 'kubernetes:shop/web' });
const names = async (n: number) => [...(await tally(`${gw.url}/k8s`, n)).keys()].sort();

test('discovery kubernetes: the Service’s ready endpoints are served on the named port', async () => {
  await waitFor(async () => (await whoAnswers(`${gw.url}/k8s`)) === 'web1', {
    timeoutMs: FOLLOW_MS,
    what: 'the first answer from the EndpointSlice',
  });
  assert.equal(await targets(), 1);
  assert.deepEqual(await names(10), ['web1'], 'the other Service’s endpoint is not a target');
  assert.ok(
    api.requests.some(
      (r) => r.path.endsWith('/namespaces/shop/endpointslices') && r.query.get('watch') === 'true',
    ),
    'followed through a watch',
  );
});

test('discovery kubernetes: an added endpoint joins, a not-ready one leaves, a removed one is gone', async () => {
  api.apply(slice('web-a', 'web', [{ ip: '127.0.0.1' }, { ip: '127.0.0.2', ready: true }]));
  await waitFor(async () => (await targets()) === 2, { timeoutMs: FOLLOW_MS, what: 'web2 to join' });
  assert.deepEqual(await names(10), ['web1', 'web2']);

  api.apply(slice('web-a', 'web', [{ ip: '127.0.0.1' }, { ip: '127.0.0.2', ready: false }]));
  await waitFor(async () => (await targets()) === 1, {
    timeoutMs: FOLLOW_MS,
    what: 'web2 (not ready) to leave',
  });
  assert.deepEqual(await names(10), ['web1']);

  // A second slice of the same Service adds its endpoints; removing it takes them away.
  api.apply(slice('web-b', 'web', [{ ip: '127.0.0.3' }]));
  await waitFor(async () => (await targets()) === 2, {
    timeoutMs: FOLLOW_MS,
    what: 'web3 (slice web-b) to join',
  });
  assert.deepEqual(await names(10), ['web1', 'web3']);
  assert.ok(api.remove('EndpointSlice', 'shop', 'web-b'));
  await waitFor(async () => (await targets()) === 1, { timeoutMs: FOLLOW_MS, what: 'web3 to be gone' });
  assert.deepEqual(await names(10), ['web1']);
});

test('discovery kubernetes: a change the watch missed (410 Gone) is found by listing again', async () => {
  const lists = () =>
    api.requests.filter((r) => r.path.endsWith('/endpointslices') && r.query.get('watch') !== 'true').length;
  const before = lists();
  // (synchronous: the watch is cut before the change and cannot resume past it)
  api.dropWatches();
  api.apply(slice('web-a', 'web', [{ ip: '127.0.0.1' }, { ip: '127.0.0.2' }]));
  api.compact();
  await waitFor(() => lists() > before, { timeoutMs: FOLLOW_MS, what: 'a relist after 410 Gone' });
  await waitFor(async () => (await targets()) === 2, {
    timeoutMs: FOLLOW_MS,
    what: 'web2 (ready absent) to join',
  });
  assert.deepEqual(await names(10), ['web1', 'web2']);
});

test('discovery kubernetes: without kubeconfig the source reads $KUBECONFIG; a port number is used as is', async () => {
  await waitFor(async () => (await whoAnswers(`${gw.url}/env`)) === 'web1', {
    timeoutMs: FOLLOW_MS,
    what: 'the policy without kubeconfig to be served',
  });
  const slices = api.requests.filter((r) => r.path.endsWith('/namespaces/shop/endpointslices'));
  assert.ok(
    slices.some((r) => r.token === 'env-token'),
    'a list or watch with the $KUBECONFIG token',
  );
  assert.ok(
    slices.some((r) => r.token === 'test-token'),
    'and one with the kubeconfig file’s token',
  );
});

test('discovery kubernetes: an API server that cannot be reached counts errors; the pool stays empty', async () => {
  await waitFor(
    async () =>
      (await metricSum(gw, 'gateway_discovery_errors_total', { source: 'kubernetes:shop/dead' })) >= 1,
    {
      timeoutMs: 20000,
      what: 'a failed first list to be counted',
    },
  );
  assert.equal(await whoAnswers(`${gw.url}/dead`), '502 UPSTREAM_NO_HEALTHY_TARGET');
});

test('discovery kubernetes: following the slices is not a configuration reload', async () => {
  assert.equal(await metricSum(gw, 'gateway_config_reloads_total'), 0);
});
