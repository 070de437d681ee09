// A gateway with `config.source: kubernetes` against the test API server, serving upstream
// Gateway API conformance manifests (test/kubernetes/fixtures/conformance/, taken as data from
// kubernetes-sigs/gateway-api conformance/tests/*.yaml) and checked against the expectations
// their Go tests encode. Backends are local echo servers behind EndpointSlices (docs/kubernetes.md).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { parseSystemConfig } from '../../src/config/system.js';
import { Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/core/logger.js';
import { KubernetesSource } from '../../src/kubernetes/source.js';
import { ConfigSourceReadOnly } from '../../src/kubernetes/errors.js';
import { KubeApiServer } from '../support/kube-api-server.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const INFRA = 'gateway-conformance-infra';
const FIXTURES = join(import.meta.dirname, 'fixtures', 'conformance');
const BACKENDS: [string, string][] = [
  [INFRA, 'infra-backend-v1'],
  [INFRA, 'infra-backend-v2'],
  [INFRA, 'infra-backend-v3'],
];

let api: KubeApiServer;
let gateway: Gateway;
let base: string;
const echoes: Server[] = [];
const dir = tempDir('switchyard-k8s-conf-');

interface Echo {
  path: string;
  host: string;
  method: string;
  headers: Record<string, string[]>;
  namespace: string;
  pod: string;
}

/** The conformance echo server's answer: JSON with path, host, method, headers, namespace, pod. */
async function startEcho(namespace: string, pod: string): Promise<number> {
  const server = createServer((req, res) => {
    const headers: Record<string, string[]> = {};
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i] as string;
      (headers[name] ??= []).push(req.rawHeaders[i + 1] as string);
    }
    const body: Echo = {
      path: req.url ?? '',
      host: req.headers.host ?? '',
      method: req.method ?? '',
      headers,
      namespace,
      pod,
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  echoes.push(server);
  return (server.address() as AddressInfo).port;
}

function serviceYaml(namespace: string, name: string, port: number): string {
  return `
apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: ${namespace} }
spec:
  selector: { app: ${name} }
  ports: [{ name: http, protocol: TCP, port: 8080, targetPort: 3000 }]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: ${name}-abcde
  namespace: ${namespace}
  labels: { kubernetes.io/service-name: ${name} }
addressType: IPv4
ports: [{ name: http, port: ${port}, protocol: TCP }]
endpoints:
  - addresses: [127.0.0.1]
    conditions: { ready: true }
`;
}

const BASE = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: switchyard }
spec: { controllerName: switchyard.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: someone-else }
spec: { controllerName: example.com/other-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: same-namespace, namespace: ${INFRA} }
spec:
  gatewayClassName: switchyard
  listeners:
    - { name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: Same } } }
`;

async function get(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; echo: Echo | undefined; headers: Headers }> {
  const res = await fetch(`${base}${path}`, { headers, redirect: 'manual' });
  const text = await res.text();
  let echo: Echo | undefined;
  try {
    const parsed = JSON.parse(text) as Partial<Echo>;
    if (typeof parsed.pod === 'string') echo = parsed as Echo;
  } catch {
    echo = undefined;
  }
  return { status: res.status, echo, headers: res.headers };
}

type Cond = { type: string; status: string; reason: string; observedGeneration?: number };

function routeParent(name: string): { conditions: Cond[] } | undefined {
  const route = api.get('HTTPRoute', INFRA, name) as
    { status?: { parents?: { conditions: Cond[] }[] } } | undefined;
  return route?.status?.parents?.[0];
}

function cond(list: Cond[] | undefined, type: string): Cond | undefined {
  return list?.find((c) => c.type === type);
}

/** Applies a conformance manifest and waits until the controller reported the route accepted. */
async function applyCase(file: string, routes: string[]): Promise<() => void> {
  const objects = api.applyYaml(readFileSync(join(FIXTURES, file), 'utf8'));
  await waitFor(() => routes.every((r) => cond(routeParent(r)?.conditions, 'Accepted') !== undefined), {
    timeoutMs: 15_000,
    what: `status of ${routes.join(', ')}`,
  });
  return () => {
    for (const o of objects) api.remove(o.kind as string, o.metadata.namespace, o.metadata.name);
  };
}

before(async () => {
  api = await KubeApiServer.start({ bookmarkIntervalMs: 200 });
  for (const [ns, name] of BACKENDS)
    api.applyYaml(serviceYaml(ns, name, await startEcho(ns, `${name}-pod-1`)));
  api.applyYaml(BASE);
  const port = await freePort();
  const kubeconfig = api.writeKubeconfig(join(dir.path, 'kubeconfig'));
  const system = parseSystemConfig(`
