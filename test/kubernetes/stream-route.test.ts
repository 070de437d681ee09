// TCPRoute and UDPRoute (issue 32): upstream conformance manifests (GATEWAY-TCP/UDP cases of
// kubernetes-sigs/gateway-api conformance/tests) served on the stream sockets at port +
// port_offset, against the suite's TCP and UDP echo backends behind EndpointSlices.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import {
  INFRA,
  WEB,
  listeners,
  routeCondition,
  startHarness,
  tcpAsk,
  tcpEcho,
  udpAsk,
  udpEcho,
  type Harness,
} from './route-harness.js';
import { waitFor } from '../support/wait.js';

let h: Harness;

before(async () => {
  h = await startHarness({
    tcp: [5300, 9300, 9301, 9302, 9310, 9311, 9312, 9313, 9320, 9321],
    udp: [5300, 5301, 5302],
  });
});

after(async () => {
  await h?.close();
});

/** The pod answering a TCP echo handshake on the declared port, or the error. */
function tcpPod(port: number): Promise<string | Error> {
  return tcpAsk(connect(port + h.offset, '127.0.0.1'));
}

async function tcpReaches(port: number, pod: string): Promise<void> {
  await waitFor(async () => (await tcpPod(port)) === pod, { timeoutMs: 15_000, what: `${pod} on :${port}` });
}

test('TCPRouteWeightedRouting: connections split 70/30/0 across the weighted backends', async (t) => {
  t.after(await h.applyCase('tcproute-weighted-routing.yaml', tcpEcho));
  await routeCondition(h.api, 'TCPRoute', 'tcp-weighted-route', 'tcp-weighted-gateway', ['Accepted', 'True']);
  await waitFor(async () => String(await tcpPod(9300)).startsWith('tcp-backend-'), {
    timeoutMs: 15_000,
    what: 'echo',
  });
  const counts = new Map<string, number>();
  for (let i = 0; i < 200; i++) {
    const pod = await tcpPod(9300);
    assert.equal(typeof pod, 'string', String(pod));
    counts.set(pod as string, (counts.get(pod as string) ?? 0) + 1);
  }
  const share = (pod: string) => (counts.get(pod) ?? 0) / 200;
  assert.ok(Math.abs(share('tcp-backend-v1-pod-1') - 0.7) <= 0.05, JSON.stringify([...counts]));
  assert.ok(Math.abs(share('tcp-backend-v2-pod-1') - 0.3) <= 0.05, JSON.stringify([...counts]));
  assert.equal(counts.get('tcp-backend-v3-pod-1'), undefined);
});

test('TCPRouteParentRefPortAndSectionName: a route attaches by port, sectionName, or both, to its listener only', async (t) => {
  t.after(await h.applyCase('tcproute-parentref-port-and-section-name.yaml', tcpEcho));
  for (const r of ['tcp-route-by-port', 'tcp-route-by-section', 'tcp-route-by-section-and-port'])
    await routeCondition(h.api, 'TCPRoute', r, 'tcp-multi-listener-gateway', [
      'Accepted',
      'True',
      'Accepted',
    ]);
  await tcpReaches(9300, 'tcp-echo-one-pod-1');
  await tcpReaches(9301, 'tcp-echo-two-pod-1');
  await tcpReaches(9302, 'tcp-echo-three-pod-1');
  const l = listeners(h.api, 'tcp-multi-listener-gateway');
  assert.deepEqual(
    l.map((x) => [x.name, x.attachedRoutes, x.supportedKinds.map((k) => k.kind)]),
    [
      ['one', 1, ['TCPRoute']],
      ['two', 1, ['TCPRoute']],
      ['three', 1, ['TCPRoute']],
    ],
  );
});

test('TCPRouteParentRefAttachAll: a parentRef without sectionName or port attaches to every TCP listener', async (t) => {
  t.after(await h.applyCase('tcproute-parentref-attach-all.yaml', tcpEcho));
  await routeCondition(h.api, 'TCPRoute', 'tcp-route-attach-all', 'tcp-attach-all-gateway', [
    'Accepted',
    'True',
  ]);
  for (const port of [9310, 9311, 9312, 9313]) await tcpReaches(port, 'tcp-echo-attach-all-pod-1');
});

