/**
 * Issue 35 item 2 with `workers: 2` (docs/secrets.md#workers): the primary reads the references
 * and sends the values to its workers with each configuration; every worker accepts the key from
 * Vault, a rotation reaches every worker within refresh_s, and Vault sees one reader (one token
 * lookup, one read per round), not one per worker.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startVaultServer, type VaultServer } from '../support/vault-server.js';
import { waitFor } from '../support/wait.js';
import { many, servedDuring, startClusterGateway, type ClusterGateway } from './harness.js';

const KEY_1 = 'workers-vault-key-3e9f01';
const KEY_2 = 'workers-vault-key-8a27c4';

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

let vault: VaultServer;
let gw: ClusterGateway;
let token: string;

before(async () => {
  vault = await startVaultServer();
  token = vault.issueToken({ ttl: 3600 });
  vault.put('apps/billing', { api_key: KEY_1 });
  gw = await startClusterGateway(gatewayYaml, {
    workers: 2,
    system: [`secrets:`, `  vault: { address: '${vault.url}', token: '${token}', refresh_s: 1 }`],
  });
});

after(async () => {
  await gw?.stop();
  await vault?.close();
});

/** Statuses of 16 fresh connections (spread over both workers) with `key`; both workers answered. */
async function statusesWith(key: string): Promise<number[]> {
  let statuses: number[] = [];
  const served = await servedDuring(gw, async () => {
    statuses = (await many(gw, 16, '/api', { 'x-api-key': key })).map((a) => a.status);
  });
  assert.equal(served.length, 2);
  assert.ok(
    served.every((n) => n > 0),
    `both workers answered: ${served.join(', ')}`,
  );
  return statuses;
}

test('secrets with workers: 2 — every worker takes the key the primary read from Vault', async () => {
  assert.deepEqual(await statusesWith(KEY_1), Array(16).fill(200), gw.process.output());
  assert.deepEqual(await statusesWith('${secret:vault:apps/billing#api_key}'), Array(16).fill(401));
  // One reader: the primary looked the token up once; the workers never called Vault.
  assert.equal(vault.requests.filter((r) => r.path === '/v1/auth/token/lookup-self').length, 1);
});

test('secrets with workers: 2 — a rotation in Vault reaches every worker within refresh_s; no value in the logs', async () => {
  vault.put('apps/billing', { api_key: KEY_2 });
  await waitFor(
    async () => (await many(gw, 12, '/api', { 'x-api-key': KEY_2 })).every((a) => a.status === 200),
    {
      timeoutMs: 20_000,
      intervalMs: 200,
      what: 'the rotated key on every worker',
    },
  );
  assert.deepEqual(await statusesWith(KEY_2), Array(16).fill(200));
  assert.deepEqual(await statusesWith(KEY_1), Array(16).fill(401));
  const reads = vault.requests.filter((r) => r.path === '/v1/secret/data/apps/billing').length;
  const since = Date.now();
  await waitFor(() => Date.now() - since > 3000, { timeoutMs: 10_000, what: 'three refresh rounds' });
  const perRound =
    (vault.requests.filter((r) => r.path === '/v1/secret/data/apps/billing').length - reads) / 3;
  assert.ok(perRound <= 2, `${perRound} reads per round: one reader, not one per worker`);
  const output = gw.process.output();
  assert.ok(!output.includes(KEY_1) && !output.includes(KEY_2) && !output.includes(token));
  const metrics = await gw.metrics();
  assert.ok(!metrics.includes(KEY_1) && !metrics.includes(KEY_2));
});
