import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { VaultSecretManager } from '../../src/config/secrets/vault.js';
import { parseSystemConfig } from '../../src/config/system.js';
import type { VaultManagerConfig } from '../../src/config/secrets/schema.js';
import { silentLogger } from '../../src/core/logger.js';
import { createAuthority } from '../support/certs.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { startVaultServer, type VaultServer } from '../support/vault-server.js';
import { waitFor } from '../support/wait.js';

const dir = tempDir('switchyard-secrets-vault-');
after(() => dir.remove());

const KEY_1 = 'vault-key-one-7f3a9c';
const KEY_2 = 'vault-key-two-2b8d41';

const gatewayYaml = `
routes:
  - { name: api, match: { path: /api }, policy: api }
policies:
  - name: api
    nodes:
      - { id: in, type: listener }
      - id: auth
        type: key-auth
        config: { keys: ['\${secret:vault:apps/billing#api_key}'] }
      - { id: m, type: mocking, config: { response_example: ok, content_type: text/plain } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: m.in }
      - { from: auth.denied, to: out.in }
      - { from: m.success, to: out.in }
`;

/** The manager's config as system.yaml gives it (schema defaults applied). */
function vaultConfig(yaml: string): VaultManagerConfig {
  return parseSystemConfig(`secrets:\n  vault: ${yaml}\n`, {}).secrets!.vault!;
}