test('TCPRouteMultipleRoutesAttachment: both routes Accepted, 2 attached; the older keeps the traffic', async (t) => {
  t.after(await h.applyCase('tcproute-multiple-routes-attachment.yaml', tcpEcho));
  await routeCondition(h.api, 'TCPRoute', 'tcproute-attach-older', 'tcp-multi-route-attach-gateway', [
    'Accepted',
    'True',
  ]);
  await tcpReaches(9310, 'tcp-attach-backend-1-pod-1');
  // creationTimestamp has second precision: the newer route must be created a second later.
  const older = h.api.get('TCPRoute', INFRA, 'tcproute-attach-older')?.metadata.creationTimestamp ?? '';
  await waitFor(() => new Date().toISOString().replace(/\.\d+Z$/, 'Z') > older, {
    timeoutMs: 3000,
    what: 'the next second',
  });
  h.api.apply({
    apiVersion: 'gateway.networking.k8s.io/v1alpha2',
    kind: 'TCPRoute',
    metadata: { name: 'tcproute-attach-newer', namespace: INFRA },
    spec: {
      parentRefs: [{ name: 'tcp-multi-route-attach-gateway', sectionName: 'tcp' }],
      rules: [{ backendRefs: [{ name: 'tcp-attach-backend-2', port: 3000 }] }],
    },
  });
  t.after(() => h.api.remove('TCPRoute', INFRA, 'tcproute-attach-newer'));
  await routeCondition(h.api, 'TCPRoute', 'tcproute-attach-newer', 'tcp-multi-route-attach-gateway', [
    'Accepted',
    'True',
  ]);
  await waitFor(() => listeners(h.api, 'tcp-multi-route-attach-gateway')[0]?.attachedRoutes === 2, {
    timeoutMs: 10_000,
    what: 'attachedRoutes 2',
  });
  for (let i = 0; i < 5; i++) assert.equal(await tcpPod(9310), 'tcp-attach-backend-1-pod-1');
});

test('TCPRouteInvalidBackendRefNonexistent: ResolvedRefs False BackendNotFound; the connection is closed', async (t) => {
  t.after(await h.applyCase('tcproute-invalid-backendref-nonexistent.yaml', tcpEcho));
  await routeCondition(
    h.api,
    'TCPRoute',
    'tcp-route-invalid-backend-ref-nonexistent',
    'tcp-gateway-invalid-backend',
    ['ResolvedRefs', 'False', 'BackendNotFound'],
  );
  await waitFor(async () => (await tcpPod(9300)) instanceof Error, { timeoutMs: 10_000, what: 'rejection' });
});

test('TCPRouteInvalidCrossNamespaceBackendRef: no ReferenceGrant → RefNotPermitted; the connection is closed', async (t) => {
  t.after(await h.applyCase('tcproute-invalid-cross-namespace-backend-ref.yaml', tcpEcho));
  await routeCondition(
    h.api,
    'TCPRoute',
    'tcp-invalid-cross-namespace-backend-ref',
    'tcp-invalid-cross-namespace-backend-ref-gateway',
    ['ResolvedRefs', 'False', 'RefNotPermitted'],
  );
  assert.ok((await tcpPod(9321)) instanceof Error);
});

test('TCPRouteReferenceGrant: a granted cross-namespace backend serves; deleting the grant → RefNotPermitted, closed', async (t) => {
  t.after(await h.applyCase('tcproute-reference-grant.yaml', tcpEcho));
  await routeCondition(h.api, 'TCPRoute', 'tcp-reference-grant', 'tcp-reference-grant-gateway', [
    'ResolvedRefs',
    'True',
  ]);
  await tcpReaches(9320, 'tcp-reference-grant-backend-pod-1');
  assert.equal(h.api.remove('ReferenceGrant', WEB, 'tcp-reference-grant'), true);
  await routeCondition(h.api, 'TCPRoute', 'tcp-reference-grant', 'tcp-reference-grant-gateway', [
    'ResolvedRefs',
    'False',
    'RefNotPermitted',
  ]);
  await waitFor(async () => (await tcpPod(9320)) instanceof Error, { timeoutMs: 10_000, what: 'rejection' });
});

