import assert from 'node:assert/strict';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EtcdConfigSource } from '../../src/config/etcd-source.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { silentLogger } from '../../src/core/logger.js';
import { createAuthority } from '../support/certs.js';
import { skipWithoutEtcd, startEtcd, type EtcdServer } from '../support/etcd.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

/**
 * `config.etcd` over TLS (docs/etcd.md#tls): an etcd started with
 * `--cert-file --key-file --trusted-ca-file --client-cert-auth` on a random
 * loopback port, the gateway a real process.
 */
const skip = skipWithoutEtcd();

const policy = (text: string) => ({
  name: 'p',
  nodes: [
    { id: 'in', type: 'listener' },
    { id: 'm', type: 'mocking', config: { response_example: text, content_type: 'text/plain' } },
    { id: 'out', type: 'client' },
  ],
  edges: [
    { from: 'in.out', to: 'm.in' },
    { from: 'm.success', to: 'out.in' },
  ],
});

describe('etcd over TLS: https endpoints, a private CA and client certificates', { skip }, () => {
  const dir = tempDir('switchyard-etcd-tls-');
  const serverCa = createAuthority(dir.path, 'etcd-ca');
  const strangerCa = createAuthority(dir.path, 'stranger-ca');
  // etcd's gRPC gateway dials etcd itself with the server pair as its client certificate.
  const server = serverCa.issue('etcd', { dns: ['localhost'], ips: ['127.0.0.1'], alsoClient: true });
  const client = serverCa.issue('gateway', { client: true });
  let etcd: EtcdServer;

  before(async () => {
    etcd = await startEtcd({
      tls: {
        cert: server.cert,
        key: server.key,
        clientCa: serverCa.cert,
        ca: serverCa.cert,
        clientCert: client.cert,
        clientKey: client.key,
      },
    });
    await etcd.put('/tls/routes/r', JSON.stringify({ name: 'r', match: { path: '/hello' }, policy: 'p' }));
    await etcd.put('/tls/policies/p', JSON.stringify(policy('hello over tls')));
  });

  after(async () => {
    await etcd?.stop();
    dir.remove();
  });

  /** Writes system.yaml with `tls` as the `config.etcd.tls` flow mapping and spawns the gateway. */
  const gateway = async (tls: string) => {
    const port = await freePort();
    const sys = join(dir.path, `system-${port}.yaml`);
    writeFileSync(
      sys,
      [
        `listener: { bind: 127.0.0.1, port: ${port} }`,
        'timeouts: { shutdown_timeout_seconds: 5 }',
        `config: { source: etcd, etcd: { endpoints: ["${etcd.url}"], prefix: /tls, timeout_ms: 10000, tls: ${tls} } }`,
        '',
      ].join('\n'),
    );
    return { port, process: spawnGateway(['--system-config', sys]) };
  };

  test('etcd TLS: with the CA and a client certificate the gateway loads its configuration and follows a watch update', async () => {
    const { port, process: gw } = await gateway(
      `{ ca_file: '${serverCa.cert}', cert_file: '${client.cert}', key_file: '${client.key}' }`,
    );
    try {
      await waitForHttp(`http://127.0.0.1:${port}/hello`, 60000).catch((err: Error) => {
        throw new Error(`${err.message}\n${gw.output()}`);
      });
      const first = await fetch(`http://127.0.0.1:${port}/hello`);
      assert.equal(`${first.status} ${await first.text()}`, '200 hello over tls', gw.output());
      await etcd.put('/tls/policies/p', JSON.stringify(policy('updated through the watch')));
      await waitFor(
        async () =>
          (await (await fetch(`http://127.0.0.1:${port}/hello`)).text()) === 'updated through the watch',
        { timeoutMs: 30000, what: 'the watched update being applied' },
      );
    } finally {
      await etcd.put('/tls/policies/p', JSON.stringify(policy('hello over tls')));
      assert.equal(await gw.stop(), 0, gw.output());
    }
  });

  test('etcd TLS: a CA that did not sign etcd certificate stops the start with an error naming config.etcd.tls.ca_file', async () => {
    const { process: gw } = await gateway(
      `{ ca_file: '${strangerCa.cert}', cert_file: '${client.cert}', key_file: '${client.key}' }`,
    );
    const code = await gw.exited;
    assert.equal(code, 1, gw.output());
    assert.match(gw.output(), /cannot load the configuration from etcd: .*config\.etcd\.tls\.ca_file/);
  });

  test('etcd TLS: without a client certificate etcd refuses and the start error says a client certificate is required', async () => {
    const { process: gw } = await gateway(`{ ca_file: '${serverCa.cert}' }`);
    const code = await gw.exited;
    assert.equal(code, 1, gw.output());
    assert.match(
      gw.output(),
      /cannot load the configuration from etcd: .*client certificate.*config\.etcd\.tls\.cert_file/,
    );
  });

  test('etcd TLS: verify false accepts an untrusted etcd certificate', async () => {
    const source = new EtcdConfigSource(
      {
        endpoints: [etcd.url],
        prefix: '/tls',
        timeout_ms: 3000,
        tls: { verify: false, cert_file: client.cert, key_file: client.key },
      },
      silentLogger,
    );
    const loaded = await source.load();
    assert.deepEqual(
      loaded.routes.map((r) => r.name),
      ['r'],
    );
  });

  test('etcd TLS: a client pair replaced on disk is presented by the next connection, no restart needed', async () => {
    const cert = join(dir.path, 'live.crt');
    const key = join(dir.path, 'live.key');
    const stranger = strangerCa.issue('stranger', { client: true });
    copyFileSync(stranger.cert, cert);
    copyFileSync(stranger.key, key);
    const source = new EtcdConfigSource(
      {
        endpoints: [etcd.url],
        prefix: '/tls',
        timeout_ms: 3000,
        tls: { verify: true, ca_file: serverCa.cert, cert_file: cert, key_file: key },
      },
      silentLogger,
    );
    await assert.rejects(source.load(), /config\.etcd\.tls\.cert_file/);
    writeFileSync(key, client.keyPem);
    writeFileSync(cert, client.certPem);
    await waitFor(
      async () => {
        try {
          return (await source.load()).routes.length === 1;
        } catch {
          return false;
        }
      },
      { timeoutMs: 30000, what: 'etcd accepting the replaced pair' },
    );
  });

  test('etcd TLS: unreadable or unpaired files are refused before any request, naming the key', () => {
    const make = (tls: Record<string, unknown>) => () =>
      new EtcdConfigSource(
        { endpoints: [etcd.url], prefix: '/tls', timeout_ms: 3000, tls: { verify: true, ...tls } },
        silentLogger,
      );
    const path = (key: string) => (err: unknown) =>
      err instanceof ConfigRejected && err.issues[0]?.path === key;
    assert.throws(make({ ca_file: join(dir.path, 'absent.pem') }), path('config.etcd.tls.ca_file'));
    assert.throws(make({ cert_file: client.cert }), path('config.etcd.tls.key_file'));
    assert.throws(make({ cert_file: client.cert, key_file: server.key }), path('config.etcd.tls.key_file'));
    assert.throws(
      () =>
        parseSystemConfig('config: { source: etcd, etcd: { endpoints: [x], tls: { verfy: false } } }', {}),
      /verfy/,
    );
    assert.throws(
      () =>
        parseSystemConfig(
          `config: { source: etcd, etcd: { endpoints: ["${etcd.url}"], tls: { ca_file: '${join(dir.path, 'absent.pem')}' } } }`,
          {},
        ),
      (err: unknown) => err instanceof ConfigRejected && err.issues[0]?.path === 'config.etcd.tls.ca_file',
      'system.yaml itself is rejected, so the error carries the line of the key',
    );
    const defaults = parseSystemConfig(
      'config: { source: etcd, etcd: { endpoints: ["https://e:2379"] } }',
      {},
    );
    assert.deepEqual(defaults.config.etcd?.tls, { verify: true });
  });
});
