// TLSRoute on TLS listeners with `tls.mode: Passthrough` (issue 32): upstream conformance
// manifests (GATEWAY-TLS cases of kubernetes-sigs/gateway-api conformance/tests) routed by the
// ClientHello's server name, never terminated: each node:tls client completes its handshake with
// the BACKEND's own certificate (checked by fingerprint), then speaks the suite's TCP echo.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type TLSSocket } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import {
  APP,
  INFRA,
  listeners,
  routeCondition,
  startHarness,
  tcpAsk,
  tlsEcho,
  type BackendFactory,
  type Harness,
} from './route-harness.js';
import { createAuthority, type Authority } from '../support/certs.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

let h: Harness;
let ca: Authority;
const dir = tempDir('switchyard-k8s-tls-');
/** The certificate each backend pod presents, by pod name. */
const certs = new Map<string, string>();

/** A TLS echo backend with a certificate of its own (names the suite's hosts use). */
const backend: BackendFactory = async (namespace, pod) => {
  const pair = ca.issue(`${namespace}-${pod}`, {
    cn: pod,
    dns: ['abc.example.com', '*.example.com', 'example.com', 'tls.example.com'],
  });
  certs.set(pod, pair.certPem);
  return tlsEcho(pair.certPem, pair.keyPem)(namespace, pod);
};

before(async () => {
  ca = createAuthority(dir.path);
  h = await startHarness({ tcp: [80, 443] });
  // The suite's base Services (conformance/base/manifests.yaml), each with its own TLS backend.
  for (const [ns, name, port, pod] of [
    [INFRA, 'tls-backend', 443, 'tls-backend-pod-1'],
    [INFRA, 'tls-backend-2', 443, 'tls-backend-2-pod-1'],
    [APP, 'tls-backend', 443, 'app-tls-backend-pod-1'],
    [INFRA, 'tcp-backend', 8443, 'tcp-backend-pod-1'],
  ] as const)
    h.service(ns, name, port, await backend(ns, pod));
});

after(async () => {
  await h?.close();
  dir.remove();
});

interface Reached {
  /** The backend pod that answered the echo, or the error that ended the connection. */
  pod: string | Error;
  /** The CN of the certificate the handshake completed with. */
  peer: string | undefined;
  /** That certificate is the pod's own (TLS was not terminated by the gateway). */
  backendCert: boolean;
}

function reach(serverName: string | undefined): Promise<Reached> {
  const socket: TLSSocket = connect({
    host: '127.0.0.1',
    port: 443 + h.offset,
    ca: ca.certPem,
    ...(serverName === undefined ? {} : { servername: serverName }),
    checkServerIdentity: () => undefined,
  });
  return tcpAsk(socket).then((pod) => {
    const peer = socket.getPeerX509Certificate();
    const own = typeof pod === 'string' ? certs.get(pod) : undefined;
    return {
      pod,
      peer: peer?.subject.match(/CN=([^\n]+)/)?.[1],
      backendCert: own !== undefined && peer?.fingerprint256 === new X509Certificate(own).fingerprint256,
    };
  });
}

async function reaches(serverName: string, pod: string): Promise<void> {
  await waitFor(async () => (await reach(serverName)).pod === pod, {
    timeoutMs: 15_000,
    what: `${serverName} → ${pod}`,
  });
  const r = await reach(serverName);
  assert.equal(r.pod, pod);
  assert.equal(r.peer, pod, 'the handshake completed with the backend certificate');
  assert.ok(r.backendCert);
}

async function rejected(serverName: string | undefined): Promise<void> {
  await waitFor(async () => (await reach(serverName)).pod instanceof Error, {
    timeoutMs: 15_000,
    what: `${serverName ?? '(no SNI)'} rejected`,
  });
}

test('TLSRouteSimpleSameNamespace: abc.example.com is passed through to tcp-backend, which completes the handshake', async (t) => {
  t.after(await h.applyCase('tlsroute-simple-same-namespace.yaml', backend));
  await routeCondition(h.api, 'TLSRoute', 'gateway-conformance-infra-test', 'gateway-tlsroute', [
    'Accepted',
    'True',
    'Accepted',
  ]);
  await routeCondition(h.api, 'TLSRoute', 'gateway-conformance-infra-test', 'gateway-tlsroute', [
    'ResolvedRefs',
    'True',
  ]);
  await reaches('abc.example.com', 'tcp-backend-pod-1');
  // Inside the listener's *.example.com but not a route hostname; no SNI at all.
  await rejected('def.example.com');
  await rejected(undefined);
  const l = listeners(h.api, 'gateway-tlsroute');
  assert.deepEqual(l[0]?.supportedKinds, [{ group: 'gateway.networking.k8s.io', kind: 'TLSRoute' }]);
  assert.equal(l[0]?.attachedRoutes, 1);
});

