// A gateway with `config.source: kubernetes` against the test API server, serving upstream
// Gateway API conformance manifests (test/kubernetes/fixtures/conformance/, taken as data from
// kubernetes-sigs/gateway-api conformance/tests/*.yaml) and checked against the expectations
// their Go tests encode. Backends are local echo servers behind EndpointSlices (docs/kubernetes.md).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { parseSystemConfig } from '../../src/config/system.js';
import { Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/core/logger.js';
import { KubernetesSource } from '../../src/kubernetes/source.js';
import { ConfigSourceReadOnly } from '../../src/kubernetes/errors.js';
import { KubeApiServer } from '../support/kube-api-server.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { createAuthority, type Authority } from '../support/certs.js';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';

const INFRA = 'gateway-conformance-infra';
const WEB = 'gateway-conformance-web-backend';
/** What the suite sends as Host by default: the Gateway address (port 80 left out). */
const GW_HOST = '10.1.2.3';
const FIXTURES = join(import.meta.dirname, 'fixtures', 'conformance');
const BACKENDS: [string, string][] = [
  [INFRA, 'infra-backend-v1'],
  [INFRA, 'infra-backend-v2'],
  [INFRA, 'infra-backend-v3'],
  [WEB, 'web-backend'],
];

let api: KubeApiServer;
let gateway: Gateway;
let base: string;
/** port_offset: a listener declared on port P is bound on P + offset. */
let offset = 0;
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
    // The suite's echo server sets the response headers named in X-Echo-Set-Header ("name:value,…").
    const out: [string, string][] = [['content-type', 'application/json']];
    for (const pair of (req.headers['x-echo-set-header'] as string | undefined)?.split(',') ?? []) {
      const colon = pair.indexOf(':');
      if (colon > 0) out.push([pair.slice(0, colon).trim(), pair.slice(colon + 1).trim()]);
    }
    res.writeHead(200, out.flat());
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
apiVersion: v1
kind: Namespace
metadata: { name: ${INFRA}, labels: { gateway-conformance: infra } }
---
apiVersion: v1
kind: Namespace
metadata: { name: gateway-conformance-app-backend, labels: { gateway-conformance: backend } }
---
apiVersion: v1
kind: Namespace
metadata: { name: ${WEB}, labels: { gateway-conformance: backend } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: backend-namespaces, namespace: ${INFRA} }
spec:
  gatewayClassName: switchyard
  listeners:
    - name: http
      port: 80
      protocol: HTTP
      allowedRoutes:
        namespaces:
          from: Selector
          selector: { matchLabels: { gateway-conformance: backend } }
---
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
  const text = readFileSync(join(FIXTURES, file), 'utf8').replaceAll('{GATEWAY_CLASS_NAME}', 'switchyard');
  const objects = api.applyYaml(text);
  await waitFor(() => routes.every((r) => cond(routeParent(r)?.conditions, 'Accepted') !== undefined), {
    timeoutMs: 15_000,
    what: `status of ${routes.join(', ')}`,
  });
  return () => {
    for (const o of objects) api.remove(o.kind as string, o.metadata.namespace, o.metadata.name);
  };
}

/**
 * A port_offset below the ephemeral range (32768+) whose declared ports used here are all free:
 * inside that range a client socket's local port can take a Gateway port before it is bound.
 */