describe('secret references: the vault manager against a Vault HTTP API', () => {
  let vault: VaultServer;
  before(async () => {
    vault = await startVaultServer();
  });
  after(() => vault.close());

  test('reads KV v2 data.data[FIELD] with X-Vault-Token; Vault errors are named, values never', async () => {
    const token = vault.issueToken();
    vault.put('apps/unit', { api_key: 'unit-value-123', n: 7 });
    const manager = new VaultSecretManager(
      vaultConfig(`{ address: '${vault.url}', token: '${token}' }`),
      silentLogger,
    );
    assert.deepEqual(await manager.load('apps/unit'), { api_key: 'unit-value-123', n: 7 });
    const read = vault.requests.find((r) => r.path === '/v1/secret/data/apps/unit');
    assert.equal(read?.token, token);
    await assert.rejects(manager.load('apps/none'), /vault: no secret at secret\/apps\/none/);
    const refused = new VaultSecretManager(
      vaultConfig(`{ address: '${vault.url}', token: 'hvs.wrong' }`),
      silentLogger,
    );
    await assert.rejects(refused.load('apps/unit'), /403 permission denied/);
    manager.close();
  });

  test('a token is renewed with renew-self before its TTL runs out (lookup-self gives the TTL)', async () => {
    const token = vault.issueToken({ ttl: 3, renewable: true });
    vault.put('apps/renew', { v: 'renewed-value-1' });
    const manager = new VaultSecretManager(
      vaultConfig(`{ address: '${vault.url}', token: '${token}' }`),
      silentLogger,
    );
    const start = Date.now();
    assert.deepEqual(await manager.load('apps/renew'), { v: 'renewed-value-1' });
    assert.ok(vault.requests.some((r) => r.path === '/v1/auth/token/lookup-self' && r.token === token));
    await waitFor(
      () => vault.requests.some((r) => r.path === '/v1/auth/token/renew-self' && r.token === token),
      {
        timeoutMs: 10000,
        what: 'renew-self',
      },
    );
    // Past the original TTL the token still reads: the renewal extended it.
    await waitFor(() => Date.now() - start > 3500, { timeoutMs: 10000, what: 'the original TTL' });
    assert.deepEqual(await manager.load('apps/renew'), { v: 'renewed-value-1' });
    manager.close();
  });

  test('AppRole: logs in, renews, and logs in again only when renewal fails', async () => {
    vault.addAppRole('role-billing', 'secret-id-billing', { ttl: 3 });
    vault.put('apps/approle', { v: 'approle-value' });
    const manager = new VaultSecretManager(
      vaultConfig(
        `{ address: '${vault.url}', approle: { role_id: role-billing, secret_id: secret-id-billing } }`,
      ),
      silentLogger,
    );
    const logins = () => vault.requests.filter((r) => r.path === '/v1/auth/approle/login').length;
    const before = logins();
    assert.deepEqual(await manager.load('apps/approle'), { v: 'approle-value' });
    assert.equal(logins(), before + 1);
    const renewals = () => vault.requests.filter((r) => r.path === '/v1/auth/token/renew-self').length;
    const renewed = renewals();
    await waitFor(() => renewals() > renewed, { timeoutMs: 10000, what: 'an AppRole token renewal' });
    assert.equal(logins(), before + 1, 'a successful renewal does not log in again');
    vault.refuseRenewals(true);
    await waitFor(() => logins() === before + 2, {
      timeoutMs: 10000,
      what: 'a new login after a refused renewal',
    });
    vault.refuseRenewals(false);
    assert.deepEqual(await manager.load('apps/approle'), { v: 'approle-value' });
    const wrong = new VaultSecretManager(
      vaultConfig(`{ address: '${vault.url}', approle: { role_id: role-billing, secret_id: nope } }`),
      silentLogger,
    );
    await assert.rejects(wrong.load('apps/approle'), /approle login refused: 400 invalid role or secret ID/);
    manager.close();
  });

  test('kubernetes auth (issue 35 item 2): the JWT of token_path logs in; a rotated token file is read at the next login', async () => {
    const tokenPath = join(dir.path, 'sa-token');
    writeFileSync(tokenPath, 'eyJhbGciOiJSUzI1NiJ9.sa-one.sig\n');
    vault.addKubernetesRole('switchyard', ['eyJhbGciOiJSUzI1NiJ9.sa-one.sig'], { ttl: 3600 });
    vault.put('apps/kube', { v: 'kube-auth-value' });
    const config = vaultConfig(
      `{ address: '${vault.url}', kubernetes: { role: switchyard, token_path: '${tokenPath}' } }`,
    );
    assert.equal(config.kubernetes?.mount, 'kubernetes', 'the mount defaults to kubernetes');
    const manager = new VaultSecretManager(config, silentLogger);
    assert.deepEqual(await manager.load('apps/kube'), { v: 'kube-auth-value' });
    assert.deepEqual(vault.kubernetesLogins.at(-1), {
      role: 'switchyard',
      jwt: 'eyJhbGciOiJSUzI1NiJ9.sa-one.sig',
      accepted: true,
    });
    assert.ok(vault.requests.some((r) => r.method === 'POST' && r.path === '/v1/auth/kubernetes/login'));
    // The kubelet rotates the projected token; Vault stops accepting the old one and the token is revoked.
    writeFileSync(tokenPath, 'eyJhbGciOiJSUzI1NiJ9.sa-two.sig\n');
    vault.addKubernetesRole('switchyard', ['eyJhbGciOiJSUzI1NiJ9.sa-two.sig'], { ttl: 3600 });
    for (const r of vault.requests.filter((q) => q.path === '/v1/secret/data/apps/kube'))
      if (r.token !== undefined) vault.revoke(r.token);
    assert.deepEqual(await manager.load('apps/kube'), { v: 'kube-auth-value' });
    assert.equal(vault.kubernetesLogins.at(-1)?.jwt, 'eyJhbGciOiJSUzI1NiJ9.sa-two.sig');
    manager.close();

    const wrongRole = new VaultSecretManager(
      vaultConfig(`{ address: '${vault.url}', kubernetes: { role: other, token_path: '${tokenPath}' } }`),
      silentLogger,
    );
    await assert.rejects(
      wrongRole.load('apps/kube'),
      /kubernetes login refused: 400 invalid role name "other"/,
    );
    const noFile = new VaultSecretManager(
      vaultConfig(
        `{ address: '${vault.url}', kubernetes: { role: switchyard, token_path: '${join(dir.path, 'none')}' } }`,
      ),
      silentLogger,
    );
    await assert.rejects(noFile.load('apps/kube'), /cannot read kubernetes\.token_path .*: ENOENT/);
    assert.throws(
      () =>
        new VaultSecretManager(
          vaultConfig(`{ address: '${vault.url}', token: t, kubernetes: { role: switchyard } }`),
          silentLogger,
        ),
      /needs one of token, approle or kubernetes/,
    );
  });

  test('tls.ca_file: the server certificate is verified against the given CA', async () => {
    const ca = createAuthority(dir.path, 'vault-ca');
    const leaf = ca.issue('vault', { ips: ['127.0.0.1'] });
    const secure = await startVaultServer({ tls: { cert: leaf.certPem, key: leaf.keyPem } });
    try {
      const token = secure.issueToken();
      secure.put('apps/tls', { v: 'tls-value' });
      const trusted = new VaultSecretManager(
        vaultConfig(`{ address: '${secure.url}', token: '${token}', tls: { ca_file: '${ca.cert}' } }`),
        silentLogger,
      );
      assert.deepEqual(await trusted.load('apps/tls'), { v: 'tls-value' });
      const untrusted = new VaultSecretManager(
        vaultConfig(`{ address: '${secure.url}', token: '${token}' }`),
        silentLogger,
      );
      await assert.rejects(
        untrusted.load('apps/tls'),
        /vault: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|DEPTH_ZERO)/,
      );
    } finally {
      await secure.close();
    }
  });

  test('the running gateway: a key-auth key from Vault, rotated within refresh_s, Vault down keeps it, exports show the reference, no value in logs or metrics', async () => {
    const token = vault.issueToken({ ttl: 3600 });
    vault.put('apps/billing', { api_key: KEY_1 });
    const [port, adminPort] = [await freePort(), await freePort()];
    const system = join(dir.path, 'system.yaml');
    const gateway = join(dir.path, 'gateway.yaml');
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
  vault: { address: '${vault.url}', token: '${token}', refresh_s: 1 }
`,
    );
    writeFileSync(gateway, gatewayYaml);
    const proc: GatewayProcess = spawnGateway(['--system-config', system, '--gateway-config', gateway], {
      SWITCHYARD_FROM_SOURCE: '1',
    });
    try {
      const data = `http://127.0.0.1:${port}`;
      await waitForHttp(`${data}/api`, 60000);
      const call = (key: string) => fetch(`${data}/api`, { headers: { 'x-api-key': key } });
      assert.equal((await call(KEY_1)).status, 200, proc.output());
      assert.equal((await call('${secret:vault:apps/billing#api_key}')).status, 401);

      vault.put('apps/billing', { api_key: KEY_2 });
      const rotated = Date.now();
      await waitFor(async () => (await call(KEY_2)).status === 200, {
        timeoutMs: 10000,
        what: 'the rotated key',
      });
      // refresh_s is 1: the new value arrives within a round (generous bound for a loaded machine).
      assert.ok(Date.now() - rotated < 8000);
      assert.equal((await call(KEY_1)).status, 401);

      vault.seal();
      const sealedAt = Date.now();
      const failures = () =>
        proc
          .output()
          .split('\n')
          .filter((l) => l.includes('cannot read; the last values are kept'));
      await waitFor(() => failures().length >= 3, { timeoutMs: 15000, what: 'three failing rounds' });
      const elapsed = (Date.now() - sealedAt) / 1000;
      assert.ok(failures().length <= Math.ceil(elapsed) + 1, `${failures().length} lines in ${elapsed} s`);
      assert.match(failures()[0] as string, /503 Vault is sealed/);
      assert.equal((await call(KEY_2)).status, 200, 'the last value is kept while Vault is down');
      vault.unseal();
      await waitFor(() => proc.output().includes('secret manager: reads again'), {
        timeoutMs: 10000,
        what: 'recovery',
      });

      const admin = `http://127.0.0.1:${adminPort}`;
      const viewer = `Basic ${Buffer.from('viewer:Viewer-Pw-123456').toString('base64')}`;
      const adminAuth = `Basic ${Buffer.from('admin:Admin-Pw-123456789').toString('base64')}`;
      const exported = await (
        await fetch(`${admin}/api/config/export`, { headers: { authorization: viewer } })
      ).text();
      assert.ok(exported.includes('${secret:vault:apps/billing#api_key}'), exported);
      const list = (await (
        await fetch(`${admin}/api/debug/traces?limit=50`, { headers: { authorization: adminAuth } })
      ).json()) as { traces: { id: string }[] };
      assert.ok(list.traces.length > 0, 'requests were traced');
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
      // The rotation went through the normal apply path, labelled as such.
      assert.match(metrics, /gateway_config_reloads_total\{[^}]*source="secrets"[^}]*\} [1-9]/);
      for (const [what, text] of [
        ['export', exported],
        ['metrics', metrics],
        ['traces', JSON.stringify(list) + traces.join('\n')],
        ['logs', proc.output()],
      ] as const) {
        assert.ok(!text.includes(KEY_1) && !text.includes(KEY_2), `${what} holds a secret value`);
        assert.ok(!text.includes(token), `${what} holds the Vault token`);
      }
    } finally {
      await proc.stop();
    }
    assert.ok(!proc.output().includes(KEY_1) && !proc.output().includes(KEY_2));
  });
});
