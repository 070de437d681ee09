// GRPCRoute (issue 32): upstream conformance manifests (GATEWAY-GRPC cases of
// kubernetes-sigs/gateway-api conformance/tests) served on the Gateway's HTTP/2 listeners (h2c
// with prior knowledge, and TLS with ALPN h2), called with @grpc/grpc-js clients against grpc-js
// echo backends behind EndpointSlices; the answer names the backend pod and what it received.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import {
  INFRA,
  cond,
  listeners,
  parentOf,
  routeCondition,
  startHarness,
  type Harness,
} from './route-harness.js';
import { createAuthority, type Authority } from '../support/certs.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const PROTO = fileURLToPath(new URL('./fixtures/grpc/grpcecho.proto', import.meta.url));
const SERVICE = 'gateway_api_conformance.echo_basic.grpcecho.GrpcEcho';

interface EchoResponse {
  pod: string;
  namespace: string;
  method: string;
  headers: { key: string; value: string }[];
}
type Method = 'Echo' | 'EchoTwo' | 'EchoThree';
type EchoClient = grpc.Client &
  Record<
    Method,
    (
      req: object,
      md: grpc.Metadata,
      options: grpc.CallOptions,
      cb: grpc.requestCallback<EchoResponse>,
    ) => grpc.ClientUnaryCall
  >;
type Ctor = grpc.ServiceClientConstructor & { service: grpc.ServiceDefinition };

const GrpcEcho = (
  grpc.loadPackageDefinition(protoLoader.loadSync(PROTO, { keepCase: true, defaults: true })) as unknown as {
    gateway_api_conformance: { echo_basic: { grpcecho: { GrpcEcho: Ctor } } };
  }
).gateway_api_conformance.echo_basic.grpcecho.GrpcEcho;

let h: Harness;
let ca: Authority;
const dir = tempDir('switchyard-k8s-grpc-');
const servers: grpc.Server[] = [];
const clients: grpc.Client[] = [];

/** A grpc-js echo backend: every method answers the pod, the method path and the metadata seen. */
async function grpcEcho(namespace: string, pod: string): Promise<number> {
  const server = new grpc.Server();
  const answer = (call: grpc.ServerUnaryCall<object, EchoResponse>, cb: grpc.sendUnaryData<EchoResponse>) => {
    const headers = Object.entries(call.metadata.getMap()).map(([key, value]) => ({
      key,
      value: String(value),
    }));
    cb(null, { pod, namespace, method: call.getPath(), headers });
  };
  server.addService(GrpcEcho.service, { Echo: answer, EchoTwo: answer, EchoThree: answer });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err === null ? resolve(p) : reject(err),
    ),
  );
  servers.push(server);
  return port;
}

function client(authority?: string, tls = false): EchoClient {
  const port = (tls ? 443 : 80) + h.offset;
  const options: grpc.ChannelOptions = authority === undefined ? {} : { 'grpc.default_authority': authority };
  if (tls) options['grpc.ssl_target_name_override'] = authority ?? 'example.org';
  const c = new GrpcEcho(
    `127.0.0.1:${port}`,
    tls ? grpc.credentials.createSsl(Buffer.from(ca.certPem)) : grpc.credentials.createInsecure(),
    options,
  ) as unknown as EchoClient;
  clients.push(c);
  return c;
}

interface Outcome {
  code: grpc.status;
  response: EchoResponse | undefined;
}

function call(c: EchoClient, method: Method, metadata: Record<string, string> = {}): Promise<Outcome> {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  return new Promise((resolve) => {
    c[method]({}, md, { deadline: Date.now() + 5000 }, (err, response) =>
      resolve({ code: err === null ? grpc.status.OK : err.code, response: response ?? undefined }),
    );
  });
}

/** Waits until the call reaches `pod` (the configuration is applied), then asserts it. */
async function reaches(
  c: EchoClient,
  method: Method,
  metadata: Record<string, string>,
  pod: string,
): Promise<Outcome> {
  await waitFor(async () => (await call(c, method, metadata)).response?.pod === pod, {
    timeoutMs: 15_000,
    what: `${method} ${JSON.stringify(metadata)} → ${pod}`,
  });
  return call(c, method, metadata);
}