test('TLSRouteHostnameIntersection: exact, wildcard and empty listener hostnames intersect the route hostnames', async () => {
  // The suite gives each Gateway its own address; here every Gateway's port 443 is one socket, so
  // each Gateway is applied alone with its routes.
  const cases: [string, [string, string][], string][] = [
    ['gw-tlsroute-exact-hostname-x-1', [['abc.example.com', 'tls-backend-pod-1']], 'non.matching.com'],
    [
      'gw-tlsroute-more-specific-wc-hostname-x-2',
      [
        ['abc.example.com', 'tls-backend-pod-1'],
        ['other.example.com', 'tls-backend-2-pod-1'],
      ],
      'non.matching.com',
    ],
    [
      'gw-tlsroute-less-specific-wc-hostname-x-3',
      [
        ['abc.example.com', 'tls-backend-pod-1'],
        ['other.example.com', 'tls-backend-2-pod-1'],
      ],
      'non.matching.com',
    ],
    [
      'gw-tlsroute-empty-hostname-x-4',
      [
        ['abc.example.com', 'tls-backend-pod-1'],
        ['other.example.com', 'tls-backend-2-pod-1'],
      ],
      'non.matching.org',
    ],
  ];
  for (const [gateway, hits, miss] of cases) {
    const remove = await h.applyCase(
      'tlsroute-hostname-intersection.yaml',
      backend,
      (o) =>
        o.metadata.name === gateway ||
        (o.spec as { parentRefs?: { name: string }[] } | undefined)?.parentRefs?.some(
          (p) => p.name === gateway,
        ) === true,
    );
    try {
      for (const [name, pod] of hits) await reaches(name, pod);
      await rejected(miss);
    } finally {
      remove();
    }
  }
});

test('TLSRouteInvalidBackendRefNonexistent: ResolvedRefs False BackendNotFound; the connection is rejected', async (t) => {
  t.after(await h.applyCase('tlsroute-invalid-backendref-nonexistent.yaml', backend));
  await routeCondition(
    h.api,
    'TLSRoute',
    'invalid-backend-ref-nonexistent',
    'gateway-tlsroute-invalid-backend-ref-nonexistent',
    ['ResolvedRefs', 'False', 'BackendNotFound'],
  );
  await routeCondition(
    h.api,
    'TLSRoute',
    'invalid-backend-ref-nonexistent',
    'gateway-tlsroute-invalid-backend-ref-nonexistent',
    ['Accepted', 'True'],
  );
  await rejected('example.com');
});

test('TLSRouteInvalidBackendRefUnknownKind: ResolvedRefs False InvalidKind; the connection is rejected', async (t) => {
  t.after(await h.applyCase('tlsroute-invalid-backendref-unknown-kind.yaml', backend));
  await routeCondition(
    h.api,
    'TLSRoute',
    'invalid-backend-ref-unknown-kind',
    'gateway-tlsroute-invalid-backend-ref-unknown-kind',
    ['ResolvedRefs', 'False', 'InvalidKind'],
  );
  await rejected('example.com');
});

test('TLSRouteInvalidReferenceGrant: grants that do not cover the Service → RefNotPermitted; rejected', async (t) => {
  t.after(await h.applyCase('tlsroute-invalid-reference-grant.yaml', backend));
  await routeCondition(
    h.api,
    'TLSRoute',
    'gateway-conformance-infra-test',
    'gateway-tlsroute-referencegrant',
    ['ResolvedRefs', 'False', 'RefNotPermitted'],
  );
  await rejected('abc.example.com');
});

test('ReferenceGrant from TLSRoute: a grant for the Service lets the cross-namespace backend answer (not an upstream case)', async (t) => {
  t.after(await h.applyCase('tlsroute-invalid-reference-grant.yaml', backend));
  h.api.apply({
    apiVersion: 'gateway.networking.k8s.io/v1beta1',
    kind: 'ReferenceGrant',
    metadata: { name: 'tlsroute-grant', namespace: APP },
    spec: {
      from: [{ group: 'gateway.networking.k8s.io', kind: 'TLSRoute', namespace: INFRA }],
      to: [{ group: '', kind: 'Service', name: 'tls-backend' }],
    },
  });
  t.after(() => h.api.remove('ReferenceGrant', APP, 'tlsroute-grant'));
  await routeCondition(
    h.api,
    'TLSRoute',
    'gateway-conformance-infra-test',
    'gateway-tlsroute-referencegrant',
    ['ResolvedRefs', 'True'],
  );
  // The app-backend namespace's tls-backend (its own certificate) answers.
  await reaches('abc.example.com', 'app-tls-backend-pod-1');
});

