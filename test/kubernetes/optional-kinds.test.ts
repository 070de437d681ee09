// Route kinds whose CRDs may be absent (GRPCRoute, TLSRoute, TCPRoute, UDPRoute: issue 32): an
// informer that finds none of its versions served counts as listed and empty, so the gateway
// becomes ready; one served in a later version of its list is read there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { silentLogger } from '../../src/core/logger.js';
import { Informer } from '../../src/kubernetes/informer.js';
import type { KObject } from '../../src/kubernetes/types.js';
import { KubeApiServer } from '../support/kube-api-server.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

test('an optional kind no version of which is served counts as listed (empty); a later version is used when served', async (t) => {
  const api = await KubeApiServer.start();
  const dir = tempDir('switchyard-k8s-optional-');
  t.after(async () => {
    await api.close();
    dir.remove();
  });
  const kc = new KubeConfig();
  kc.loadFromFile(api.writeKubeconfig(join(dir.path, 'kubeconfig')));
  const GW = 'gateway.networking.k8s.io';
  api.applyYaml(`
apiVersion: ${GW}/v1alpha2
kind: TLSRoute
metadata: { name: r, namespace: apps }
spec: { rules: [] }
`);
  let changes = 0;
  const absent = new Informer<KObject>(
    kc,
    {
      apiVersion: `${GW}/v9`,
      kind: 'NoSuchRoute',
      namespace: undefined,
      path: `/apis/${GW}/v9/nosuchroutes`,
      versions: [
        { apiVersion: `${GW}/v9`, path: `/apis/${GW}/v9/nosuchroutes` },
        { apiVersion: `${GW}/v1`, path: `/apis/${GW}/v1/nosuchroutes` },
      ],
    },
    silentLogger,
    () => changes++,
  );
  // TLSRoute: v9 is not served, v1alpha2 is.
  const later = new Informer<KObject>(
    kc,
    {
      apiVersion: `${GW}/v9`,
      kind: 'TLSRoute',
      namespace: undefined,
      path: `/apis/${GW}/v9/tlsroutes`,
      versions: [
        { apiVersion: `${GW}/v9`, path: `/apis/${GW}/v9/tlsroutes` },
        { apiVersion: `${GW}/v1alpha2`, path: `/apis/${GW}/v1alpha2/tlsroutes` },
      ],
    },
    silentLogger,
    () => undefined,
  );
  t.after(() => {
    absent.stop();
    later.stop();
  });
  absent.start();
  later.start();
  await waitFor(() => absent.listed && later.listed, { timeoutMs: 10_000, what: 'both listed' });
  assert.deepEqual(absent.items, []);
  assert.ok(changes >= 1, 'the first (empty) list is reported, so the gateway can become ready');
  assert.equal(later.apiVersion, `${GW}/v1alpha2`);
  assert.deepEqual(
    later.items.map((o) => o.metadata.name),
    ['r'],
  );
  // The watch runs on the version found: a change arrives.
  api.applyYaml(`
apiVersion: ${GW}/v1alpha2
kind: TLSRoute
metadata: { name: r2, namespace: apps }
spec: { rules: [] }
`);
  await waitFor(() => later.items.length === 2, { timeoutMs: 10_000, what: 'the watched change' });
});