before(async () => {
  ca = createAuthority(dir.path);
  h = await startHarness({ tcp: [80, 443] });
  h.api.applyYaml(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: same-namespace, namespace: ${INFRA} }
spec:
  gatewayClassName: switchyard
  listeners:
    - { name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: Same } } }
`);
  for (const v of ['v1', 'v2', 'v3']) {
    const name = `grpc-infra-backend-${v}`;
    h.service(INFRA, name, 8080, await grpcEcho(INFRA, `${name}-pod-1`));
  }
});

after(async () => {
  for (const c of clients) c.close();
  for (const s of servers) s.forceShutdown();
  await h?.close();
  dir.remove();
});

test('GRPCRouteExactMethodMatching: Echo → v1, EchoTwo → v2, EchoThree → UNIMPLEMENTED', async (t) => {
  t.after(await h.applyCase('grpcroute-exact-method-matching.yaml', grpcEcho));
  await routeCondition(h.api, 'GRPCRoute', 'exact-matching', 'same-namespace', [
    'Accepted',
    'True',
    'Accepted',
  ]);
  await routeCondition(h.api, 'GRPCRoute', 'exact-matching', 'same-namespace', ['ResolvedRefs', 'True']);
  const c = client();
  const one = await reaches(c, 'Echo', {}, 'grpc-infra-backend-v1-pod-1');
  assert.equal(one.response?.method, `/${SERVICE}/Echo`);
  assert.equal(one.response?.namespace, INFRA);
  await reaches(c, 'EchoTwo', {}, 'grpc-infra-backend-v2-pod-1');
  assert.equal((await call(c, 'EchoThree')).code, grpc.status.UNIMPLEMENTED);
  const l = listeners(h.api, 'same-namespace')[0];
  assert.ok(l?.supportedKinds.some((k) => k.kind === 'GRPCRoute'));
  assert.equal(l?.attachedRoutes, 1);
});

test('GRPCRouteHeaderMatching: Exact header matches, ANDed within a match, ORed across, more headers first', async (t) => {
  t.after(await h.applyCase('grpcroute-header-matching.yaml', grpcEcho));
  await routeCondition(h.api, 'GRPCRoute', 'grpc-header-matching', 'same-namespace', ['Accepted', 'True']);
  const c = client();
  const v1 = 'grpc-infra-backend-v1-pod-1';
  const v2 = 'grpc-infra-backend-v2-pod-1';
  const cases: [Record<string, string>, string | grpc.status][] = [
    [{ version: 'one' }, v1],
    [{ version: 'two' }, v2],
    [{ version: 'two', color: 'orange' }, v1],
    [{ version: 'two', color: 'blue' }, v2],
    [{ color: 'orange' }, grpc.status.UNIMPLEMENTED],
    [{ 'some-other-header': 'one' }, grpc.status.UNIMPLEMENTED],
    [{ color: 'blue' }, v1],
    [{ color: 'green' }, v1],
    [{ color: 'red' }, v2],
    [{ color: 'yellow' }, v2],
  ];
  await reaches(c, 'Echo', { version: 'one' }, v1);
  for (const [md, expected] of cases) {
    const got = await call(c, 'Echo', md);
    if (typeof expected === 'string') assert.equal(got.response?.pod, expected, JSON.stringify(md));
    else assert.equal(got.code, expected, JSON.stringify(md));
  }
});

test('GRPCRouteListenerHostnameMatching: listeners of one port by hostname (exact, *. over several labels)', async (t) => {
  t.after(await h.applyCase('grpcroute-listener-hostname-matching.yaml', grpcEcho));
  for (const r of ['backend-v1', 'backend-v2', 'backend-v3'])
    await routeCondition(h.api, 'GRPCRoute', r, 'grpcroute-listener-hostname-matching', ['Accepted', 'True']);
  const cases: [string, string | grpc.status][] = [
    ['bar.com', 'grpc-infra-backend-v1-pod-1'],
    ['foo.bar.com', 'grpc-infra-backend-v2-pod-1'],
    ['baz.bar.com', 'grpc-infra-backend-v3-pod-1'],
    ['boo.bar.com', 'grpc-infra-backend-v3-pod-1'],
    ['multiple.prefixes.bar.com', 'grpc-infra-backend-v3-pod-1'],
    ['multiple.prefixes.foo.com', 'grpc-infra-backend-v3-pod-1'],
    ['foo.com', grpc.status.UNIMPLEMENTED],
    ['no.matching.host', grpc.status.UNIMPLEMENTED],
  ];
  await reaches(client('bar.com'), 'Echo', {}, 'grpc-infra-backend-v1-pod-1');
  for (const [authority, expected] of cases) {
    const got = await call(client(authority), 'Echo');
    if (typeof expected === 'string') assert.equal(got.response?.pod, expected, authority);
    else assert.equal(got.code, expected, authority);
  }
});

test('GRPCRouteWeight: 300 calls split 70/30/0 within ±5 %', async (t) => {
  t.after(await h.applyCase('grpcroute-weight.yaml', grpcEcho));
  await routeCondition(h.api, 'GRPCRoute', 'weighted-backends', 'same-namespace', ['Accepted', 'True']);
  const c = client();
  await waitFor(async () => (await call(c, 'Echo')).code === grpc.status.OK, {
    timeoutMs: 15_000,
    what: 'OK',
  });
  const counts = new Map<string, number>();
  for (let i = 0; i < 300; i++) {
    const got = await call(c, 'Echo');
    assert.equal(got.code, grpc.status.OK);
    const pod = got.response?.pod ?? '';
    counts.set(pod, (counts.get(pod) ?? 0) + 1);
  }
  const share = (pod: string) => (counts.get(pod) ?? 0) / 300;
  assert.ok(Math.abs(share('grpc-infra-backend-v1-pod-1') - 0.7) <= 0.05, JSON.stringify([...counts]));
  assert.ok(Math.abs(share('grpc-infra-backend-v2-pod-1') - 0.3) <= 0.05, JSON.stringify([...counts]));
  assert.equal(counts.get('grpc-infra-backend-v3-pod-1'), undefined);
});

test('GRPCRouteRequestHeaderModifier: set overwrites, add appends, remove drops (metadata the backend sees)', async (t) => {
  t.after(await h.applyCase('grpcroute-request-header-modifier.yaml', grpcEcho));
  await routeCondition(h.api, 'GRPCRoute', 'grpc-request-header-modifier', 'same-namespace', [
    'Accepted',
    'True',
  ]);
  const c = client();
  const seen = (o: Outcome, name: string) =>
    o.response?.headers
      .filter((x) => x.key === name)
      .map((x) => x.value)
      .join(',');
  // Echo: the first of its three rules (set) wins, as the spec orders equal matches.
  const one = await reaches(
    c,
    'Echo',
    { 'some-other-header': 'val', 'x-header-set': 'this-value-should-be-overwritten' },
    'grpc-infra-backend-v1-pod-1',
  );
  assert.equal(seen(one, 'x-header-set'), 'set-overwrites-values');
  assert.equal(seen(one, 'some-other-header'), 'val');
  const two = await reaches(
    c,
    'EchoTwo',
    { 'x-header-add-1': 'original', 'x-header-remove-1': 'gone', 'x-header-remove-2': 'gone', keep: 'me' },
    'grpc-infra-backend-v2-pod-1',
  );
  assert.equal(seen(two, 'x-header-set-1'), 'header-set-1');
  assert.equal(seen(two, 'x-header-set-2'), 'header-set-2');
  assert.match(seen(two, 'x-header-add-1') ?? '', /original.*header-add-1/);
  assert.equal(seen(two, 'x-header-add-2'), 'header-add-2');
  assert.equal(seen(two, 'x-header-remove-1'), '');
  assert.equal(seen(two, 'x-header-remove-2'), '');
  assert.equal(seen(two, 'keep'), 'me');
  assert.equal(seen(two, 'x-switchyard-listener-port'), '', 'the port stamp is not forwarded');
});

test('GRPCRoute over TLS (HTTPS listener, ALPN h2), RegularExpression method match, BackendNotFound (not upstream cases)', async (t) => {
  const cert = ca.issue('grpc-gw', { dns: ['example.org'] });
  h.api.applyYaml(`