test('TLSRouteInvalidNoMatchingListenerHostname: Accepted False NoMatchingListenerHostname, 0 routes attached', async (t) => {
  t.after(await h.applyCase('tlsroute-invalid-no-matching-listener-hostname.yaml', backend));
  await routeCondition(h.api, 'TLSRoute', 'tlsroute-hostname-mismatch-1', 'gateway-tls-exact-hostname', [
    'Accepted',
    'False',
    'NoMatchingListenerHostname',
  ]);
  await routeCondition(h.api, 'TLSRoute', 'tlsroute-hostname-mismatch-2', 'gateway-tls-wildcard-hostname', [
    'Accepted',
    'False',
    'NoMatchingListenerHostname',
  ]);
  await waitFor(
    () =>
      listeners(h.api, 'gateway-tls-exact-hostname')[0]?.attachedRoutes === 0 &&
      listeners(h.api, 'gateway-tls-wildcard-hostname')[0]?.attachedRoutes === 0,
    { timeoutMs: 10_000, what: '0 attached' },
  );
  await rejected('www.nomatch.com');
});

test('TLSRouteInvalidNoMatchingListener: HTTP and HTTPS listeners → NotAllowedByListeners; unknown sectionName → NoMatchingParent', async (t) => {
  t.after(await h.applyCase('tlsroute-invalid-no-matching-listener.yaml', backend));
  await routeCondition(
    h.api,
    'TLSRoute',
    'tlsroute-not-allowed-protocol-http',
    'gateway-tlsroute-http-only',
    ['Accepted', 'False', 'NotAllowedByListeners'],
  );
  await routeCondition(
    h.api,
    'TLSRoute',
    'tlsroute-not-allowed-protocol-https',
    'gateway-tlsroute-https-only',
    ['Accepted', 'False', 'NotAllowedByListeners'],
  );
  await routeCondition(
    h.api,
    'TLSRoute',
    'tlsroute-no-matching-section-name',
    'gateway-tlsroute-tls-passthrough-only',
    ['Accepted', 'False', 'NoMatchingParent'],
  );
  await waitFor(() => listeners(h.api, 'gateway-tlsroute-http-only')[0]?.attachedRoutes === 0, {
    timeoutMs: 10_000,
    what: '0 attached',
  });
});

test('TLSRouteListenerPassthroughSupportedKinds: TCPRoute on a passthrough listener → InvalidRouteKinds; supportedKinds TLSRoute', async (t) => {
  t.after(await h.applyCase('tlsroute-listener-passthrough-supported-kinds.yaml', backend));
  await waitFor(
    () => {
      const l = listeners(h.api, 'gateway-tlsroute-passthrough-supported-kind')[0];
      return (
        l?.conditions.find((c) => c.type === 'ResolvedRefs')?.reason === 'InvalidRouteKinds' &&
        JSON.stringify(l.supportedKinds.map((k) => k.kind)) === '["TLSRoute"]'
      );
    },
    { timeoutMs: 10_000, what: 'InvalidRouteKinds, supportedKinds [TLSRoute]' },
  );
});

test('Passthrough follows changes without restart: a route hostname edit moves the traffic; *. covers several labels (not an upstream case)', async (t) => {
  t.after(await h.applyCase('tlsroute-simple-same-namespace.yaml', backend));
  await reaches('abc.example.com', 'tcp-backend-pod-1');
  const route = h.api.get('TLSRoute', INFRA, 'gateway-conformance-infra-test') as Parameters<
    Harness['api']['apply']
  >[0] & { spec: { hostnames: string[]; rules: unknown[] } };
  h.api.apply({
    ...route,
    spec: {
      ...route.spec,
      hostnames: ['*.example.com'],
      rules: [{ backendRefs: [{ name: 'tls-backend', port: 443 }] }],
    },
  });
  await reaches('deep.sub.example.com', 'tls-backend-pod-1');
  await reaches('abc.example.com', 'tls-backend-pod-1');
  await rejected('example.org');
});