async function freeOffset(): Promise<number> {
  const declared = [80, 443, 444, 445, 8080];
  const bindable = (port: number) =>
    new Promise<boolean>((resolve) => {
      const probe = createNetServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
  for (let i = 0; i < 200; i++) {
    const offset = 10_000 + Math.floor(Math.random() * 12_000);
    let ok = true;
    for (const p of declared) if (!(await bindable(p + offset))) ok = false;
    if (ok) return offset;
  }
  throw new Error('no free port_offset');
}

before(async () => {
  api = await KubeApiServer.start({ bookmarkIntervalMs: 200 });
  for (const [ns, name] of BACKENDS)
    api.applyYaml(serviceYaml(ns, name, await startEcho(ns, `${name}-pod-1`)));
  api.applyYaml(BASE);
  offset = await freeOffset();
  const port = 80 + offset;
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

// ---------------------------------------------------------------------------------------------
// The suite's ExpectedResponse, checked the way conformance/utils/http CompareRoundTrip does.

interface Case {
  host?: string;
  path: string;
  method?: string;
  headers?: Record<string, string>;
  /** Response headers the echo backend is asked to set (X-Echo-Set-Header). */
  backendSet?: Record<string, string>;
  status?: number;
  backend?: string;
  namespace?: string;
  /** What the backend must have received. */
  expectPath?: string;
  expectHost?: string;
  expectHeaders?: Record<string, string>;
  absentHeaders?: string[];
  /** What the client must get back. */
  responseHeaders?: Record<string, string>;
  absentResponseHeaders?: string[];
  redirect?: { scheme?: string; host?: string; port?: string; path?: string };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Every header line's value by lower-case name, as Go's http.Header holds them. */
  lines: Record<string, string[]>;
  body: string;
}

/** A raw request to the port-80 listener (fetch cannot set Host). */
function call(c: Case): Promise<Answer> {
  const headers: Record<string, string> = { host: c.host ?? GW_HOST, ...c.headers };
  if (c.backendSet !== undefined)
    headers['X-Echo-Set-Header'] = Object.entries(c.backendSet)
      .map(([n, v]) => `${n}:${v}`)
      .join(',');
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: c.path, method: c.method ?? 'GET', headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            lines: res.rawHeaders.reduce<Record<string, string[]>>((acc, v, i, all) => {
              if (i % 2 === 0) (acc[v.toLowerCase()] ??= []).push(all[i + 1] as string);
              return acc;
            }, {}),
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Values of a header, case-insensitively, joined by "," as the suite compares them. */
function headerValue(headers: Record<string, string[]>, name: string): string | undefined {
  const values = Object.entries(headers)
    .filter(([n]) => n.toLowerCase() === name.toLowerCase())
    .flatMap(([, v]) => v);
  return values.length === 0 ? undefined : values.join(',');
}

/** undefined when the answer is what the suite expects, else what differs. */
async function mismatch(c: Case): Promise<string | undefined> {
  const got = await call(c);
  const where = `${c.method ?? 'GET'} ${c.host ?? GW_HOST}${c.path}`;
  const status = c.status ?? (c.redirect !== undefined ? 302 : 200);
  if (got.status !== status) return `${where}: status ${got.status}, expected ${status} (${got.body})`;
  if (c.redirect !== undefined) {
    const location = new URL(String(got.headers['location'] ?? ''));
    const scheme = location.protocol.replace(':', '');
    const want = {
      scheme: c.redirect.scheme ?? 'http',
      host: c.redirect.host ?? location.hostname,
      path: c.redirect.path ?? c.path,
    };
    if (scheme !== want.scheme) return `${where}: redirect scheme ${scheme}, expected ${want.scheme}`;
    if (location.hostname !== want.host)
      return `${where}: redirect host ${location.hostname}, expected ${want.host}`;
    if (location.pathname !== want.path)
      return `${where}: redirect path ${location.pathname}, expected ${want.path}`;
    // URL drops the scheme's default port: "" stands for 80 (http) or 443 (https), as the suite allows.
    if ((c.redirect.port ?? '') !== location.port)
      return `${where}: redirect port "${location.port}", expected "${c.redirect.port ?? ''}" (${String(got.headers['location'])})`;
  }
  for (const [name, value] of Object.entries(c.responseHeaders ?? {})) {
    // The suite joins the header's values with "," (one value per header line).
    const joined = got.lines[name.toLowerCase()]?.join(',');
    if (joined !== value) return `${where}: response header ${name} ${String(joined)}, expected ${value}`;
  }
  for (const name of c.absentResponseHeaders ?? [])
    if (got.headers[name.toLowerCase()] !== undefined) return `${where}: response header ${name} present`;
  if (c.backend === undefined) return undefined;
  let echo: Echo;
  try {
    echo = JSON.parse(got.body) as Echo;
  } catch {
    return `${where}: not an echo answer: ${got.body}`;
  }
  if (!echo.pod.startsWith(`${c.backend}-pod`))
    return `${where}: answered by ${echo.pod}, expected ${c.backend}`;
  if (echo.namespace !== (c.namespace ?? INFRA)) return `${where}: namespace ${echo.namespace}`;
  if (c.expectPath !== undefined && echo.path !== c.expectPath)
    return `${where}: backend saw path ${echo.path}, expected ${c.expectPath}`;
  if (c.expectHost !== undefined && echo.host !== c.expectHost)
    return `${where}: backend saw host ${echo.host}, expected ${c.expectHost}`;
  for (const [name, value] of Object.entries(c.expectHeaders ?? {})) {
    const v = headerValue(echo.headers, name);
    if (v !== value) return `${where}: backend saw ${name}: ${String(v)}, expected ${value}`;
  }
  for (const name of c.absentHeaders ?? [])
    if (headerValue(echo.headers, name) !== undefined) return `${where}: backend saw ${name}`;
  return undefined;
}

/** Waits until the first case holds (the configuration converged), then checks every case. */
async function expectAll(cases: Case[]): Promise<void> {
  const first = cases[0] as Case;
  let last: string | undefined;
  await waitFor(
    async () => {
      last = await mismatch(first);
      return last === undefined;
    },
    { timeoutMs: 10_000, what: `convergence (${String(last)})` },
  ).catch((err: unknown) => {
    throw new Error(`${String(last)}: ${String(err)}`);
  });
  const failures: string[] = [];
  for (const c of cases) {
    const m = await mismatch(c);
    if (m !== undefined) failures.push(m);
  }
  assert.deepEqual(failures, []);
}

function mustHaveResolvedRefs(route: string): void {
  const parent = routeParent(route);
  assert.equal(cond(parent?.conditions, 'Accepted')?.status, 'True', `${route} Accepted`);
  assert.equal(cond(parent?.conditions, 'ResolvedRefs')?.status, 'True', `${route} ResolvedRefs`);
}

const V1 = 'infra-backend-v1';
const V2 = 'infra-backend-v2';
const V3 = 'infra-backend-v3';

test('HTTPRouteExactPathMatching: Exact paths match whole and case-sensitively', async (t) => {
  t.after(await applyCase('httproute-exact-path-matching.yaml', ['exact-matching']));
  mustHaveResolvedRefs('exact-matching');
  await expectAll([
    { path: '/one', backend: V1 },
    { path: '/two', backend: V2 },
    { path: '/', status: 404 },
    { path: '/one/example', status: 404 },
    { path: '/two/', status: 404 },
    { path: '/Two', status: 404 },
  ]);
});

test('HTTPRouteHeaderMatching: Exact and RegularExpression header matches, more headers first', async (t) => {
  t.after(await applyCase('httproute-header-matching.yaml', ['header-matching']));
  mustHaveResolvedRefs('header-matching');
  await expectAll([
    { path: '/', headers: { Version: 'one' }, backend: V1 },
    { path: '/', headers: { Version: 'two' }, backend: V2 },
    { path: '/', headers: { Version: 'two', Color: 'orange' }, backend: V1 },
    { path: '/', headers: { Version: 'two', Color: 'blue' }, backend: V2 },
    { path: '/', headers: { Color: 'orange' }, status: 404 },
    { path: '/', headers: { 'Some-Other-Header': 'one' }, status: 404 },
    { path: '/', headers: { Color: 'blue' }, backend: V1 },
    { path: '/', headers: { Color: 'green' }, backend: V1 },
    { path: '/', headers: { Color: 'red' }, backend: V2 },
    { path: '/', headers: { Color: 'yellow' }, backend: V2 },
    { path: '/', headers: { Color: 'purple' }, status: 404 },
  ]);
});

test('HTTPRouteMethodMatching: methods alone and with paths, headers; ANDed and ORed; precedence', async (t) => {
  t.after(await applyCase('httproute-method-matching.yaml', ['method-matching']));
  mustHaveResolvedRefs('method-matching');
  await expectAll([
    { method: 'POST', path: '/', backend: V1 },
    { method: 'GET', path: '/', backend: V2 },
    { method: 'HEAD', path: '/', status: 404 },
    { method: 'GET', path: '/path1', backend: V1 },
    { method: 'PUT', path: '/', headers: { version: 'one' }, backend: V2 },
    { method: 'POST', path: '/path2', headers: { version: 'two' }, backend: V3 },
    { method: 'PATCH', path: '/path3', backend: V1 },
    { method: 'DELETE', path: '/path4', headers: { version: 'three' }, backend: V1 },
    { method: 'PUT', path: '/', status: 404 },
    { method: 'DELETE', path: '/path4', status: 404 },
    { method: 'PATCH', path: '/path5', backend: V1 },
    { method: 'PATCH', path: '/', headers: { version: 'four' }, backend: V2 },
  ]);
});

test('HTTPRouteQueryParamMatching: exact, case-sensitive names, ANDed and ORed; precedence', async (t) => {
  t.after(await applyCase('httproute-query-param-matching.yaml', ['query-param-matching']));
  mustHaveResolvedRefs('query-param-matching');
  await expectAll([
    { path: '/?animal=whale', backend: V1 },
    { path: '/?animal=dolphin', backend: V2 },
    { path: '/?animal=dolphin&color=blue', backend: V3 },
    { path: '/?ANIMAL=Whale', backend: V3 },
    { path: '/?animal=whale&otherparam=irrelevant', backend: V1 },
    { path: '/?animal=dolphin&color=yellow', backend: V2 },
    { path: '/?color=blue', status: 404 },
    { path: '/?animal=dog', status: 404 },
    { path: '/?animal=whaledolphin', status: 404 },
    { path: '/', status: 404 },
    { path: '/path1?animal=whale', backend: V1 },
    { path: '/?animal=whale', headers: { version: 'one' }, backend: V2 },
    { path: '/path2?animal=whale', headers: { version: 'two' }, backend: V3 },
    { path: '/path3?animal=shark', backend: V1 },
    { path: '/path4?animal=kraken', headers: { version: 'three' }, backend: V1 },
    { path: '/?animal=shark', status: 404 },
    { path: '/path4?animal=kraken', status: 404 },
    { path: '/path5?animal=hydra', backend: V1 },
    { path: '/?animal=hydra', headers: { version: 'four' }, backend: V3 },
  ]);
});

test('HTTPRoutePathMatchOrder: Exact before the longest prefix', async (t) => {
  t.after(await applyCase('httproute-path-match-order.yaml', ['path-matching-order']));
  mustHaveResolvedRefs('path-matching-order');
  await expectAll([
    { path: '/match/exact/one', backend: V3 },
    { path: '/match/exact', backend: V2 },
    { path: '/match', backend: V1 },
    { path: '/match/prefix/one/any', backend: V2 },
    { path: '/match/prefix/any', backend: V1 },
    { path: '/match/any', backend: V3 },
  ]);
});

test('HTTPRouteMatchingAcrossRoutes: rules of two routes merged, hostnames limit the second', async (t) => {
  t.after(await applyCase('httproute-matching-across-routes.yaml', ['matching-part1', 'matching-part2']));
  mustHaveResolvedRefs('matching-part1');
  mustHaveResolvedRefs('matching-part2');
  await expectAll([
    { host: 'example.com', path: '/v2', backend: V2 },
    { host: 'example.com', path: '/', backend: V1 },
    { host: 'example.com', path: '/example', backend: V1 },
    { host: 'example.net', path: '/example', backend: V1 },
    { host: 'example.com', path: '/example', headers: { Version: 'one' }, backend: V1 },
    { host: 'example.net', path: '/v2', backend: V1 },
    { host: 'example.com', path: '/v2/example', backend: V2 },
    { host: 'example.com', path: '/', headers: { Version: 'two' }, backend: V2 },
  ]);
});

test('HTTPRouteHostnameIntersection: route and listener hostnames intersect; attachedRoutes counts only accepted routes', async (t) => {
  const routes = [
    'specific-host-matches-listener-specific-host',
    'specific-host-matches-listener-wildcard-host',
    'wildcard-host-matches-listener-specific-host',
    'wildcard-host-matches-listener-wildcard-host',
    'no-intersecting-hosts',
    'httproute-hostname-intersection-all',
  ];
  t.after(await applyCase('httproute-hostname-intersection.yaml', routes));
  for (const r of routes.filter((r) => r !== 'no-intersecting-hosts')) mustHaveResolvedRefs(r);
  await expectAll([
    { host: 'very.specific.com', path: '/s1', backend: V1 },
    { host: 'very.specific.com:1234', path: '/s1', backend: V1 },
    { host: 'non.matching.com', path: '/s1', status: 404 },
    { host: 'foo.nonmatchingwildcard.io', path: '/s1', status: 404 },
    { host: 'foo.wildcard.io', path: '/s1', status: 404 },
    { host: 'very.specific.com', path: '/non-matching-prefix', status: 404 },
    { host: 'foo.wildcard.io', path: '/s2', backend: V2 },
    { host: 'bar.wildcard.io', path: '/s2', backend: V2 },
    { host: 'foo.bar.wildcard.io', path: '/s2', backend: V2 },
    { host: 'non.matching.com', path: '/s2', status: 404 },
    { host: 'wildcard.io', path: '/s2', status: 404 },
    { host: 'very.specific.com', path: '/s2', status: 404 },
    { host: 'foo.wildcard.io', path: '/non-matching-prefix', status: 404 },
    { host: 'very.specific.com', path: '/s3', backend: V3 },
    { host: 'non.matching.com', path: '/s3', status: 404 },
    { host: 'foo.specific.com', path: '/s3', status: 404 },
    { host: 'foo.wildcard.io', path: '/s3', status: 404 },
    { host: 'very.specific.com', path: '/non-matching-prefix', status: 404 },
    { host: 'foo.anotherwildcard.io', path: '/s4', backend: V1 },
    { host: 'bar.anotherwildcard.io', path: '/s4', backend: V1 },
    { host: 'foo.bar.anotherwildcard.io', path: '/s4', backend: V1 },
    { host: 'anotherwildcard.io', path: '/s4', status: 404 },
    { host: 'foo.wildcard.io', path: '/s4', status: 404 },
    { host: 'very.specific.com', path: '/s4', status: 404 },
    { host: 'foo.anotherwildcard.io', path: '/non-matching-prefix', status: 404 },
    // no-intersecting-hosts is not accepted
    { host: 'specific.but.wrong.com', path: '/s5', status: 404 },
    { host: 'wildcard.io', path: '/s5', status: 404 },
    // a listener without hostname takes the route's
    { host: 'first.com', path: '/', backend: V2 },
    { host: 'sub.first.com', path: '/', backend: V2 },
    { host: 'second.com', path: '/', backend: V2 },
    { host: 'sub.second.com', path: '/', backend: V2 },
    { host: 'third.com', path: '/', status: 404 },
    { host: 'sub.third.com', path: '/', status: 404 },
  ]);
  const parent = routeParent('no-intersecting-hosts');
  assert.equal(cond(parent?.conditions, 'Accepted')?.status, 'False');
  assert.equal(cond(parent?.conditions, 'Accepted')?.reason, 'NoMatchingListenerHostname');
  await waitFor(
    () => {
      const gw = api.get('Gateway', INFRA, 'httproute-hostname-intersection')?.status as
        { listeners?: { name: string; attachedRoutes: number; conditions: Cond[] }[] } | undefined;
      return (
        JSON.stringify(gw?.listeners?.map((l) => [l.name, l.attachedRoutes])) ===
        JSON.stringify([
          ['listener-1', 2],
          ['listener-2', 1],
          ['listener-3', 1],
        ])
      );
    },
    { timeoutMs: 10_000, what: 'attachedRoutes 2, 1, 1' },
  );
  const gw = api.get('Gateway', INFRA, 'httproute-hostname-intersection')?.status as {
    listeners: { supportedKinds: unknown[]; conditions: Cond[] }[];
  };
  for (const l of gw.listeners) {
    assert.ok(
      l.supportedKinds.some(
        (k) => JSON.stringify(k) === '{"group":"gateway.networking.k8s.io","kind":"HTTPRoute"}',
      ),
    );
    assert.equal(cond(l.conditions, 'Accepted')?.status, 'True');
    assert.equal(cond(l.conditions, 'ResolvedRefs')?.status, 'True');
  }
});

test('HTTPRouteListenerHostnameMatching: routes bound by sectionName serve their listener hostnames only', async (t) => {
  t.after(
    await applyCase('httproute-listener-hostname-matching.yaml', ['backend-v1', 'backend-v2', 'backend-v3']),
  );
  for (const r of ['backend-v1', 'backend-v2', 'backend-v3']) mustHaveResolvedRefs(r);
  await expectAll([
    { host: 'bar.com', path: '/', backend: V1 },
    { host: 'foo.bar.com', path: '/', backend: V2 },
    { host: 'baz.bar.com', path: '/', backend: V3 },
    { host: 'boo.bar.com', path: '/', backend: V3 },
    { host: 'multiple.prefixes.bar.com', path: '/', backend: V3 },
    { host: 'multiple.prefixes.foo.com', path: '/', backend: V3 },
    { host: 'foo.com', path: '/', status: 404 },
    { host: 'no.matching.host', path: '/', status: 404 },
  ]);
});

test('HTTPRouteRedirectHostAndStatus: Location host example.org, 302 and 301', async (t) => {
  t.after(await applyCase('httproute-redirect-host-and-status.yaml', ['redirect-host-and-status']));
  mustHaveResolvedRefs('redirect-host-and-status');
  await expectAll([
    { path: '/hostname-redirect', status: 302, redirect: { host: 'example.org' } },
    { path: '/host-and-status', status: 301, redirect: { host: 'example.org' } },
  ]);
});

test('HTTPRouteRedirectPath: ReplacePrefixMatch and ReplaceFullPath, with host and status', async (t) => {
  t.after(await applyCase('httproute-redirect-path.yaml', ['redirect-path']));
  mustHaveResolvedRefs('redirect-path');
  await expectAll([
    { path: '/original-prefix/lemon', redirect: { path: '/replacement-prefix/lemon' } },
    { path: '/full/path/original', redirect: { path: '/full-path-replacement' } },
    { path: '/path-and-host', redirect: { host: 'example.org', path: '/replacement-prefix' } },
    { path: '/path-and-status', status: 301, redirect: { path: '/replacement-prefix' } },
    { path: '/full-path-and-host', redirect: { host: 'example.org', path: '/replacement-full' } },
    { path: '/full-path-and-status', status: 301, redirect: { path: '/replacement-full' } },
  ]);
});

test('HTTPRouteRedirectPort: Location port 8083, with host and status', async (t) => {
  t.after(await applyCase('httproute-redirect-port.yaml', ['redirect-port']));
  mustHaveResolvedRefs('redirect-port');
  await expectAll([
    { path: '/port', redirect: { port: '8083' } },
    { path: '/port-and-host', redirect: { host: 'example.org', port: '8083' } },
    { path: '/port-and-status', status: 301, redirect: { port: '8083' } },
    { path: '/port-and-host-and-status', redirect: { host: 'example.org', port: '8083' } },
  ]);
});

test('HTTPRouteRedirectScheme: https Location (port 443 left out), with host and status', async (t) => {
  t.after(await applyCase('httproute-redirect-scheme.yaml', ['redirect-scheme']));
  mustHaveResolvedRefs('redirect-scheme');
  await expectAll([
    { path: '/scheme', redirect: { scheme: 'https' } },
    { path: '/scheme-and-host', redirect: { scheme: 'https', host: 'example.org' } },
    { path: '/scheme-and-status', status: 301, redirect: { scheme: 'https' } },
    { path: '/scheme-and-host-and-status', redirect: { scheme: 'https', host: 'example.org' } },
  ]);
});

test('HTTPRouteRewritePath: ReplacePrefixMatch and ReplaceFullPath reach the backend, with header changes', async (t) => {
  t.after(await applyCase('httproute-rewrite-path.yaml', ['rewrite-path']));
  mustHaveResolvedRefs('rewrite-path');
  const modified = {
    headers: {
      'X-Header-Remove': 'remove-val',
      'X-Header-Add-Append': 'append-val-1',
      'X-Header-Set': 'set-val',
    },
    expectHeaders: {
      'X-Header-Add': 'header-val-1',
      'X-Header-Add-Append': 'append-val-1,header-val-2',
      'X-Header-Set': 'set-overwrites-values',
    },
    absentHeaders: ['X-Header-Remove'],
  };
  await expectAll([
    { path: '/prefix/one/two', backend: V1, expectPath: '/one/two' },
    { path: '/strip-prefix/three', backend: V1, expectPath: '/three' },
    { path: '/strip-prefix', backend: V1, expectPath: '/' },
    { path: '/full/one/two', backend: V1, expectPath: '/one' },
    { path: '/full/rewrite-path-and-modify-headers/test', backend: V1, expectPath: '/test', ...modified },
    {
      path: '/prefix/rewrite-path-and-modify-headers/one',
      backend: V1,
      expectPath: '/prefix/one',
      ...modified,
    },
  ]);
});

test('HTTPRouteRewriteHost: the backend sees the rewritten Host, with header changes', async (t) => {
  t.after(await applyCase('httproute-rewrite-host.yaml', ['rewrite-host']));
  mustHaveResolvedRefs('rewrite-host');
  await expectAll([
    { host: 'rewrite.example', path: '/one', backend: V1, expectPath: '/one', expectHost: 'one.example.org' },
    { host: 'rewrite.example', path: '/two', backend: V2, expectPath: '/two', expectHost: 'example.org' },
    {
      host: 'rewrite.example',
      path: '/rewrite-host-and-modify-headers',
      headers: { 'X-Header-Remove': 'remove-val', 'X-Header-Add-Append': 'append-val-1' },
      backend: V2,
      expectHost: 'test.example.org',
      expectHeaders: {
        'X-Header-Add': 'header-val-1',
        'X-Header-Add-Append': 'append-val-1,header-val-2',
        'X-Header-Set': 'set-overwrites-values',
      },
      absentHeaders: ['X-Header-Remove'],
    },
  ]);
});

test('HTTPRouteResponseHeaderModifier: set, add, remove on the answer, case-insensitively, beside request changes', async (t) => {
  t.after(await applyCase('httproute-response-header-modifier.yaml', ['response-header-modifier']));
  mustHaveResolvedRefs('response-header-modifier');
  await expectAll([
    {
      path: '/set',
      backendSet: { 'Some-Other-Header': 'val' },
      backend: V1,
      responseHeaders: { 'Some-Other-Header': 'val', 'X-Header-Set': 'set-overwrites-values' },
    },
    {
      path: '/set',
      backendSet: { 'Some-Other-Header': 'val', 'X-Header-Set': 'some-other-value' },
      backend: V1,
      responseHeaders: { 'Some-Other-Header': 'val', 'X-Header-Set': 'set-overwrites-values' },
    },
    {
      path: '/add',
      backendSet: { 'Some-Other-Header': 'val' },
      backend: V1,
      responseHeaders: { 'Some-Other-Header': 'val', 'X-Header-Add': 'add-appends-values' },
    },
    {
      path: '/add',
      backendSet: { 'Some-Other-Header': 'val', 'X-Header-Add': 'some-other-value' },
      backend: V1,
      responseHeaders: { 'Some-Other-Header': 'val', 'X-Header-Add': 'some-other-value,add-appends-values' },
    },
    {
      path: '/remove',
      backendSet: { 'X-Header-Remove': 'val' },
      backend: V1,
      absentResponseHeaders: ['X-Header-Remove'],
    },
    {
      path: '/multiple',
      backendSet: {
        'X-Header-Set-2': 'set-val-2',
        'X-Header-Add-2': 'add-val-2',
        'X-Header-Remove-2': 'remove-val-2',
        'Another-Header': 'another-header-val',
        'X-Header-Remove-1': 'val',
      },
      backend: V1,
      responseHeaders: {
        'X-Header-Set-1': 'header-set-1',
        'X-Header-Set-2': 'header-set-2',
        'X-Header-Add-1': 'header-add-1',
        'X-Header-Add-2': 'add-val-2,header-add-2',
        'X-Header-Add-3': 'header-add-3',
        'Another-Header': 'another-header-val',
      },
      absentResponseHeaders: ['X-Header-Remove-1', 'X-Header-Remove-2'],
    },
    {
      path: '/case-insensitivity',
      backendSet: {
        'x-header-set': 'original-val-set',
        'x-header-add': 'original-val-add',
        'x-header-remove': 'original-val-remove',
        'Another-Header': 'another-header-val',
      },
      backend: V1,
      responseHeaders: {
        'X-Header-Set': 'header-set',
        'X-Header-Add': 'original-val-add,header-add',
        'X-Lowercase-Add': 'lowercase-add',
        'X-Mixedcase-Add-1': 'mixedcase-add-1',
        'X-Mixedcase-Add-2': 'mixedcase-add-2',
        'X-Uppercase-Add': 'uppercase-add',
        'Another-Header': 'another-header-val',
      },
      absentResponseHeaders: ['x-header-remove'],
    },
    {
      path: '/response-and-request-header-modifiers',
      headers: {
        'X-Header-Remove': 'remove-val',
        'X-Header-Add-Append': 'append-val-1',
        'X-Header-Echo': 'echo',
      },
      backendSet: {
        'X-Header-Set-2': 'set-val-2',
        'X-Header-Add-2': 'add-val-2',
        'X-Header-Remove-2': 'remove-val-2',
        'Another-Header': 'another-header-val',
        'X-Header-Remove-1': 'remove-val-1',
        'X-Header-Echo': 'echo',
      },
      backend: V1,
      expectHeaders: {
        'X-Header-Add': 'header-val-1',
        'X-Header-Set': 'set-overwrites-values',
        'X-Header-Add-Append': 'append-val-1,header-val-2',
        'X-Header-Echo': 'echo',
      },
      absentHeaders: ['X-Header-Remove'],
      responseHeaders: {
        'X-Header-Set-1': 'header-set-1',
        'X-Header-Set-2': 'header-set-2',
        'X-Header-Add-1': 'header-add-1',
        'X-Header-Add-2': 'add-val-2,header-add-2',
        'Another-Header': 'another-header-val',
        'X-Header-Echo': 'echo',
      },
      absentResponseHeaders: ['X-Header-Remove-1', 'X-Header-Remove-2'],
    },
  ]);
});

test('HTTPRouteWeight: 500 requests split 70/30/0 within ±5 % (the suite tries up to 10 times, here 3)', async (t) => {
  t.after(await applyCase('httproute-weight.yaml', ['weighted-backends']));
  mustHaveResolvedRefs('weighted-backends');
  await expectAll([{ path: '/', status: 200 }]);
  const want: Record<string, number> = { [V1]: 0.7, [V2]: 0.3, [V3]: 0 };
  let last = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    const seen: Record<string, number> = {};
    const total = 500;
    let next = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next++ < total) {
          const got = await call({ path: '/', headers: { 'X-Jitter': String(Math.random()) } });
          assert.equal(got.status, 200);
          const pod = (JSON.parse(got.body) as Echo).pod.replace(/-pod-\d+$/, '');
          seen[pod] = (seen[pod] ?? 0) + 1;
        }
      }),
    );
    const off = Object.entries(want).filter(([b, w]) => Math.abs((seen[b] ?? 0) / total - w) > 0.05);
    const unexpected = Object.keys(seen).filter((b) => !(b in want) || want[b] === 0);
    if (off.length === 0 && unexpected.length === 0) return;
    last = JSON.stringify(seen);
  }
  assert.fail(`distribution outside ±5 % of 70/30/0 three times; last ${last}`);
});

