// The test API server (test/support/kube-api-server.ts) driven by the official
// @kubernetes/client-node: its informer, its generic object API (which resolves resources
// through discovery), its status patch and its Lease API cannot tell it from a real server.
import { test, type TestContext } from 'node:test';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  makeInformer,
  setHeaderOptions,
  type KubernetesObject,
  type V1Service,
} from '@kubernetes/client-node';
import { KubeApiServer } from '../support/kube-api-server.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const SERVICE = `
apiVersion: v1
kind: Service
metadata: { name: web, namespace: apps }
spec:
  ports: [{ port: 8080, protocol: TCP }]
`;

async function setup(t: TestContext): Promise<{ server: KubeApiServer; kc: KubeConfig }> {
  const server = await KubeApiServer.start({ bookmarkIntervalMs: 100 });
  t.after(() => server.close());
  const dir = tempDir('switchyard-kube-');
  t.after(() => dir.remove());
  const kc = new KubeConfig();
  kc.loadFromFile(server.writeKubeconfig(join(dir.path, 'kubeconfig')));
  return { server, kc };
}

test('the client-node informer lists, watches, follows changes and relists after 410 Gone', async (t) => {
  const { server, kc } = await setup(t);
  server.applyYaml(SERVICE);
  const core = kc.makeApiClient(CoreV1Api);
  const informer = makeInformer<V1Service>(kc, '/api/v1/namespaces/apps/services', () =>
    core.listNamespacedService({ namespace: 'apps' }),
  );
  const seen: string[] = [];
  informer.on('add', (s) => seen.push(`add ${s.metadata?.name} ${s.spec?.ports?.[0]?.port}`));
  informer.on('update', (s) => seen.push(`update ${s.metadata?.name} ${s.spec?.ports?.[0]?.port}`));
  informer.on('delete', (s) => seen.push(`delete ${s.metadata?.name}`));
  await informer.start();
  t.after(() => informer.stop());
  assert.deepEqual(seen, ['add web 8080']);

  server.applyYaml(SERVICE.replace('8080', '9090'));
  await waitFor(() => seen.includes('update web 9090'), { timeoutMs: 10_000, what: 'the update' });
  server.remove('Service', 'apps', 'web');
  await waitFor(() => seen.includes('delete web'), { timeoutMs: 10_000, what: 'the delete' });
  assert.equal(informer.list().length, 0);

  // History gone and the stream cut: the informer's resumed watch gets an ERROR 410 event and relists.
  const lists = () =>
    server.requests.filter((r) => r.path.endsWith('/services') && !r.query.has('watch')).length;
  const listsBefore = lists();
  // (synchronous: the informer's watch is cut before the change, and cannot resume past it)
  server.dropWatches();
  server.applyYaml(SERVICE.replace('name: web', 'name: api'));
  server.compact();
  await waitFor(() => lists() > listsBefore, { timeoutMs: 20_000, what: 'a relist' });
  await waitFor(() => informer.get('api', 'apps') !== undefined, {
    timeoutMs: 10_000,
    what: 'the relisted object',
  });
  const watches = server.requests.filter((r) => r.query.get('watch') === 'true');
  assert.ok(watches.length >= 2, 'the informer watched again');
  assert.ok(
    watches.every((r) => (r.query.get('resourceVersion') ?? '') !== ''),
    'every watch resumes from a resourceVersion',
  );
});

test('a watch from a resourceVersion replays later events, sends bookmarks, and answers 410 when too old', async (t) => {
  const { server } = await setup(t);
  server.applyYaml(SERVICE);
  const rv = server.resourceVersion;
  server.applyYaml(SERVICE.replace('8080', '8081'));
  const res = await fetch(
    `${server.url}/api/v1/namespaces/apps/services?watch=true&resourceVersion=${rv}&allowWatchBookmarks=true`,
  );
  assert.equal(res.status, 200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes('BOOKMARK')) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
  }
  await reader.cancel();
  const events = text
    .split('\n')
    .filter((l) => l !== '')
    .map(
      (l) =>
        JSON.parse(l) as {
          type: string;
          object: KubernetesObject & { spec?: { ports: { port: number }[] } };
        },
    );
  assert.equal(events[0]?.type, 'MODIFIED');
  assert.equal(events[0]?.object.spec?.ports[0]?.port, 8081);
  assert.equal(events[0]?.object.kind, 'Service');
  assert.ok(
    events.some(
      (e) => e.type === 'BOOKMARK' && e.object.metadata?.resourceVersion === String(server.resourceVersion),
    ),
  );

  server.compact();
  const gone = await fetch(`${server.url}/api/v1/namespaces/apps/services?watch=true&resourceVersion=${rv}`);
  const line = JSON.parse((await gone.text()).trim()) as {
    type: string;
    object: { kind: string; code: number; reason: string };
  };
  assert.deepEqual(
    [line.type, line.object.kind, line.object.code, line.object.reason],
    ['ERROR', 'Status', 410, 'Expired'],
  );
});

test('discovery, generic reads, merge-patched status and generation as the client sees them', async (t) => {
  const { server, kc } = await setup(t);
  server.applyYaml(`
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: sy }
spec: { controllerName: switchyard.dev/gateway-controller }
`);
  // KubernetesObjectApi resolves the resource name through /apis/<group>/<version> (discovery).
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const read = await objects.read({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name: 'sy' },
  });
  assert.equal(read.metadata?.generation, 1);
  const list = await objects.list('gateway.networking.k8s.io/v1', 'GatewayClass');
  assert.equal(list.items.length, 1);
  assert.equal((list as unknown as { kind: string }).kind, 'GatewayClassList');

  const custom = kc.makeApiClient(CustomObjectsApi);
  const conditions = [
    {
      type: 'Accepted',
      status: 'True',
      reason: 'Accepted',
      message: '',
      observedGeneration: 1,
      lastTransitionTime: '2026-01-01T00:00:00Z',
    },
  ];
  await custom.patchClusterCustomObjectStatus(
    {
      group: 'gateway.networking.k8s.io',
      version: 'v1',
      plural: 'gatewayclasses',
      name: 'sy',
      body: { status: { conditions } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  const stored = server.get('GatewayClass', undefined, 'sy') as {
    status?: { conditions: unknown[] };
    metadata: { generation?: number };
  };
  assert.deepEqual(stored.status?.conditions, conditions);
  assert.equal(stored.metadata.generation, 1, 'a status write keeps the generation');
  // A status sent to the main endpoint is ignored; a spec change bumps the generation.
  server.applyYaml(`
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: sy }
spec: { controllerName: switchyard.dev/other, description: changed }
status: { conditions: [] }
`);
  const after = server.get('GatewayClass', undefined, 'sy') as {
    status?: { conditions: unknown[] };
    metadata: { generation?: number };
  };
  assert.equal(after.metadata.generation, 2);
  const patchReq = server.requests.find((r) => r.method === 'PATCH');
  assert.equal(patchReq?.path, '/apis/gateway.networking.k8s.io/v1/gatewayclasses/sy/status');
  assert.equal(patchReq?.contentType, 'application/merge-patch+json');
});

test('Leases: create, conflict on a stale resourceVersion (409), update', async (t) => {
  const { kc } = await setup(t);
  const leases = kc.makeApiClient(CoordinationV1Api);
  const created = await leases.createNamespacedLease({
    namespace: 'default',
    body: { metadata: { name: 'l' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } },
  });
  await assert.rejects(
    leases.createNamespacedLease({ namespace: 'default', body: { metadata: { name: 'l' }, spec: {} } }),
    (err: { code?: number }) => err.code === 409,
  );
  const updated = await leases.replaceNamespacedLease({
    name: 'l',
    namespace: 'default',
    body: { ...created, spec: { ...created.spec, holderIdentity: 'b' } },
  });
  assert.equal(updated.spec?.holderIdentity, 'b');
  // The first resourceVersion is stale now.
  await assert.rejects(
    leases.replaceNamespacedLease({
      name: 'l',
      namespace: 'default',
      body: { ...created, spec: { holderIdentity: 'c' } },
    }),
    (err: { code?: number }) => err.code === 409,
  );
  const read = await leases.readNamespacedLease({ name: 'l', namespace: 'default' });
  assert.equal(read.spec?.holderIdentity, 'b');
});

// kubectl: $KUBECTL or the one on PATH (scripts/setup.sh installs Debian's kubernetes-client, 1.20,
// where no other kubectl is). In CI a missing kubectl fails this test instead of skipping it.
const KUBECTL = process.env['KUBECTL'] ?? 'kubectl';
const kubectlMinor = ((): number | undefined => {
  try {
    const out = execFileSync(KUBECTL, ['version', '--client', '-o', 'json'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const v = JSON.parse(out) as { clientVersion?: { major?: string; minor?: string } };
    return Number.parseInt(v.clientVersion?.minor ?? '0', 10);
  } catch {
    return undefined;
  }
})();
const inCi = process.env['CI'] === 'true';

test(
  'kubectl reads through discovery, merge-patches an object, and patches status where it can',
  { skip: kubectlMinor === undefined && !inCi && 'kubectl not installed' },
  async (t) => {
    assert.ok(
      kubectlMinor !== undefined,
      `${KUBECTL} is not installed: CI needs it (scripts/setup.sh installs kubernetes-client)`,
    );
    const { server } = await setup(t);
    const dir = tempDir('switchyard-kubectl-');
    t.after(() => dir.remove());
    const kubeconfig = server.writeKubeconfig(join(dir.path, 'kubeconfig'));
    server.applyYaml(SERVICE);
    server.applyYaml(`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: r, namespace: apps }
