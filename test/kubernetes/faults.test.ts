// Faults of `config.source: kubernetes` (issue 32 item 5, docs/kubernetes.md): the API server going
// away and coming back, and the Lease handed over between two gateway replicas.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { parseSystemConfig } from '../../src/config/system.js';
import { Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/core/logger.js';
import { KubernetesSource } from '../../src/kubernetes/source.js';
import { LeaderElector } from '../../src/kubernetes/leader.js';
import { KubeApiServer } from '../support/kube-api-server.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const NS = 'apps';
const LEASE = 'switchyard-gateway-controller';

async function echo(t: TestContext, pod: string): Promise<number> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ pod }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  return (server.address() as AddressInfo).port;
}

function backendYaml(name: string, port: number): string {
  return `
apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: ${NS} }
spec: { ports: [{ name: http, protocol: TCP, port: 8080 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: ${name}-x, namespace: ${NS}, labels: { kubernetes.io/service-name: ${name} } }
addressType: IPv4
ports: [{ name: http, port: ${port}, protocol: TCP }]
endpoints: [{ addresses: [127.0.0.1], conditions: { ready: true } }]
`;
}

const CLASS_AND_GATEWAY = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: switchyard }
spec: { controllerName: switchyard.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${NS} }
spec:
  gatewayClassName: switchyard
  listeners: [{ name: http, port: 80, protocol: HTTP }]
`;

function routeYaml(backend: string): string {
  return `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: r, namespace: ${NS} }
spec:
  parentRefs: [{ name: gw }]
  rules: [{ backendRefs: [{ name: ${backend}, port: 8080 }] }]
`;
}

async function cluster(t: TestContext): Promise<KubeApiServer> {
  const api = await KubeApiServer.start({ bookmarkIntervalMs: 200 });
  t.after(() => api.close());
  api.applyYaml(backendYaml('v1', await echo(t, 'v1-pod')));
  api.applyYaml(backendYaml('v2', await echo(t, 'v2-pod')));
  api.applyYaml(CLASS_AND_GATEWAY);
  api.applyYaml(routeYaml('v1'));
  return api;
}

interface Replica {
  gateway: Gateway;
  source: KubernetesSource;
  base: string;
  token: string;
}

async function replica(
  t: TestContext,
  api: KubeApiServer,
  name: string,
  leaseSeconds: number,
): Promise<Replica> {
  const dir = tempDir('switchyard-k8s-faults-');
  t.after(() => dir.remove());
  const kubeconfig = api.writeKubeconfig(join(dir.path, 'kubeconfig'), name);
  const port = await freePort();
  const system = parseSystemConfig(`
listener: { bind: 127.0.0.1, port: 0 }
timeouts: { shutdown_timeout_seconds: 2 }
config:
  source: kubernetes
  kubernetes:
    kubeconfig: ${kubeconfig}
    port_offset: ${port - 80}
    status_address: 10.9.9.9
    leader_election: { lease_namespace: default, lease_duration_seconds: ${leaseSeconds} }
`);
  const source = new KubernetesSource(
    system.config.kubernetes,
    silentLogger,
    { POD_NAME: name },
    '127.0.0.1',
  );
  const gateway = Gateway.createFromKubernetes({ system, logger: silentLogger, kubernetes: source });
  let stopped = false;
  t.after(async () => {
    if (!stopped) await gateway.shutdown();
  });
  const shutdown = gateway.shutdown.bind(gateway);
  gateway.shutdown = async () => {
    stopped = true;
    await shutdown();
  };
  await gateway.listen();
  await waitFor(() => gateway.notReady() === undefined, { timeoutMs: 15_000, what: `${name}: first sync` });
  return { gateway, source, base: `http://127.0.0.1:${port}`, token: name };
}

async function pod(base: string): Promise<string> {
  try {
    const res = await fetch(`${base}/`);
    const text = await res.text();
    return res.status === 200 ? (JSON.parse(text) as { pod: string }).pod : `status ${res.status}`;
  } catch (err) {
    return `error ${String(err)}`;
  }
}

type Cond = { type: string; status: string; observedGeneration?: number };