test('HTTPRouteReferenceGrant: a granted cross-namespace backend serves; deleting the grant → 500', async (t) => {
  t.after(await applyCase('httproute-reference-grant.yaml', ['reference-grant']));
  await waitFor(() => cond(routeParent('reference-grant')?.conditions, 'ResolvedRefs')?.status === 'True', {
    timeoutMs: 10_000,
    what: 'ResolvedRefs True',
  });
  mustHaveResolvedRefs('reference-grant');
  await expectAll([{ path: '/', backend: 'web-backend', namespace: WEB }]);
  api.remove('ReferenceGrant', WEB, 'reference-grant');
  await expectAll([{ path: '/', status: 500 }]);
  await waitFor(
    () => cond(routeParent('reference-grant')?.conditions, 'ResolvedRefs')?.reason === 'RefNotPermitted',
    { timeoutMs: 10_000, what: 'ResolvedRefs RefNotPermitted' },
  );
});

test('HTTPRouteInvalidCrossNamespaceBackendRef: no ReferenceGrant → ResolvedRefs False RefNotPermitted, 500', async (t) => {
  t.after(
    await applyCase('httproute-invalid-cross-namespace-backend-ref.yaml', [
      'invalid-cross-namespace-backend-ref',
    ]),
  );
  const parent = routeParent('invalid-cross-namespace-backend-ref');
  assert.equal(cond(parent?.conditions, 'Accepted')?.status, 'True');
  assert.equal(cond(parent?.conditions, 'ResolvedRefs')?.status, 'False');
  assert.equal(cond(parent?.conditions, 'ResolvedRefs')?.reason, 'RefNotPermitted');
  await expectAll([{ path: '/', status: 500 }]);
});

