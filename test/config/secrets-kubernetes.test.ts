/**
 * Issue 35 item 2, `kubernetes`: `${secret:kubernetes:ns/name#key}` is a key of a Secret, read with
 * the Gateway API source's kubeconfig resolution (src/kubernetes/source.ts loadKubeConfig), against
 * the test API server (test/support/kube-api-server.ts).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseSystemConfig } from '../../src/config/system.js';
import { bindSecrets, createSecretStore } from '../../src/config/secrets/index.js';
import { silentLogger } from '../../src/core/logger.js';
import { KubeApiServer, type KubeObject } from '../support/kube-api-server.js';
import { tempDir } from '../support/temp-dir.js';

const dir = tempDir('switchyard-secrets-kubernetes-');
after(() => dir.remove());

function kubeStore(extra: string, env: NodeJS.ProcessEnv = {}) {
  const system = parseSystemConfig(`secrets:\n  kubernetes: { ${extra} }\n`, {});
  const store = createSecretStore(system.secrets, silentLogger, env)!;
  bindSecrets(env, store);
  return store;
}

function secret(namespace: string, name: string, data: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
}

function problem(store: ReturnType<typeof kubeStore>, text: string): string {
  const m = /^\$\{secret:kubernetes:([^#}]+)(?:#([^}]+))?\}$/.exec(text)!;
  return store.problem({ text, manager: 'kubernetes', path: m[1]!, field: m[2] }) ?? '';
}

describe('secret references: the kubernetes manager against a Kubernetes API server', () => {
  let api: KubeApiServer;
  let kubeconfig: string;
  before(async () => {
    api = await KubeApiServer.start();
    kubeconfig = api.writeKubeconfig(join(dir.path, 'kubeconfig'), 'file-token');
    api.apply(
      secret('shop', 'billing', { api_key: 'kube-key-9c1e', 'tls.key-password': 'pw: with # chars' }),
    );
  });
  after(() => api.close());

  test('a key of a Secret, base64-decoded; a rotation is read at the next round', async () => {
    const store = kubeStore(`kubeconfig: '${kubeconfig}'`);
    const key = '${secret:kubernetes:shop/billing#api_key}';
    const password = '${secret:kubernetes:shop/billing#tls.key-password}';
    await store.prepare(`${key} ${password}`);
    assert.equal(store.value(key), 'kube-key-9c1e');
    assert.equal(store.value(password), 'pw: with # chars');
    const gets = api.requests.filter(
      (r) => r.method === 'GET' && r.path === '/api/v1/namespaces/shop/secrets/billing',
    );
    assert.equal(gets.length, 1, 'one read per Secret, however many keys are used');
    assert.equal(gets[0]?.token, 'file-token', 'the configured kubeconfig is used');
    api.apply(
      secret('shop', 'billing', { api_key: 'kube-key-rotated', 'tls.key-password': 'pw: with # chars' }),
    );
    assert.deepEqual(await store.refresh('kubernetes'), [key]);
    assert.equal(store.value(key), 'kube-key-rotated');
    store.close();
  });

  test('without kubeconfig, $KUBECONFIG is read (the resolution of src/kubernetes)', async () => {
    const envConfig = api.writeKubeconfig(join(dir.path, 'env-kubeconfig'), 'env-token');
    const store = kubeStore('');
    // The client loads at the first read, with loadFromDefault reading process.env.
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = envConfig;
    try {
      await store.prepare('${secret:kubernetes:shop/billing#api_key}');
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
    assert.ok(store.value('${secret:kubernetes:shop/billing#api_key}') !== undefined);
    assert.ok(api.requests.some((r) => r.path.endsWith('/secrets/billing') && r.token === 'env-token'));
    store.close();
  });

  test('a missing Secret, a missing key, a path that is not ns/name and an API server that is down are named, never a value', async () => {
    const store = kubeStore(`kubeconfig: '${kubeconfig}'`);
    const refs = {
      absent: '${secret:kubernetes:shop/absent#api_key}',
      noKey: '${secret:kubernetes:shop/billing#nope}',
      whole: '${secret:kubernetes:shop/billing}',
      badPath: '${secret:kubernetes:billing#api_key}',
    };
    await store.prepare(Object.values(refs).join(' '));
    assert.match(problem(store, refs.absent), /kubernetes: no Secret shop\/absent/);
    assert.match(problem(store, refs.noKey), /has no field 'nope'/);
    assert.match(problem(store, refs.whole), /holds several fields: name one with #field/);
    assert.match(problem(store, refs.badPath), /kubernetes: billing is not NAMESPACE\/NAME/);
    for (const text of Object.values(refs)) assert.ok(!problem(store, text).includes('kube-key'));
    store.close();

    const dead = await KubeApiServer.start();
    const deadConfig = dead.writeKubeconfig(join(dir.path, 'dead-kubeconfig'));
    await dead.close();
    const down = kubeStore(`kubeconfig: '${deadConfig}', timeout_ms: 3000`);
    await down.prepare(refs.absent);
    assert.match(
      problem(down, refs.absent),
      /kubernetes: (reading Secret shop\/absent: ECONNREFUSED|no answer within)/,
    );
    down.close();
  });
});