test('TCPRouteInvalidNonTCPListener: a TCPRoute to an HTTP listener → NotAllowedByListeners, 0 attached', async (t) => {
  t.after(await h.applyCase('tcproute-invalid-non-tcp-listener.yaml', tcpEcho));
  await routeCondition(h.api, 'TCPRoute', 'tcp-route', 'tcp-mixed-protocol-gateway', [
    'Accepted',
    'False',
    'NotAllowedByListeners',
  ]);
  await waitFor(
    () =>
      JSON.stringify(listeners(h.api, 'tcp-mixed-protocol-gateway').map((l) => l.attachedRoutes)) === '[0]',
    {
      timeoutMs: 10_000,
      what: '0 routes attached',
    },
  );
});

test('EndpointSlice changes on a TCPRoute backend are followed without restart (not an upstream case)', async (t) => {
  t.after(await h.applyCase('tcproute-parentref-port-and-section-name.yaml', tcpEcho));
  await tcpReaches(9300, 'tcp-echo-one-pod-1');
  const slice = h.api.get('EndpointSlice', INFRA, 'tcp-echo-one-abcde') as {
    endpoints: { addresses: string[]; conditions: { ready: boolean } }[];
  } & Parameters<Harness['api']['apply']>[0];
  h.api.apply({ ...slice, endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: false } }] });
  await waitFor(async () => (await tcpPod(9300)) instanceof Error, { timeoutMs: 10_000, what: 'not ready' });
  h.api.apply({ ...slice, endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }] });
  await tcpReaches(9300, 'tcp-echo-one-pod-1');
});

test('UDPRouteSimple: datagrams reach the backend through the UDP listener', async (t) => {
  const port = await udpEcho(INFRA, 'coredns-pod-1');
  h.service(INFRA, 'coredns', 53, port, 'UDP');
  t.after(await h.applyCase('udproute-simple.yaml', udpEcho));
  await routeCondition(h.api, 'UDPRoute', 'udp-coredns', 'udp-gateway', ['Accepted', 'True']);
  await waitFor(async () => (await udpAsk(5300 + h.offset))?.pod === 'coredns-pod-1', {
    timeoutMs: 15_000,
    what: 'the UDP echo',
  });
  const l = listeners(h.api, 'udp-gateway');
  assert.deepEqual(
    l[0]?.supportedKinds.map((k) => k.kind),
    ['UDPRoute'],
  );
  assert.equal(l[0]?.attachedRoutes, 1);
});

test('UDPRouteWeightedRouting: sessions split 70/30/0 across the weighted backends', async (t) => {
  t.after(await h.applyCase('udproute-weighted-routing.yaml', udpEcho));
  // Until the weighted route is applied, the port may still relay to the previous case's backend.
  await waitFor(async () => (await udpAsk(5300 + h.offset))?.pod.startsWith('udp-backend-') === true, {
    timeoutMs: 15_000,
    what: 'echo',
  });
  const counts = new Map<string, number>();
  // Each new client socket is a new session: the balancer picks its backend.
  for (let i = 0; i < 100; i++) {
    const answer = await udpAsk(5300 + h.offset, 2000);
    assert.ok(answer !== undefined);
    counts.set(answer.pod, (counts.get(answer.pod) ?? 0) + 1);
  }
  const share = (pod: string) => (counts.get(pod) ?? 0) / 100;
  assert.ok(Math.abs(share('udp-backend-v1-pod-1') - 0.7) <= 0.05, JSON.stringify([...counts]));
  assert.ok(Math.abs(share('udp-backend-v2-pod-1') - 0.3) <= 0.05, JSON.stringify([...counts]));
  assert.equal(counts.get('udp-backend-v3-pod-1'), undefined);
});

test('UDPRouteParentRefPortAndSectionName: each route reaches its own UDP listener', async (t) => {
  t.after(await h.applyCase('udproute-parentref-port-and-section-name.yaml', udpEcho));
  const expect: [number, string][] = [
    [5300, 'udp-echo-by-port-pod-1'],
    [5301, 'udp-echo-by-section-pod-1'],
    [5302, 'udp-echo-by-section-and-port-pod-1'],
  ];
  for (const [port, pod] of expect)
    await waitFor(async () => (await udpAsk(port + h.offset))?.pod === pod, { timeoutMs: 15_000, what: pod });
});