function routeAccepted(api: KubeApiServer): Cond | undefined {
  const r = api.get('HTTPRoute', NS, 'r') as { status?: { parents?: { conditions: Cond[] }[] } } | undefined;
  return r?.status?.parents?.[0]?.conditions.find((c) => c.type === 'Accepted');
}

function holder(api: KubeApiServer): string | undefined {
  return (api.get('Lease', 'default', LEASE) as { spec?: { holderIdentity?: string } } | undefined)?.spec
    ?.holderIdentity;
}

function statusWriters(api: KubeApiServer, since = 0): Set<string | undefined> {
  return new Set(
    api.requests
      .slice(since)
      .filter((r) => r.path.endsWith('/status') && (r.method === 'PATCH' || r.method === 'PUT'))
      .map((r) => r.token),
  );
}

function routeLists(api: KubeApiServer): number {
  return api.requests.filter(
    (r) => r.path.endsWith('/httproutes') && r.method === 'GET' && !r.query.has('watch'),
  ).length;
}

test('the API server going away: the last configuration keeps serving; changes made meanwhile are picked up when it returns (watch resumed, or relisted after 410)', async (t) => {
  const api = await cluster(t);
  const a = await replica(t, api, 'replica-a', 2);
  await waitFor(async () => (await pod(a.base)) === 'v1-pod', { timeoutMs: 10_000, what: 'v1 served' });
  await waitFor(() => routeAccepted(api)?.observedGeneration === 1, { timeoutMs: 10_000, what: 'status' });
  await waitFor(() => a.source.leader, { timeoutMs: 10_000, what: 'leadership' });

  for (const [round, freshCache] of [
    [1, false],
    [2, true],
  ] as const) {
    const lists = routeLists(api);
    await api.stop();
    // Until the gateway has noticed (its Lease renewal fails: it gives up leadership), and after:
    // every request is still answered by the last configuration.
    const answers: string[] = [];
    await waitFor(
      async () => {
        answers.push(await pod(a.base));
        return !a.source.leader;
      },
      { timeoutMs: 10_000, what: 'the gateway noticing the outage' },
    );
    // Changed while the API server is away (another API server replica took the write).
    api.applyYaml(routeYaml(round === 1 ? 'v2' : 'v1'));
    for (let i = 0; i < 5; i++) answers.push(await pod(a.base));
    assert.deepEqual([...new Set(answers)], [round === 1 ? 'v1-pod' : 'v2-pod'], `round ${round}`);

    await api.restart({ freshCache });
    const want = round === 1 ? 'v2-pod' : 'v1-pod';
    await waitFor(async () => (await pod(a.base)) === want, {
      timeoutMs: 30_000,
      what: `round ${round}: the change made while away is served`,
    });
    await waitFor(() => routeAccepted(api)?.observedGeneration === round + 1, {
      timeoutMs: 15_000,
      what: `round ${round}: status of generation ${round + 1} written after the return`,
    });
    assert.ok(a.source.leader, 'the Lease is held again');
    if (freshCache)
      assert.ok(routeLists(api) > lists, 'a watch answered 410 Gone made the informer list again');
    else assert.equal(routeLists(api), lists, 'the watch resumed from its resourceVersion, no relist');
  }
});