listener: { bind: 127.0.0.1, port: 0 }
timeouts: { shutdown_timeout_seconds: 2 }
config:
  source: kubernetes
  kubernetes:
    kubeconfig: ${kubeconfig}
    port_offset: ${port - 80}
    status_address: 10.1.2.3
    leader_election: { lease_namespace: default, lease_duration_seconds: 3 }
`);
  const kubernetes = new KubernetesSource(system.config.kubernetes, silentLogger, {}, '127.0.0.1');
  gateway = Gateway.createFromKubernetes({ system, logger: silentLogger, kubernetes });
  assert.match(gateway.notReady() ?? '', /waiting for the first list/);
  await gateway.listen();
  await waitFor(() => gateway.notReady() === undefined, { timeoutMs: 15_000, what: 'the first sync' });
  await waitFor(async () => (await gateway.gatewayPorts()).has(80), { timeoutMs: 15_000, what: 'port 80' });
  base = `http://127.0.0.1:${port}`;
});

after(async () => {
  await gateway?.shutdown();
  await api?.close();
  for (const e of echoes) e.close();
  dir.remove();
});

test('GatewayClass and Gateway statuses: ours accepted with observedGeneration, the other class untouched', async () => {
  await waitFor(
    () =>
      cond(
        (api.get('Gateway', INFRA, 'same-namespace')?.status as { conditions?: Cond[] })?.conditions,
        'Programmed',
      ) !== undefined,
    {
      timeoutMs: 15_000,
      what: 'the Gateway status',
    },
  );
  const gc = api.get('GatewayClass', undefined, 'switchyard') as { status?: { conditions: Cond[] } };
  assert.equal(cond(gc.status?.conditions, 'Accepted')?.status, 'True');
  assert.equal(cond(gc.status?.conditions, 'SupportedVersion')?.status, 'True');
  assert.equal(cond(gc.status?.conditions, 'Accepted')?.observedGeneration, 1);
  assert.equal(api.get('GatewayClass', undefined, 'someone-else')?.status, undefined);
  const gw = api.get('Gateway', INFRA, 'same-namespace') as {
    status: {
      conditions: Cond[];
      addresses: { type: string; value: string }[];
      listeners: { name: string; conditions: Cond[] }[];
    };
  };
  assert.equal(cond(gw.status.conditions, 'Accepted')?.status, 'True');
  assert.equal(cond(gw.status.conditions, 'Programmed')?.status, 'True');
  assert.deepEqual(gw.status.addresses, [{ type: 'IPAddress', value: '10.1.2.3' }]);
  assert.equal(cond(gw.status.listeners[0]?.conditions, 'Programmed')?.status, 'True');
  // The Lease is held by this replica.
  const lease = api.get('Lease', 'default', 'switchyard-gateway-controller') as {
    spec: { holderIdentity: string };
  };
  assert.match(lease.spec.holderIdentity, /./);
});

test('HTTPRouteSimpleSameNamespace: / reaches infra-backend-v1; attachedRoutes counts it', async (t) => {
  t.after(await applyCase('httproute-simple-same-namespace.yaml', ['gateway-conformance-infra-test']));
  await waitFor(async () => (await get('/')).echo?.pod === 'infra-backend-v1-pod-1', {
    timeoutMs: 10_000,
    what: 'routing',
  });
  const parent = routeParent('gateway-conformance-infra-test');
  assert.equal(cond(parent?.conditions, 'Accepted')?.status, 'True');
  assert.equal(cond(parent?.conditions, 'ResolvedRefs')?.status, 'True');
  await waitFor(
    () =>
      (api.get('Gateway', INFRA, 'same-namespace')?.status as { listeners: { attachedRoutes: number }[] })
        .listeners[0]?.attachedRoutes === 1,
    { timeoutMs: 10_000, what: 'attachedRoutes 1' },
  );
});