test('HTTPRouteInvalidReferenceGrant: a grant for another Service does not permit → RefNotPermitted, 500', async (t) => {
  t.after(await applyCase('httproute-invalid-reference-grant.yaml', ['reference-grant']));
  const parent = routeParent('reference-grant');
  assert.equal(cond(parent?.conditions, 'Accepted')?.status, 'True');
  assert.equal(cond(parent?.conditions, 'ResolvedRefs')?.status, 'False');
  assert.equal(cond(parent?.conditions, 'ResolvedRefs')?.reason, 'RefNotPermitted');
  await expectAll([{ path: '/', status: 500 }]);
});

type ListenerStatus = {
  name: string;
  supportedKinds: { group?: string; kind: string }[];
  attachedRoutes: number;
  conditions: Cond[];
};

function gatewayListeners(name: string): ListenerStatus[] | undefined {
  return (api.get('Gateway', INFRA, name)?.status as { listeners?: ListenerStatus[] } | undefined)?.listeners;
}

function parentOf(namespace: string, route: string, gateway: string): { conditions: Cond[] } | undefined {
  const r = api.get('HTTPRoute', namespace, route) as
    { status?: { parents?: { parentRef: { name: string }; conditions: Cond[] }[] } } | undefined;
  return r?.status?.parents?.find((p) => p.parentRef.name === gateway);
}