spec: { parentRefs: [{ name: gw }] }
`);
    // Not execFileSync: the API server answers from this process's event loop.
    const run = async (...args: string[]) =>
      (
        await promisify(execFile)(
          KUBECTL,
          ['--kubeconfig', kubeconfig, '--cache-dir', join(dir.path, 'cache'), ...args],
          { encoding: 'utf8', timeout: 60_000 },
        )
      ).stdout;
    const services = JSON.parse(await run('get', 'services', '-n', 'apps', '-o', 'json')) as {
      kind: string;
      items: { metadata: { name: string } }[];
    };
    assert.equal(services.kind, 'List');
    assert.deepEqual(
      services.items.map((i) => i.metadata.name),
      ['web'],
    );
    // The short name resolves through discovery (/apis, /apis/<group>/<version>).
    assert.match(
      await run('get', 'httproute', '-A', '-o', 'name'),
      /httproute\.gateway\.networking\.k8s\.io\/r/,
    );
    // A merge patch of the object (every kubectl version): the spec changes, the generation moves,
    // and a status sent to the main endpoint is ignored as a real server does.
    await run(
      'patch',
      'httproute',
      'r',
      '-n',
      'apps',
      '--type=merge',
      '-p',
      '{"metadata":{"labels":{"team":"a"}},"spec":{"hostnames":["a.example"]},"status":{"parents":[]}}',
    );
    const patched = server.get('HTTPRoute', 'apps', 'r') as {
      metadata: { generation: number; labels?: Record<string, string> };
      spec: { hostnames?: string[] };
      status?: unknown;
    };
    assert.deepEqual(patched.spec.hostnames, ['a.example']);
    assert.equal(patched.metadata.labels?.['team'], 'a');
    assert.equal(patched.metadata.generation, 2);
    assert.equal(patched.status, undefined);
    // --subresource exists from kubectl 1.24 on.
    if ((kubectlMinor ?? 0) < 24) {
      t.diagnostic(`kubectl 1.${kubectlMinor ?? '?'} has no --subresource: status patch not run`);
      return;
    }
    await run(
      'patch',
      'httproute',
      'r',
      '-n',
      'apps',
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"parents":[{"controllerName":"x","parentRef":{"name":"gw"},"conditions":[]}]}}',
    );
    const route = server.get('HTTPRoute', 'apps', 'r') as {
      metadata: { generation: number };
      status?: { parents: { controllerName: string }[] };
    };
    assert.equal(route.status?.parents[0]?.controllerName, 'x');
    assert.equal(route.metadata.generation, 2, 'a status patch keeps the generation');
  },
);

test('Namespaces carry kubernetes.io/metadata.name, as a real API server (≥ 1.22) sets it, also after a relabel', async (t) => {
  const { server } = await setup(t);
  server.applyYaml('apiVersion: v1\nkind: Namespace\nmetadata: { name: apps, labels: { team: a } }\n');
  assert.deepEqual(server.get('Namespace', undefined, 'apps')?.metadata.labels, {
    team: 'a',
    'kubernetes.io/metadata.name': 'apps',
  });
  server.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'apps', labels: { team: 'b' } } });
  assert.deepEqual(server.get('Namespace', undefined, 'apps')?.metadata.labels, {
    team: 'b',
    'kubernetes.io/metadata.name': 'apps',
  });
});