test('UDPRouteReferenceGrant: a granted cross-namespace backend serves', async (t) => {
  t.after(await h.applyCase('udproute-reference-grant.yaml', udpEcho));
  await waitFor(async () => (await udpAsk(5300 + h.offset))?.pod === 'udp-echo-reference-grant-pod-1', {
    timeoutMs: 15_000,
    what: 'the granted backend',
  });
  await routeCondition(h.api, 'UDPRoute', 'udp-route-reference-grant', 'udp-gateway-reference-grant', [
    'ResolvedRefs',
    'True',
  ]);
});

test('UDPRouteInvalidBackendRefNonexistent: ResolvedRefs False BackendNotFound; no answer', async (t) => {
  t.after(await h.applyCase('udproute-invalid-backendref-nonexistent.yaml', udpEcho));
  await routeCondition(
    h.api,
    'UDPRoute',
    'udp-route-invalid-backend-ref-nonexistent',
    'udp-gateway-invalid-backend',
    ['ResolvedRefs', 'False', 'BackendNotFound'],
  );
  assert.equal(await udpAsk(5300 + h.offset, 500), undefined);
});

test('UDPRouteNotAllowedByListeners: a UDPRoute to a TLS listener → NotAllowedByListeners', async (t) => {
  t.after(await h.applyCase('udproute-not-allowed-by-listeners.yaml', udpEcho));
  await routeCondition(h.api, 'UDPRoute', 'udproute-not-allowed-by-listeners', 'udproute-tls-only-gateway', [
    'Accepted',
    'False',
    'NotAllowedByListeners',
  ]);
  await waitFor(
    () =>
      JSON.stringify(listeners(h.api, 'udproute-tls-only-gateway').map((l) => l.attachedRoutes)) === '[0]',
    {
      timeoutMs: 10_000,
      what: '0 routes attached',
    },
  );
});

test('UDPRouteMultipleRoutesAttachment: both routes Accepted, 2 attached; only the older one gets datagrams', async (t) => {
  t.after(await h.applyCase('udproute-multiple-routes-attachment.yaml', udpEcho));
  await routeCondition(h.api, 'UDPRoute', 'udproute-attach-older', 'udp-multi-route-attach-gateway', [
    'Accepted',
    'True',
  ]);
  await waitFor(async () => (await udpAsk(5301 + h.offset))?.pod === 'udp-attach-backend-1-pod-1', {
    timeoutMs: 15_000,
    what: 'the older route',
  });
  const older = h.api.get('UDPRoute', INFRA, 'udproute-attach-older')?.metadata.creationTimestamp ?? '';
  await waitFor(() => new Date().toISOString().replace(/\.\d+Z$/, 'Z') > older, {
    timeoutMs: 3000,
    what: 'the next second',
  });
  h.api.apply({
    apiVersion: 'gateway.networking.k8s.io/v1alpha2',
    kind: 'UDPRoute',
    metadata: { name: 'udproute-attach-newer', namespace: INFRA },
    spec: {
      parentRefs: [{ name: 'udp-multi-route-attach-gateway', sectionName: 'udp' }],
      rules: [{ backendRefs: [{ name: 'udp-attach-backend-2', port: 8080 }] }],
    },
  });
  t.after(() => h.api.remove('UDPRoute', INFRA, 'udproute-attach-newer'));
  await routeCondition(h.api, 'UDPRoute', 'udproute-attach-newer', 'udp-multi-route-attach-gateway', [
    'Accepted',
    'True',
  ]);
  await waitFor(() => listeners(h.api, 'udp-multi-route-attach-gateway')[0]?.attachedRoutes === 2, {
    timeoutMs: 10_000,
    what: 'attachedRoutes 2',
  });
  for (let i = 0; i < 10; i++)
    assert.equal((await udpAsk(5301 + h.offset, 2000))?.pod, 'udp-attach-backend-1-pod-1');
});

test('UDPRouteInvalidCrossNamespaceBackendRef: no ReferenceGrant → RefNotPermitted; no answer', async (t) => {
  t.after(await h.applyCase('udproute-invalid-cross-namespace-backend-ref.yaml', udpEcho));
  await routeCondition(
    h.api,
    'UDPRoute',
    'udp-route-invalid-cross-namespace-backend-ref',
    'udp-gateway-invalid-cross-namespace-backend-ref',
    ['ResolvedRefs', 'False', 'RefNotPermitted'],
  );
  assert.equal(await udpAsk(5300 + h.offset, 500), undefined);
});