/** Waits until `check` (the suite's expectations) holds, then asserts it once more for the message. */
async function eventually(what: string, check: () => string | undefined): Promise<void> {
  await waitFor(() => check() === undefined, { timeoutMs: 10_000, what }).catch(() => undefined);
  assert.equal(check(), undefined, what);
}

function listenerMismatch(
  gateway: string,
  expected: {
    name: string;
    kinds: string[];
    attachedRoutes: number;
    conditions: [string, string, string?][];
  }[],
): string | undefined {
  const got = gatewayListeners(gateway);
  if (got === undefined) return `${gateway}: no listener status`;
  for (const e of expected) {
    const l = got.find((x) => x.name === e.name);
    if (l === undefined) return `${gateway}/${e.name}: missing`;
    const kinds = l.supportedKinds.map((k) => `${k.group ?? ''}/${k.kind}`);
    // As the suite compares (helpers.go listenersMatch): the expected kinds present, none when none expected.
    if (e.kinds.length === 0 ? kinds.length > 0 : e.kinds.some((k) => !kinds.includes(k)))
      return `${gateway}/${e.name}: supportedKinds ${kinds.join(',')}`;
    if (l.attachedRoutes !== e.attachedRoutes)
      return `${gateway}/${e.name}: attachedRoutes ${l.attachedRoutes}`;
    for (const [type, status, reason] of e.conditions) {
      const c = cond(l.conditions, type);
      if (c?.status !== status || (reason !== undefined && c.reason !== reason))
        return `${gateway}/${e.name}: ${type} ${c?.status ?? '-'} ${c?.reason ?? '-'}`;
    }
  }
  return undefined;
}

const HTTPROUTE = 'gateway.networking.k8s.io/HTTPRoute';

test('HTTPRouteCrossNamespace: a route in a namespace the listener selector matches attaches and serves; relabelled, it is not allowed', async (t) => {
  t.after(await applyCase('httproute-cross-namespace.yaml', []));
  await eventually('cross-namespace accepted with resolved refs', () => {
    const p = parentOf(WEB, 'cross-namespace', 'backend-namespaces');
    return cond(p?.conditions, 'Accepted')?.status === 'True' &&
      cond(p?.conditions, 'ResolvedRefs')?.status === 'True'
      ? undefined
      : JSON.stringify(p?.conditions);
  });
  await expectAll([{ path: '/', backend: 'web-backend', namespace: WEB }]);
  // Not the suite's: the Namespace informer is followed. Without the label the selector asks for,
  // the route is no longer allowed, and nothing serves /.
  api.apply({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: WEB, labels: { 'gateway-conformance': 'web' } },
  });
  t.after(() =>
    api.apply({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: WEB, labels: { 'gateway-conformance': 'backend' } },
    }),
  );
  await eventually('cross-namespace NotAllowedByListeners', () => {
    const c = cond(parentOf(WEB, 'cross-namespace', 'backend-namespaces')?.conditions, 'Accepted');
    return c?.status === 'False' && c.reason === 'NotAllowedByListeners' ? undefined : JSON.stringify(c);
  });
  await expectAll([{ path: '/', status: 404 }]);
  await eventually('attachedRoutes 0', () =>
    listenerMismatch('backend-namespaces', [
      { name: 'http', kinds: [HTTPROUTE], attachedRoutes: 0, conditions: [['Accepted', 'True']] },
    ]),
  );
});

