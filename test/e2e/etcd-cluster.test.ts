import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startAdminServer, type AdminServer } from '../../src/admin/server.js';
import { EtcdConfigSource } from '../../src/config/etcd-source.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { Gateway } from '../../src/gateway.js';
import { basic, BASE_YAML, mockPolicy, PASSWORD, USER } from '../admin/harness.js';
import { skipWithoutEtcd, startEtcd, type EtcdServer } from '../support/etcd.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway } from '../support/gateway-process.js';
import { capturingLogger } from '../support/plugin-env.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const skip = skipWithoutEtcd();
let etcd: EtcdServer;
before(async () => {
  if (skip === false) etcd = await startEtcd();
});
after(async () => etcd?.stop());

interface Member {
  gateway: Gateway;
  data: string;
  admin: AdminServer;
  records: Record<string, unknown>[];
  stop(): Promise<void>;
}

/** One gateway of the cluster: etcd source, data plane and admin on loopback port 0. */
async function member(prefix: string, gatewayPath?: string, server: EtcdServer = etcd): Promise<Member> {
  const system = parseSystemConfig(
    [
      'listener: { bind: 127.0.0.1, port: 0 }',
      'timeouts: { shutdown_timeout_seconds: 5 }',
      `admin: { bind: 127.0.0.1, port: 0, username: ${USER}, password: "${PASSWORD}" }`,
      `config: { source: kvcluster, etcd: { endpoints: ["${server.url}"], prefix: ${prefix}, timeout_ms: 1000 } }`,
    ].join('\n'),
    {},
  );
  const { logger, records } = capturingLogger();
  const etcdConfig = system.config.etcd;
  assert.ok(etcdConfig);
  const gateway = await Gateway.createFromEtcd({
    system,
    logger,
    etcd: new EtcdConfigSource(etcdConfig, logger),
    ...(gatewayPath === undefined ? {} : { gatewayPath }),
  });
  const address = await gateway.listen();
  const admin = await startAdminServer(gateway, system.admin!, logger, { print: () => undefined });
  return {
    gateway,
    data: `http://127.0.0.1:${address.port}`,
    admin,
    records,
    stop: async () => {
      await Promise.all([admin.close(), gateway.shutdown()]);
    },
  };
}

const body = async (url: string): Promise<string> => {
  const res = await fetch(url);
  return `${res.status} ${await res.text()}`;
};

test(
  'etcd cluster: the first gateway seeds etcd, an admin write on one converges on the other, a bad document is rejected everywhere',
  { skip },
  async () => {
    const dir = tempDir();
    const seedFile = join(dir.path, 'gateway.yaml');
    writeFileSync(seedFile, BASE_YAML);
    const a = await member('/cluster-1', seedFile);
    const b = await member('/cluster-1');
    try {
      assert.equal(await body(`${b.data}/hello`), '200 hello');
      assert.deepEqual(await etcd.keys('/cluster-1/'), [
        '/cluster-1/policies/hello-policy',
        '/cluster-1/routes/hello',
      ]);

      const put = await fetch(`${a.admin.url}/api/policies/bye-policy`, {
        method: 'PUT',
        headers: { authorization: basic(), 'content-type': 'application/json' },
        body: JSON.stringify(mockPolicy('bye-policy', 'bye')),
      });
      assert.ok(put.status < 300, `${put.status} ${await put.text()}`);
      const route = await fetch(`${a.admin.url}/api/routes`, {
        method: 'POST',
        headers: { authorization: basic(), 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'bye', match: { path: '/bye' }, policy: 'bye-policy' }),
      });
      assert.ok(route.status < 300, `${route.status} ${await route.text()}`);
      assert.equal(await body(`${a.data}/bye`), '200 bye');
      await waitFor(async () => (await body(`${b.data}/bye`)) === '200 bye', {
        what: 'gateway B to serve /bye',
      });

      // A document no gateway can compile: both keep their running configuration.
      await etcd.put(
        '/cluster-1/routes/broken',
        JSON.stringify({ name: 'broken', match: { path: '/x' }, policy: 'missing' }),
      );
      for (const m of [a, b]) {
        await waitFor(
          () => m.records.some((r) => r['msg'] === 'configuration rejected; the previous one keeps serving'),
          {
            what: 'the bad document to be rejected',
          },
        );
        assert.equal(await body(`${m.data}/bye`), '200 bye');
      }
      // Fixing it in etcd converges both again.
      await etcd.put(
        '/cluster-1/routes/broken',
        JSON.stringify({ name: 'broken', match: { path: '/x' }, policy: 'hello-policy' }),
      );
      for (const m of [a, b])
        await waitFor(async () => (await body(`${m.data}/x`)) === '200 hello', { what: '/x' });
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      dir.remove();
    }
  },
);

test('etcd cluster: an admin write the compiler rejects never reaches etcd', { skip }, async () => {
  const a = await member('/cluster-2');
  try {
    // The route's policy does not exist: rejected before etcd is touched.
    const bad = await fetch(`${a.admin.url}/api/routes`, {
      method: 'POST',
      headers: { authorization: basic(), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'r', match: { path: '/r' }, policy: 'nope' }),
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(await etcd.keys('/cluster-2/'), []);
  } finally {
    await a.stop();
  }
});

test('etcd cluster: the CLI exits 1 when etcd cannot be reached', { skip }, async () => {
  const dir = tempDir();
  try {
    const sys = join(dir.path, 'system.yaml');
    const gw = join(dir.path, 'gateway.yaml');
    writeFileSync(
      sys,
      `listener: { bind: 127.0.0.1, port: 0 }\nconfig: { source: etcd, etcd: { endpoints: ["http://127.0.0.1:${await freePort()}"], timeout_ms: 500 } }\n`,
    );
    writeFileSync(gw, BASE_YAML);
    const p = spawnGateway(['--system-config', sys, '--gateway-config', gw]);
    assert.equal(await p.exited, 1);
    assert.match(p.output(), /cannot load the configuration from etcd: no etcd endpoint answered/);
  } finally {
    dir.remove();
  }
});

test(
  'etcd cluster: a write etcd cannot store answers 503 and is not applied; the gateway keeps serving',
  { skip },
  async () => {
    const own = await startEtcd();
    const dir = tempDir();
    const seedFile = join(dir.path, 'gateway.yaml');
    writeFileSync(seedFile, BASE_YAML);
    const a = await member('/alone', seedFile, own);
    try {
      await own.stop();
      const res = await fetch(`${a.admin.url}/api/policies/bye-policy`, {
        method: 'PUT',
        headers: { authorization: basic(), 'content-type': 'application/json' },
        body: JSON.stringify(mockPolicy('bye-policy', 'bye')),
      });
      assert.equal(res.status, 503);
      assert.equal(((await res.json()) as { error: string }).error, 'config_store_unavailable');
      assert.equal(a.gateway.runtime.config.policies.length, 1);
      assert.equal(await body(`${a.data}/hello`), '200 hello');
    } finally {
      await a.stop();
      dir.remove();
    }
  },
);
