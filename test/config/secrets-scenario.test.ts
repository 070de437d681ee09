/**
 * Issue 35 item 2, "Done when": a key-auth key and an upstream client certificate password read
 * from Vault (the key encrypted, decrypted with the password for mutual TLS to the origin), keys
 * from GCP, Kubernetes and a file beside it, a rotation reaching the running gateway, a viewer's
 * export showing the references — and a grep over the logs, traces and metrics of the whole
 * scenario finding no secret value, no manager credential, no access token.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { bindSecrets } from '../../src/config/secrets/index.js';
import { RelayedSecrets } from '../../src/config/secrets/relayed.js';
import { compileWith } from '../../src/plugins/compile-with.js';
import { silentLogger } from '../../src/core/logger.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { startGcpSecretsServer, type GcpSecretsServer } from '../support/gcp-secrets-server.js';
import { KubeApiServer } from '../support/kube-api-server.js';
import { createTestPki, startOrigin, type Origin, type TestPki } from '../support/origins.js';
import { tempDir } from '../support/temp-dir.js';
import { startVaultServer, type VaultServer } from '../support/vault-server.js';
import { waitFor } from '../support/wait.js';

const VALUES = {
  vault: 'scenario-vault-key-61b0',
  gcp: 'scenario-gcp-key-94d2',
  gcpRotated: 'scenario-gcp-key-rotated-0c7e',
  kubernetes: 'scenario-kube-key-3a58',
  file: 'scenario-file-key-7f14',
  password: 'Key-Passphrase-e2c9-77',
};

const dir = tempDir('switchyard-secrets-scenario-');
let pki: TestPki;
let encryptedKey: string;
let vault: VaultServer;
let gcp: GcpSecretsServer;
let kube: KubeApiServer;
let origin: Origin;
let gcpKey: Record<string, string>;
let vaultToken: string;

function policyYaml(upstreamPort: number, secretFile: string, password: string): string {
  return `
routes:
  - { name: api, match: { path: /api }, policy: api }
policies:
  - name: api
    nodes:
      - { id: in, type: listener }
      - id: auth
        type: key-auth
        config:
          keys:
            - '\${secret:vault:apps/billing#api_key}'
            - '\${secret:gcp:billing#api_key}'
            - '\${secret:kubernetes:shop/billing#api_key}'
            - '\${secret:file:${secretFile}#api_key}'
      - id: up
        type: upstream
        config:
          targets: [{ host: 127.0.0.1, port: ${upstreamPort} }]
          tls: true
          ca_cert_path: ${pki.caCert}
          client_cert_path: ${pki.clientCert}
          client_key_path: ${encryptedKey}
          client_key_password: '${password}'
      - { id: out, type: client }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: up.in }
      - { from: auth.denied, to: out.in }
      - { from: up.success, to: out.in }
`;
}

before(async () => {
  pki = createTestPki();
  encryptedKey = join(dir.path, 'client-encrypted.key');
  execFileSync('openssl', [
    'pkey',
    '-in',
    pki.clientKey,
    '-aes256',
    '-passout',
    `pass:${VALUES.password}`,
    '-out',
    encryptedKey,
  ]);
  assert.match(readFileSync(encryptedKey, 'utf8'), /BEGIN ENCRYPTED PRIVATE KEY/);
  // Mutual TLS: the origin refuses a handshake without a certificate of the test CA, and answers
  // with the certificate's common name.
  origin = await startOrigin(
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`client ${String(peer.subject?.CN)}`);
    },
    {
      name: 'mtls',
      https: {
        key: readFileSync(pki.serverKey),
        cert: readFileSync(pki.serverCert),
        requestCert: true,
        rejectUnauthorized: true,
        ca: readFileSync(pki.caCert),
      },
    },
  );
  vault = await startVaultServer();
  vaultToken = vault.issueToken({ ttl: 3600 });
  vault.put('apps/billing', { api_key: VALUES.vault });
  vault.put('pki/gateway', { key_password: VALUES.password });
  gcp = await startGcpSecretsServer();
  gcpKey = gcp.addServiceAccount('gateway@shop-prod.iam.gserviceaccount.com', 'shop-prod');
  writeFileSync(join(dir.path, 'gcp-key.json'), JSON.stringify(gcpKey));
  gcp.putSecret('shop-prod', 'billing', JSON.stringify({ api_key: VALUES.gcp }));
  kube = await KubeApiServer.start();
  kube.writeKubeconfig(join(dir.path, 'kubeconfig'), 'scenario-kube-bearer');
  kube.apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'billing', namespace: 'shop' },
    data: { api_key: Buffer.from(VALUES.kubernetes).toString('base64') },
  });
  writeFileSync(join(dir.path, 'billing.json'), JSON.stringify({ api_key: VALUES.file }));
});

after(async () => {
  await Promise.all([origin?.close(), vault?.close(), gcp?.close(), kube?.close()]);
  pki?.remove();
  dir.remove();
});

describe('secret references: the whole scenario (issue 35 item 2, Done when)', () => {
  test('upstream client_key_password: a wrong password fails the load naming client_key_path; the password is never in the message', () => {
    const env: NodeJS.ProcessEnv = {};
    const lookup = new RelayedSecrets();
    const refs = [
      '${secret:vault:apps/billing#api_key}',
      '${secret:gcp:billing#api_key}',
      '${secret:kubernetes:shop/billing#api_key}',
      `\${secret:file:${join(dir.path, 'billing.json')}#api_key}`,
    ];
    lookup.set([
      ...refs.map((r) => [r, 'k'] as [string, string]),
      ['${secret:vault:pki/gateway#key_password}', 'Wrong-Pw-1'],
    ]);
    bindSecrets(env, lookup);
    const config = parseGatewayConfig(
      policyYaml(origin.port, join(dir.path, 'billing.json'), '${secret:vault:pki/gateway#key_password}'),
    );
    assert.throws(
      () => compileWith(config, silentLogger, env),
      (err: Error & { issues?: { path: string; message: string }[] }) => {
        const issue = err.issues?.find((i) => i.path.endsWith('client_key_path'));
        assert.ok(issue, JSON.stringify(err.issues ?? err.message));
        assert.match(issue.message, /cannot be decrypted with the key password/);
        assert.ok(!JSON.stringify(err.issues).includes('Wrong-Pw-1'));
        return true;
      },
    );
  });

  test('a running gateway: keys from vault, gcp, kubernetes and file; the client key password from Vault; a rotation; exports keep references; no value in logs, traces or metrics', async () => {
    const [port, adminPort] = [await freePort(), await freePort()];
    const system = join(dir.path, 'system.yaml');
    const gatewayPath = join(dir.path, 'gateway.yaml');
    writeFileSync(
      system,
      `listener: { bind: 127.0.0.1, port: ${port} }
timeouts: { shutdown_timeout_seconds: 2 }
logging: { level: debug }
debug: { enabled: true, trace_all: true }
admin:
  bind: 127.0.0.1
  port: ${adminPort}
  username: admin
  password: Admin-Pw-123456789
  users: [{ username: viewer, password: Viewer-Pw-123456, role: viewer }]
secrets:
  vault: { address: '${vault.url}', token: '${vaultToken}', refresh_s: 60 }
  gcp: { endpoint: '${gcp.url}', credentials_file: '${join(dir.path, 'gcp-key.json')}', refresh_s: 1 }
  kubernetes: { kubeconfig: '${join(dir.path, 'kubeconfig')}', refresh_s: 60 }
  file: { dirs: ['${dir.path}'], refresh_s: 60 }
`,
    );
    writeFileSync(
      gatewayPath,
      policyYaml(origin.port, join(dir.path, 'billing.json'), '${secret:vault:pki/gateway#key_password}'),
    );
    const proc: GatewayProcess = spawnGateway(['--system-config', system, '--gateway-config', gatewayPath], {
      SWITCHYARD_FROM_SOURCE: '1',
    });
    try {
      const data = `http://127.0.0.1:${port}`;
      await Promise.race([
        waitForHttp(`${data}/api`, 90_000),
        proc.exited.then((code) => assert.fail(`the gateway exited (${code}):\n${proc.output()}`)),
      ]);
      const call = async (key: string) => {
        const res = await fetch(`${data}/api`, { headers: { 'x-api-key': key } });
        return `${res.status} ${await res.text()}`;
      };
      for (const key of [VALUES.vault, VALUES.gcp, VALUES.kubernetes, VALUES.file])
        assert.equal(await call(key), '200 client switchyard-client', proc.output());
      assert.match(await call('${secret:vault:apps/billing#api_key}'), /^401 /);
      assert.ok(origin.connections > 0, 'mutual TLS with the decrypted key');

      gcp.putSecret('shop-prod', 'billing', JSON.stringify({ api_key: VALUES.gcpRotated }));
      await waitFor(async () => (await call(VALUES.gcpRotated)).startsWith('200 '), {
        timeoutMs: 20_000,
        what: 'the rotated GCP key',
      });
      assert.match(await call(VALUES.gcp), /^401 /);
      // The policy compiled again with the rotation: the client key still decrypts.
      assert.equal(await call(VALUES.vault), '200 client switchyard-client');

      const admin = `http://127.0.0.1:${adminPort}`;
      const viewer = `Basic ${Buffer.from('viewer:Viewer-Pw-123456').toString('base64')}`;
      const adminAuth = `Basic ${Buffer.from('admin:Admin-Pw-123456789').toString('base64')}`;
      const exported = await (
        await fetch(`${admin}/api/config/export`, { headers: { authorization: viewer } })
      ).text();
      assert.ok(exported.includes('${secret:vault:pki/gateway#key_password}'), exported);
      assert.ok(exported.includes('${secret:gcp:billing#api_key}'), exported);
      const adminExport = await (
        await fetch(`${admin}/api/config/export`, { headers: { authorization: adminAuth } })
      ).text();
      const list = (await (
        await fetch(`${admin}/api/debug/traces?limit=100`, { headers: { authorization: adminAuth } })
      ).json()) as { traces: { id: string }[] };
      assert.ok(list.traces.length >= 6, 'the requests were traced');
      const traces = await Promise.all(
        list.traces.map(async (t) =>
          (
            await fetch(`${admin}/api/debug/traces/${t.id}`, { headers: { authorization: adminAuth } })
          ).text(),
        ),
      );
      const metrics = await (
        await fetch(`${admin}/metrics`, { headers: { authorization: adminAuth } })
      ).text();
      await proc.stop();
      const privateKeyLine = gcpKey.private_key!.split('\n')[5]!;
      const forbidden: [string, string][] = [
        ...Object.entries(VALUES),
        ['vault token', vaultToken],
        ...gcp.issued.map((t, i): [string, string] => [`gcp access token ${i}`, t]),
        ['gcp private key', privateKeyLine],
      ];
      assert.ok(gcp.issued.length > 0);
      for (const [what, text] of [
        ['viewer export', exported],
        ['admin export', adminExport],
        ['metrics', metrics],
        ['traces', JSON.stringify(list) + traces.join('\n')],
        ['logs', proc.output()],
      ] as const)
        for (const [name, value] of forbidden) assert.ok(!text.includes(value), `${what} holds ${name}`);
    } finally {
      await proc.stop();
    }
  });
});