test('Selector matchExpressions: In / NotIn / Exists / DoesNotExist on namespace labels', async (t) => {
  const gateway = (expr: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: by-expression, namespace: ${INFRA} }
spec:
  gatewayClassName: switchyard
  listeners:
    - name: http
      port: 80
      protocol: HTTP
      hostname: expr.example.com
      allowedRoutes: { namespaces: { from: Selector, selector: { matchExpressions: [${expr}] } } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: by-expression, namespace: ${WEB} }
spec:
  parentRefs: [{ name: by-expression, namespace: ${INFRA} }]
  rules: [{ backendRefs: [{ name: web-backend, port: 8080 }] }]
`;
  t.after(() => {
    api.remove('Gateway', INFRA, 'by-expression');
    api.remove('HTTPRoute', WEB, 'by-expression');
  });
  const cases: [string, string][] = [
    ['{ key: gateway-conformance, operator: In, values: [backend, other] }', 'True'],
    ['{ key: gateway-conformance, operator: In, values: [infra] }', 'False'],
    ['{ key: gateway-conformance, operator: NotIn, values: [infra] }', 'True'],
    ['{ key: gateway-conformance, operator: NotIn, values: [backend] }', 'False'],
    ['{ key: kubernetes.io/metadata.name, operator: Exists }', 'True'],
    ['{ key: gateway-conformance, operator: DoesNotExist }', 'False'],
  ];
  for (const [expr, accepted] of cases) {
    api.applyYaml(gateway(expr));
    await eventually(`${expr} → Accepted ${accepted}`, () => {
      const c = cond(parentOf(WEB, 'by-expression', 'by-expression')?.conditions, 'Accepted');
      return c?.status === accepted && (accepted === 'True' || c.reason === 'NotAllowedByListeners')
        ? undefined
        : JSON.stringify(c);
    });
    await expectAll([
      {
        host: 'expr.example.com',
        path: '/',
        ...(accepted === 'True' ? { backend: 'web-backend', namespace: WEB } : { status: 404 }),
      },
    ]);
  }
});

test('GatewayWithAttachedRoutes: attachedRoutes 1 and 2, NoMatchingListenerHostname, and counted on an HTTPS listener with unresolved refs', async (t) => {
  t.after(
    await applyCase('gateway-with-attached-routes.yaml', [
      'http-route-1',
      'http-route-2',
      'http-route-3',
      'http-route-not-accepted',
      'http-route-4',
    ]),
  );
  await eventually('one attached route', () =>
    listenerMismatch('gateway-with-one-attached-route', [
      {
        name: 'http',
        kinds: [HTTPROUTE],
        attachedRoutes: 1,
        conditions: [
          ['Accepted', 'True'],
          ['ResolvedRefs', 'True'],
        ],
      },
    ]),
  );
  await eventually('two attached routes', () =>
    listenerMismatch('gateway-with-two-attached-routes', [
      {
        name: 'http',
        kinds: [HTTPROUTE],
        attachedRoutes: 2,
        conditions: [
          ['Accepted', 'True'],
          ['ResolvedRefs', 'True'],
        ],
      },
    ]),
  );
  const na = cond(routeParent('http-route-not-accepted')?.conditions, 'Accepted');
  assert.equal(na?.status, 'False');
  assert.equal(na?.reason, 'NoMatchingListenerHostname');
  await eventually('unresolved HTTPS listener', () =>
    listenerMismatch('unresolved-gateway-with-one-attached-unresolved-route', [
      {
        name: 'tls',
        kinds: [HTTPROUTE],
        attachedRoutes: 1,
        conditions: [
          ['Programmed', 'False'],
          ['ResolvedRefs', 'False', 'InvalidCertificateRef'],
        ],
      },
    ]),
  );
  assert.equal(cond(routeParent('http-route-4')?.conditions, 'ResolvedRefs')?.status, 'False');
});

test('GatewayInvalidRouteKind: InvalidRouteKinds, supportedKinds without the invalid kind; a route to a listener taking no HTTPRoute is NotAllowedByListeners', async (t) => {
  t.after(await applyCase('gateway-invalid-route-kind.yaml', []));
  await eventually('only invalid kind', () =>
    listenerMismatch('gateway-only-invalid-route-kind', [
      {
        name: 'http',
        kinds: [],
        attachedRoutes: 0,
        conditions: [['ResolvedRefs', 'False', 'InvalidRouteKinds']],
      },
    ]),
  );
  await eventually('supported and invalid kind', () =>
    listenerMismatch('gateway-supported-and-invalid-route-kind', [
      {
        name: 'http',
        kinds: [HTTPROUTE],
        attachedRoutes: 0,
        conditions: [['ResolvedRefs', 'False', 'InvalidRouteKinds']],
      },
    ]),
  );
  api.applyYaml(`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: to-invalid-kind, namespace: ${INFRA} }
spec:
  parentRefs: [{ name: gateway-only-invalid-route-kind }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]
`);
  t.after(() => api.remove('HTTPRoute', INFRA, 'to-invalid-kind'));
  await eventually('NotAllowedByListeners', () => {
    const c = cond(routeParent('to-invalid-kind')?.conditions, 'Accepted');
    return c?.status === 'False' && c.reason === 'NotAllowedByListeners' ? undefined : JSON.stringify(c);
  });
  await expectAll([{ path: '/', status: 404 }]);
});

for (const [name, file, route] of [
  [
    'HTTPRouteInvalidParentRefNotMatchingSectionName',
    'httproute-invalid-parentref-not-matching-section-name.yaml',
    'httproute-listener-not-matching-section-name',
  ],
  [
    'HTTPRouteInvalidParentRefNotMatchingListenerPort',
    'httproute-invalid-parentref-not-matching-listener-port.yaml',
    'httproute-listener-not-matching-route-port',
  ],
] as const)
  test(`${name}: Accepted False NoMatchingParent, no accepted parent, 0 routes attached`, async (t) => {
    t.after(await applyCase(file, [route]));
    mustHaveResolvedRefsTrue(route);
    const parents = (api.get('HTTPRoute', INFRA, route)?.status as { parents: { conditions: Cond[] }[] })
      .parents;
    for (const p of parents) {
      assert.equal(cond(p.conditions, 'Accepted')?.status, 'False');
      assert.equal(cond(p.conditions, 'Accepted')?.reason, 'NoMatchingParent');
    }
    await eventually('0 routes attached', () =>
      listenerMismatch('same-namespace', [
        { name: 'http', kinds: [HTTPROUTE], attachedRoutes: 0, conditions: [] },
      ]),
    );
    await expectAll([{ path: '/', status: 404 }]);
  });

function mustHaveResolvedRefsTrue(route: string): void {
  assert.equal(cond(routeParent(route)?.conditions, 'ResolvedRefs')?.status, 'True', `${route} ResolvedRefs`);
}

test('HTTPRouteObservedGenerationBump: a spec change bumps generation; conditions follow with the new observedGeneration', async (t) => {
  t.after(await applyCase('httproute-observed-generation-bump.yaml', ['observed-generation-bump']));
  const original = api.get('HTTPRoute', INFRA, 'observed-generation-bump') as {
    metadata: { generation: number };
    spec: { rules: { backendRefs: { name: string; port: number }[] }[] };
  };
  await eventually('latest conditions', () => {
    const cs = routeParent('observed-generation-bump')?.conditions ?? [];
    return cs.length > 0 && cs.every((c) => c.observedGeneration === original.metadata.generation)
      ? undefined
      : JSON.stringify(cs);
  });
  await expectAll([{ path: '/', backend: V1 }]);
  const mutated = structuredClone(original) as typeof original & { status?: unknown };
  delete mutated.status;
  (mutated.spec.rules[0]?.backendRefs[0] as { name: string }).name = V2;
  api.apply(mutated as never);
  const updated = api.get('HTTPRoute', INFRA, 'observed-generation-bump') as {
    metadata: { generation: number };
  };
  assert.notEqual(updated.metadata.generation, original.metadata.generation);
  await eventually('conditions at the new generation', () => {
    const cs = routeParent('observed-generation-bump')?.conditions ?? [];
    const ok =
      cond(cs, 'Accepted')?.status === 'True' &&
      cond(cs, 'ResolvedRefs')?.status === 'True' &&
      cs.every((c) => c.observedGeneration === updated.metadata.generation);
    return ok ? undefined : JSON.stringify(cs);
  });
  await expectAll([{ path: '/', backend: V2 }]);
});

// ---- HTTPS listeners (tls.mode Terminate, certificateRefs to kubernetes.io/tls Secrets) ----

let authority: Authority | undefined;
function ca(): Authority {
  authority ??= createAuthority(dir.path, 'k8s-ca');
  return authority;
}

let issued = 0;
/** A leaf certificate from the test CA as a kubernetes.io/tls Secret. */
function tlsSecret(namespace: string, name: string, dns: string[]): { yaml: string; fingerprint: string } {
  const leaf = ca().issue(`leaf-${++issued}`, { cn: dns[0] as string, dns });
  const fingerprint = new X509Certificate(leaf.certPem).fingerprint256;
  const yaml = `
apiVersion: v1
kind: Secret
metadata: { name: ${name}, namespace: ${namespace} }
type: kubernetes.io/tls
data:
  tls.crt: ${Buffer.from(leaf.certPem).toString('base64')}
  tls.key: ${Buffer.from(leaf.keyPem).toString('base64')}
`;
  return { yaml, fingerprint };
}

interface TlsAnswer {
  status: number;
  echo: Echo | undefined;
  /** SHA-256 fingerprint of the certificate the handshake presented. */
  fingerprint: string;
  reusedSocket: boolean;
  location: string | undefined;
}

/** GET over TLS to a declared port, SNI and Host = `host`, verified against the test CA. */
function tlsGet(port: number, host: string, path = '/', agent?: HttpsAgent): Promise<TlsAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: port + offset,
        path,
        servername: host,
        headers: { host },
        ca: ca().certPem,
        agent: agent ?? false,
      },
      (res) => {
        // Read now: a keep-alive socket goes back to the agent (res.socket null) once the body ends.
        const fingerprint = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          let echo: Echo | undefined;
          try {
            const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Partial<Echo>;
            if (typeof parsed.pod === 'string') echo = parsed as Echo;
          } catch {
            echo = undefined;
          }
          resolve({
            status: res.statusCode ?? 0,
            echo,
            fingerprint,
            reusedSocket: req.reusedSocket,
            location: res.headers.location,
          });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function tlsEventually(
  what: string,
  port: number,
  host: string,
  check: (a: TlsAnswer) => boolean,
): Promise<TlsAnswer> {
  let last: TlsAnswer | Error | undefined;
  await waitFor(
    async () => {
      try {
        last = await tlsGet(port, host);
        return check(last);
      } catch (err) {
        last = err as Error;
        return false;
      }
    },
    { timeoutMs: 10_000, what },
  ).catch(() => undefined);
  assert.ok(
    !(last instanceof Error) && last !== undefined && check(last),
    `${what}: ${last instanceof Error ? last.message : JSON.stringify(last)}`,
  );
  return last;
}

const HTTPS_GATEWAY = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: same-namespace-with-https-listener, namespace: ${INFRA} }
spec:
  gatewayClassName: switchyard
  listeners:
    - name: https
      port: 443
      protocol: HTTPS
      allowedRoutes: { namespaces: { from: Same } }
      tls: { certificateRefs: [{ group: "", kind: Secret, name: tls-validity-checks-certificate, namespace: ${INFRA} }] }
    - name: https-with-hostname
      port: 443
      hostname: second-example.org
      protocol: HTTPS
      allowedRoutes: { namespaces: { from: Same } }
      tls: { certificateRefs: [{ group: "", kind: Secret, name: tls-validity-checks-certificate, namespace: ${INFRA} }] }
    - name: https-with-wildcard-hostname
      port: 443
      hostname: "*.wildcard.org"
      protocol: HTTPS
      allowedRoutes: { namespaces: { from: Same } }
      tls: { certificateRefs: [{ group: "", kind: Secret, name: tls-validity-checks-certificate, namespace: ${INFRA} }] }
    - name: https-with-hostname-matching-wildcard
      port: 443
      hostname: "fourth-example.wildcard.org"
      protocol: HTTPS
      allowedRoutes: { namespaces: { from: Same } }
      tls: { certificateRefs: [{ group: "", kind: Secret, name: tls-validity-checks-certificate, namespace: ${INFRA} }] }
`;

test('HTTPRouteHTTPSListener: TLS terminated with the Secret certificate; routes by hostname and sectionName', async (t) => {
  const secret = tlsSecret(INFRA, 'tls-validity-checks-certificate', [
    'example.org',
    'second-example.org',
    'unknown-example.org',
    '*.wildcard.org',
  ]);
  const base = api.applyYaml(secret.yaml + '---' + HTTPS_GATEWAY);
  t.after(() => {
    for (const o of base) api.remove(o.kind as string, o.metadata.namespace, o.metadata.name);
  });
  t.after(
    await applyCase('httproute-https-listener.yaml', [
      'httproute-https-test',
      'httproute-https-test-no-hostname',
    ]),
  );
  mustHaveResolvedRefs('httproute-https-test');
  mustHaveResolvedRefs('httproute-https-test-no-hostname');
  await eventually('HTTPS listeners programmed', () =>
    listenerMismatch(
      'same-namespace-with-https-listener',
      [
        'https',
        'https-with-hostname',
        'https-with-wildcard-hostname',
        'https-with-hostname-matching-wildcard',
      ].map((name) => ({
        name,
        kinds: [HTTPROUTE],
        attachedRoutes: name === 'https' || name === 'https-with-hostname' ? 1 : 0,
        conditions: [
          ['Accepted', 'True'],
          ['Programmed', 'True'],
          ['ResolvedRefs', 'True'],
        ],
      })),
    ),
  );
  const first = await tlsEventually(
    'example.org over TLS → v1',
    443,
    'example.org',
    (a) => a.echo?.pod === `${V1}-pod-1`,
  );
  assert.equal(first.fingerprint, secret.fingerprint);
  assert.equal(first.status, 200);
  assert.equal((await tlsGet(443, 'unknown-example.org')).status, 404);
  const second = await tlsGet(443, 'second-example.org');
  assert.equal(second.status, 200);
  assert.equal(second.echo?.pod, `${V2}-pod-1`);
  assert.equal(second.echo?.namespace, INFRA);
  // The plaintext port 80 does not answer for the HTTPS routes.
  await expectAll([{ host: 'example.org', path: '/', status: 404 }]);
});

test('HTTPS: SNI picks the certificate of the matching listener on a shared port; a rotated Secret is served from the next handshake, without a restart; a broken Secret → InvalidCertificateRef', async (t) => {
  const a = tlsSecret(INFRA, 'cert-a', ['a.example.com']);
  const b = tlsSecret(INFRA, 'cert-b', ['b.example.com']);
  const objects = api.applyYaml(`${a.yaml}---${b.yaml}---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: sni, namespace: ${INFRA} }
spec:
  gatewayClassName: switchyard
  listeners:
    - { name: a, port: 444, protocol: HTTPS, hostname: a.example.com, tls: { mode: Terminate, certificateRefs: [{ name: cert-a }] } }
    - { name: b, port: 444, protocol: HTTPS, hostname: b.example.com, tls: { mode: Terminate, certificateRefs: [{ name: cert-b }] } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: sni, namespace: ${INFRA} }
spec:
  parentRefs: [{ name: sni }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]
`);
  t.after(() => {
    for (const o of objects) api.remove(o.kind as string, o.metadata.namespace, o.metadata.name);
  });
  const viaA = await tlsEventually('a.example.com', 444, 'a.example.com', (r) => r.status === 200);
  assert.equal(viaA.fingerprint, a.fingerprint);
  assert.equal(viaA.echo?.pod, `${V1}-pod-1`);
  const viaB = await tlsGet(444, 'b.example.com');
  assert.equal(viaB.fingerprint, b.fingerprint);
  assert.equal(viaB.status, 200);

  // A keep-alive connection opened before the rotation: if the socket were rebuilt it would be closed.
  const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  const before = await tlsGet(444, 'a.example.com', '/', agent);
  assert.equal(before.fingerprint, a.fingerprint);
  const a2 = tlsSecret(INFRA, 'cert-a', ['a.example.com']);
  assert.notEqual(a2.fingerprint, a.fingerprint);
  api.applyYaml(a2.yaml);
  await tlsEventually(
    'the rotated certificate',
    444,
    'a.example.com',
    (r) => r.fingerprint === a2.fingerprint,
  );
  const kept = await tlsGet(444, 'a.example.com', '/', agent);
  assert.equal(kept.reusedSocket, true, 'the connection opened before the rotation still serves');
  assert.equal(kept.status, 200);
  assert.equal((await tlsGet(444, 'b.example.com')).fingerprint, b.fingerprint);

  // A Secret whose certificate does not load: the listener's refs do not resolve; b keeps serving.
  api.apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'cert-a', namespace: INFRA },
    type: 'kubernetes.io/tls',
    data: {
      'tls.crt': Buffer.from('not a certificate').toString('base64'),
      'tls.key': Buffer.from('nope').toString('base64'),
    },
  });
  await eventually('cert-a invalid', () =>
    listenerMismatch('sni', [
      {
        name: 'a',
        kinds: [HTTPROUTE],
        attachedRoutes: 1,
        conditions: [
          ['Programmed', 'False'],
          ['ResolvedRefs', 'False', 'InvalidCertificateRef'],
        ],
      },
      {
        name: 'b',
        kinds: [HTTPROUTE],
        attachedRoutes: 1,
        conditions: [
          ['Programmed', 'True'],
          ['ResolvedRefs', 'True'],
        ],
      },
    ]),
  );
  await tlsEventually(
    'b still serves',
    444,
    'b.example.com',
    (r) => r.status === 200 && r.fingerprint === b.fingerprint,
  );
  // A missing Secret: the same reason.
  api.remove('Secret', INFRA, 'cert-b');
  await eventually('cert-b missing', () =>
    listenerMismatch('sni', [
      {
        name: 'b',
        kinds: [HTTPROUTE],
        attachedRoutes: 1,
        conditions: [
          ['Programmed', 'False'],
          ['ResolvedRefs', 'False', 'InvalidCertificateRef'],
        ],
      },
    ]),
  );
});