apiVersion: v1
kind: Secret
metadata: { name: grpc-cert, namespace: ${INFRA} }
type: kubernetes.io/tls
data:
  tls.crt: ${Buffer.from(cert.certPem).toString('base64')}
  tls.key: ${Buffer.from(cert.keyPem).toString('base64')}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: grpc-tls, namespace: ${INFRA} }
spec:
  gatewayClassName: switchyard
  listeners:
    - name: https
      port: 443
      protocol: HTTPS
      hostname: example.org
      tls: { certificateRefs: [{ name: grpc-cert }] }
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: grpc-regex, namespace: ${INFRA} }
spec:
  parentRefs: [{ name: grpc-tls }]
  rules:
    - matches: [{ method: { type: RegularExpression, service: 'gateway_api_conformance\\..*', method: 'Echo(Two)?' } }]
      backendRefs: [{ name: grpc-infra-backend-v2, port: 8080 }]
    - matches: [{ method: { method: EchoThree } }]
      backendRefs: [{ name: missing-backend, port: 8080 }]
`);
  t.after(() => {
    h.api.remove('GRPCRoute', INFRA, 'grpc-regex');
    h.api.remove('Gateway', INFRA, 'grpc-tls');
    h.api.remove('Secret', INFRA, 'grpc-cert');
  });
  await routeCondition(h.api, 'GRPCRoute', 'grpc-regex', 'grpc-tls', [
    'ResolvedRefs',
    'False',
    'BackendNotFound',
  ]);
  assert.equal(
    cond(parentOf(h.api, 'GRPCRoute', INFRA, 'grpc-regex', 'grpc-tls')?.conditions, 'Accepted')?.status,
    'True',
  );
  const c = client('example.org', true);
  await reaches(c, 'Echo', {}, 'grpc-infra-backend-v2-pod-1');
  await reaches(c, 'EchoTwo', {}, 'grpc-infra-backend-v2-pod-1');
  const three = await call(c, 'EchoThree');
  assert.notEqual(three.code, grpc.status.OK);
  assert.equal(three.response, undefined);
});

test('GRPCRoute follows EndpointSlice and route changes without restart (not an upstream case)', async (t) => {
  t.after(await h.applyCase('grpcroute-exact-method-matching.yaml', grpcEcho));
  const c = client();
  await reaches(c, 'Echo', {}, 'grpc-infra-backend-v1-pod-1');
  const route = h.api.get('GRPCRoute', INFRA, 'exact-matching') as Parameters<Harness['api']['apply']>[0] & {
    spec: { rules: { backendRefs: { name: string; port: number }[] }[] };
  };
  const rules = structuredClone(route.spec.rules);
  (rules[0] as { backendRefs: { name: string; port: number }[] }).backendRefs = [
    { name: 'grpc-infra-backend-v3', port: 8080 },
  ];
  h.api.apply({ ...route, spec: { ...route.spec, rules } });
  await reaches(c, 'Echo', {}, 'grpc-infra-backend-v3-pod-1');
  const slice = h.api.get('EndpointSlice', INFRA, 'grpc-infra-backend-v3-abcde') as Parameters<
    Harness['api']['apply']
  >[0];
  h.api.apply({ ...slice, endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: false } }] });
  t.after(() => h.api.apply(slice));
  await waitFor(async () => (await call(c, 'Echo')).code === grpc.status.UNAVAILABLE, {
    timeoutMs: 15_000,
    what: 'UNAVAILABLE once no endpoint is ready',
  });
});

test('GRPCRoute with a filter the gateway cannot apply to gRPC answers (ResponseHeaderModifier) → Accepted False UnsupportedValue, not served (not an upstream case)', async (t) => {
  h.api.applyYaml(`
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: grpc-response-headers, namespace: ${INFRA} }
spec:
  parentRefs: [{ name: same-namespace }]
  rules:
    - filters:
        - type: ResponseHeaderModifier
          responseHeaderModifier: { set: [{ name: X-Answered-By, value: switchyard }] }
      backendRefs: [{ name: grpc-infra-backend-v1, port: 8080 }]
`);
  t.after(() => h.api.remove('GRPCRoute', INFRA, 'grpc-response-headers'));
  await routeCondition(h.api, 'GRPCRoute', 'grpc-response-headers', 'same-namespace', [
    'Accepted',
    'False',
    'UnsupportedValue',
  ]);
  assert.equal((await call(client(), 'Echo')).code, grpc.status.UNIMPLEMENTED);
  await waitFor(() => listeners(h.api, 'same-namespace')[0]?.attachedRoutes === 0, {
    timeoutMs: 10_000,
    what: '0 attached',
  });
});
