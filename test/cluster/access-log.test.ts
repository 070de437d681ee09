/** `workers: 2` with a file access log: SIGUSR1 to the gateway (the primary) reopens every worker's file. */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { request } from '../support/http.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { startClusterGateway, waitForWorkers, type ClusterGateway } from './harness.js';

const logs = tempDir('switchyard-cluster-log-');
const file = join(logs.path, 'access.log');
let gw: ClusterGateway;

const gatewayYaml = `
routes:
  - { name: hello, match: { path: /hello }, policy: hello }
policies:
  - name: hello
    nodes:
      - { id: listener, type: listener }
      - { id: m, type: mocking, config: { response_status: 200, content_type: text/plain, response_example: hi } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: m.in }
      - { from: m.success, to: client.in }
`;

before(async () => {
  gw = await startClusterGateway(gatewayYaml, {
    system: [`access_log: { output: ${JSON.stringify(file)}, format: json }`],
  });
  await waitForWorkers(gw, 2);
});

after(async () => {
  await gw?.stop();
  logs.remove();
});

const paths = (path: string): string[] =>
  existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => (JSON.parse(l) as { path: string }).path)
    : [];

/** Sends fresh-connection requests tagged `tag-<n>` until both workers answered at least one more. */
async function hitBothWorkers(tag: string): Promise<string[]> {
  const before = await gw.workers();
  const sent: string[] = [];
  await waitFor(
    async () => {
      const path = `/hello?n=${tag}-${sent.length}`;
      const res = await request(`${gw.data}${path}`, { headers: { connection: 'close' } });
      assert.equal(res.status, 200);
      sent.push(path);
      const now = await gw.workers();
      return [...now].every(([slot, w]) => w.requests > (before.get(slot)?.requests ?? 0));
    },
    { timeoutMs: 60_000, intervalMs: 0, what: 'requests answered by both workers' },
  );
  return sent;
}

test('workers: 2 — after logrotate renames the file, SIGUSR1 to the gateway sends every worker’s next lines to the new file', async () => {
  const first = await hitBothWorkers('before');
  await waitFor(() => first.every((p) => paths(file).includes(p)), { what: 'the first lines' });
  const rotated = `${file}.1`;
  renameSync(file, rotated);
  gw.process.child.kill('SIGUSR1');
  await waitFor(() => existsSync(file), { what: 'the reopened file' });
  const second = await hitBothWorkers('after');
  await waitFor(() => second.every((p) => paths(file).includes(p)), {
    what: 'every line after the signal in the new file',
  });
  assert.ok(!paths(rotated).some((p) => p.includes('after-')), 'no worker kept writing to the rotated file');
  assert.equal(gw.process.child.exitCode, null, 'SIGUSR1 must not stop the gateway');
});