test('HTTPS: a certificate Secret in another namespace needs a ReferenceGrant (RefNotPermitted until granted)', async (t) => {
  const secret = tlsSecret(WEB, 'shared-cert', ['grant.example.com']);
  const objects = api.applyYaml(`${secret.yaml}---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: cross-ns-cert, namespace: ${INFRA} }
spec:
  gatewayClassName: switchyard
  listeners:
    - { name: https, port: 445, protocol: HTTPS, tls: { certificateRefs: [{ kind: Secret, name: shared-cert, namespace: ${WEB} }] } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: cross-ns-cert, namespace: ${INFRA} }
spec:
  parentRefs: [{ name: cross-ns-cert }]
  rules: [{ backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]
`);
  t.after(() => {
    for (const o of objects) api.remove(o.kind as string, o.metadata.namespace, o.metadata.name);
  });
  await eventually('RefNotPermitted', () =>
    listenerMismatch('cross-ns-cert', [
      {
        name: 'https',
        kinds: [HTTPROUTE],
        attachedRoutes: 1,
        conditions: [
          ['Programmed', 'False'],
          ['ResolvedRefs', 'False', 'RefNotPermitted'],
        ],
      },
    ]),
  );
  await assert.rejects(tlsGet(445, 'grant.example.com'), 'nothing serves the port');
  const grant = api.applyYaml(`
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: gateways-read-certs, namespace: ${WEB} }
spec:
  from: [{ group: gateway.networking.k8s.io, kind: Gateway, namespace: ${INFRA} }]
  to: [{ group: "", kind: Secret, name: shared-cert }]
`);
  t.after(() => {
    for (const o of grant) api.remove(o.kind as string, o.metadata.namespace, o.metadata.name);
  });
  const served = await tlsEventually('granted', 445, 'grant.example.com', (r) => r.status === 200);
  assert.equal(served.fingerprint, secret.fingerprint);
  assert.equal(served.echo?.pod, `${V2}-pod-1`);
  await eventually('resolved', () =>
    listenerMismatch('cross-ns-cert', [
      {
        name: 'https',
        kinds: [HTTPROUTE],
        attachedRoutes: 1,
        conditions: [
          ['Programmed', 'True'],
          ['ResolvedRefs', 'True'],
        ],
      },
    ]),
  );
});