test('HTTPRouteMatching: path prefixes and header matches pick the backend the suite expects', async (t) => {
  t.after(await applyCase('httproute-matching.yaml', ['matching']));
  const cases: [string, Record<string, string>, string][] = [
    ['/', {}, 'infra-backend-v1'],
    ['/example', {}, 'infra-backend-v1'],
    ['/', { Version: 'one' }, 'infra-backend-v1'],
    ['/v2', {}, 'infra-backend-v2'],
    ['/v2/example', {}, 'infra-backend-v2'],
    ['/', { Version: 'two' }, 'infra-backend-v2'],
    ['/v2/', {}, 'infra-backend-v2'],
    ['/v2example', {}, 'infra-backend-v1'],
    ['/foo/v2/example', {}, 'infra-backend-v1'],
  ];
  await waitFor(async () => (await get('/v2')).echo?.pod === 'infra-backend-v2-pod-1', {
    timeoutMs: 10_000,
    what: 'routing',
  });
  for (const [path, headers, backend] of cases) {
    const res = await get(path, headers);
    assert.equal(res.status, 200, path);
    assert.equal(res.echo?.pod, `${backend}-pod-1`, `${path} ${JSON.stringify(headers)}`);
    assert.equal(res.echo?.path, path);
    assert.equal(
      res.echo?.headers['x-switchyard-listener-port'],
      undefined,
      'the port stamp is not forwarded',
    );
  }
});

test('HTTPRouteInvalidNonExistentBackendRef: 500 and ResolvedRefs False with reason BackendNotFound', async (t) => {
  t.after(
    await applyCase('httproute-invalid-nonexistent-backendref.yaml', ['invalid-nonexistent-backend-ref']),
  );
  const parent = routeParent('invalid-nonexistent-backend-ref');
  assert.equal(cond(parent?.conditions, 'ResolvedRefs')?.status, 'False');
  assert.equal(cond(parent?.conditions, 'ResolvedRefs')?.reason, 'BackendNotFound');
  assert.equal(cond(parent?.conditions, 'Accepted')?.status, 'True');
  await waitFor(async () => (await get('/')).status === 500, { timeoutMs: 10_000, what: '500' });
});

test('HTTPRouteRequestHeaderModifier: set overwrites, add appends, remove drops', async (t) => {
  t.after(await applyCase('httproute-request-header-modifier.yaml', ['request-header-modifier']));
  await waitFor(async () => (await get('/set')).status === 200, { timeoutMs: 10_000, what: 'routing' });
  const set = await get('/set', { 'X-Header-Set': 'some-other-value' });
  assert.deepEqual(set.echo?.headers['x-header-set'] ?? set.echo?.headers['X-Header-Set'], [
    'set-overwrites-values',
  ]);
  const add = await get('/add', { 'X-Header-Add': 'some-value' });
  const added = Object.entries(add.echo?.headers ?? {})
    .filter(([name]) => name.toLowerCase() === 'x-header-add')
    .flatMap(([, v]) => v)
    .join(',');
  assert.equal(added, 'some-value,add-appends-values');
  const remove = await get('/remove', { 'X-Header-Remove': 'val' });
  assert.equal(
    Object.keys(remove.echo?.headers ?? {}).some((n) => n.toLowerCase() === 'x-header-remove'),
    false,
  );
});

test('EndpointSlice changes are followed; Admin writes are refused naming the source', async (t) => {
  t.after(await applyCase('httproute-simple-same-namespace.yaml', ['gateway-conformance-infra-test']));
  await waitFor(async () => (await get('/')).status === 200, { timeoutMs: 10_000, what: 'routing' });
  // The only endpoint turns not ready: no ready endpoint left → 503.
  const slice = api.get('EndpointSlice', INFRA, 'infra-backend-v1-abcde') as unknown as {
    endpoints: { conditions: { ready: boolean } }[];
  };
  const ready = structuredClone(slice);
  (slice.endpoints[0] as { conditions: { ready: boolean } }).conditions.ready = false;
  api.apply(slice as never);
  await waitFor(async () => (await get('/')).status === 503, {
    timeoutMs: 10_000,
    what: '503 without ready endpoints',
  });
  api.apply(ready as never);
  await waitFor(async () => (await get('/')).status === 200, { timeoutMs: 10_000, what: 'endpoint back' });
  await assert.rejects(
    gateway.apply((c) => c, 'admin'),
    (err: unknown) => err instanceof ConfigSourceReadOnly && /kubernetes/.test(err.message),
  );
});