test('leader hand-over: two replicas serve; only the Lease holder writes statuses; on its shutdown the other takes over within leaseDurationSeconds', async (t) => {
  const LEASE_SECONDS = 3;
  const api = await cluster(t);
  const replicas = [
    await replica(t, api, 'replica-a', LEASE_SECONDS),
    await replica(t, api, 'replica-b', LEASE_SECONDS),
  ];
  for (const r of replicas)
    await waitFor(async () => (await pod(r.base)) === 'v1-pod', {
      timeoutMs: 10_000,
      what: `${r.token} serves`,
    });
  await waitFor(() => holder(api) !== undefined, { timeoutMs: 10_000, what: 'a Lease holder' });
  const first = replicas.find((r) => r.token === holder(api)) as Replica;
  const other = replicas.find((r) => r !== first) as Replica;
  await waitFor(() => first.source.leader, { timeoutMs: 10_000, what: 'the holder knows' });
  assert.equal(other.source.leader, false);

  // A change: both replicas serve it, only the holder writes the status.
  api.applyYaml(routeYaml('v2'));
  for (const r of replicas)
    await waitFor(async () => (await pod(r.base)) === 'v2-pod', {
      timeoutMs: 10_000,
      what: `${r.token} follows`,
    });
  await waitFor(() => routeAccepted(api)?.observedGeneration === 2, {
    timeoutMs: 10_000,
    what: 'status gen 2',
  });
  assert.deepEqual([...statusWriters(api)], [first.token]);

  const mark = api.requests.length;
  const stoppedAt = Date.now();
  await first.gateway.shutdown();
  await waitFor(() => holder(api) === other.token && other.source.leader, {
    timeoutMs: 3 * LEASE_SECONDS * 1000,
    what: 'the other replica holding the Lease',
  });
  const tookMs = Date.now() - stoppedAt;
  assert.ok(tookMs < LEASE_SECONDS * 1000, `took over in ${tookMs} ms, within ${LEASE_SECONDS} s`);

  api.applyYaml(routeYaml('v1'));
  await waitFor(async () => (await pod(other.base)) === 'v1-pod', {
    timeoutMs: 10_000,
    what: 'still serving',
  });
  await waitFor(() => routeAccepted(api)?.observedGeneration === 3, {
    timeoutMs: 10_000,
    what: 'status gen 3',
  });
  assert.deepEqual([...statusWriters(api, mark)], [other.token]);
});

test('a Lease holder that dies (no release) is replaced once the Lease expired, not before', async (t) => {
  const api = await KubeApiServer.start();
  t.after(() => api.close());
  const dir = tempDir('switchyard-k8s-lease-');
  t.after(() => dir.remove());
  const electors: { leader: boolean; elector: LeaderElector }[] = [];
  for (const id of ['a', 'b']) {
    const kc = new KubeConfig();
    kc.loadFromFile(api.writeKubeconfig(join(dir.path, `kubeconfig-${id}`), id));
    const entry = { leader: false, elector: undefined as unknown as LeaderElector };
    entry.elector = new LeaderElector(
      kc,
      { name: LEASE, namespace: 'default', identity: id, leaseDurationSeconds: 2 },
      silentLogger,
      (leader) => (entry.leader = leader),
    );
    electors.push(entry);
    t.after(() => entry.elector.stop(false));
  }
  const [a, b] = electors as [(typeof electors)[0], (typeof electors)[0]];
  a.elector.start();
  await waitFor(() => a.leader, { timeoutMs: 10_000, what: 'a leads' });
  b.elector.start();
  // b tries while a renews: a keeps it.
  await waitFor(() => api.requests.some((r) => r.token === 'b' && r.path.includes('/leases/')), {
    timeoutMs: 10_000,
    what: 'b trying',
  });
  assert.equal(b.leader, false);
  const renewed = new Date(
    (api.get('Lease', 'default', LEASE) as { spec: { renewTime: string } }).spec.renewTime,
  ).getTime();
  await a.elector.stop(false); // dies: the Lease stays with a until it expires
  assert.equal(holder(api), 'a');
  await waitFor(() => b.leader, { timeoutMs: 10_000, what: 'b takes over' });
  const lease = api.get('Lease', 'default', LEASE) as {
    spec: { holderIdentity: string; acquireTime: string; leaseTransitions: number };
  };
  assert.equal(lease.spec.holderIdentity, 'b');
  assert.equal(lease.spec.leaseTransitions, 1);
  const acquired = new Date(lease.spec.acquireTime).getTime();
  // Lease times carry microseconds; the expiry is renewTime + 2 s. Taken over after it, within one
  // renew period (2 s / 3) plus a generous margin.
  assert.ok(acquired >= renewed + 2000 - 5, `acquired ${acquired - renewed} ms after the last renew`);
  assert.ok(acquired - renewed < 2000 + 2000, `acquired ${acquired - renewed} ms after the last renew`);
});