test('HTTPRouteRedirectPortAndScheme (listeners on 80 and 443): a redirect without scheme keeps the listener scheme; ports of the scheme left out', async (t) => {
  const secret = tlsSecret(INFRA, 'tls-validity-checks-certificate', ['example.org']);
  const base = api.applyYaml(secret.yaml + '---' + HTTPS_GATEWAY);
  t.after(() => {
    for (const o of base) api.remove(o.kind as string, o.metadata.namespace, o.metadata.name);
  });
  t.after(
    await applyCase('httproute-redirect-port-and-scheme.yaml', [
      'http-route-for-listener-on-port-80',
      'http-route-for-listener-on-port-443',
    ]),
  );
  mustHaveResolvedRefs('http-route-for-listener-on-port-80');
  mustHaveResolvedRefs('http-route-for-listener-on-port-443');
  await expectAll([
    { path: '/scheme-nil-and-port-nil', redirect: { scheme: 'http', host: 'example.org' } },
    { path: '/scheme-nil-and-port-80', redirect: { scheme: 'http', host: 'example.org' } },
    { path: '/scheme-nil-and-port-8080', redirect: { scheme: 'http', host: 'example.org', port: '8080' } },
    { path: '/scheme-https-and-port-nil', redirect: { scheme: 'https', host: 'example.org' } },
    { path: '/scheme-https-and-port-443', redirect: { scheme: 'https', host: 'example.org' } },
    { path: '/scheme-https-and-port-8443', redirect: { scheme: 'https', host: 'example.org', port: '8443' } },
  ]);
  const over443: [string, string, string][] = [
    ['/scheme-nil-and-port-nil', 'https', ''],
    ['/scheme-nil-and-port-443', 'https', ''],
    ['/scheme-nil-and-port-8443', 'https', '8443'],
    ['/scheme-http-and-port-nil', 'http', ''],
    ['/scheme-http-and-port-80', 'http', ''],
    ['/scheme-http-and-port-8080', 'http', '8080'],
  ];
  await tlsEventually('port 443 serves', 443, 'example.org', (r) => r.status === 302 || r.status === 404);
  for (const [path, scheme, port] of over443) {
    const r = await tlsGet(443, 'example.org', path);
    assert.equal(r.status, 302, path);
    const location = new URL(r.location ?? '');
    assert.deepEqual(
      [location.protocol, location.hostname, location.port, location.pathname],
      [`${scheme}:`, 'example.org', port, path],
      `${path}: ${r.location ?? ''}`,
    );
  }
});

test('HTTPS on a port already served as HTTP by an older Gateway: Conflicted True ProtocolConflict, not programmed; the port stays plaintext', async (t) => {
  const secret = tlsSecret(INFRA, 'conflict-cert', ['conflict.example.com']);
  const objects = api.applyYaml(`${secret.yaml}---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: tls-on-80, namespace: ${INFRA} }
spec:
  gatewayClassName: switchyard
  listeners:
    - { name: https, port: 80, protocol: HTTPS, hostname: conflict.example.com, tls: { certificateRefs: [{ name: conflict-cert }] } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: tls-on-80, namespace: ${INFRA} }
spec:
  parentRefs: [{ name: tls-on-80 }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]
`);
  t.after(() => {
    for (const o of objects) api.remove(o.kind as string, o.metadata.namespace, o.metadata.name);
  });
  await eventually('ProtocolConflict', () =>
    listenerMismatch('tls-on-80', [
      {
        name: 'https',
        kinds: [HTTPROUTE],
        attachedRoutes: 1,
        conditions: [
          ['Conflicted', 'True', 'ProtocolConflict'],
          ['Programmed', 'False'],
          ['ResolvedRefs', 'True'],
        ],
      },
    ]),
  );
  await expectAll([{ host: 'conflict.example.com', path: '/', status: 404 }]);
  assert.equal(
    cond(gatewayListeners('same-namespace')?.[0]?.conditions, 'Conflicted')?.status,
    'False',
    'the older listener keeps the port',
  );
});
