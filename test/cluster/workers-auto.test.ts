/** `workers: auto` — the cores this process may use, capped by the cgroup CPU quota (docs/workers.md). */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { cgroupQuota, probeCpus, resolveWorkers } from '../../src/cluster/workers-count.js';
import { request } from '../support/http.js';
import { tempDir } from '../support/temp-dir.js';
import { startClusterGateway, waitForWorkers } from './harness.js';

const dir = tempDir('switchyard-cgroup-');
after(() => dir.remove());

/** A fake cgroup root holding `files`. */
function cgroup(name: string, files: Record<string, string>): string {
  const root = join(dir.path, name);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(root, file, '..'), { recursive: true });
    writeFileSync(join(root, file), text);
  }
  return root;
}

test('workers: a number is used as given', () => {
  assert.equal(resolveWorkers(3, { cores: 1, quota: undefined }), 3);
});

test('workers: auto is the cores available when no quota applies', () => {
  assert.equal(resolveWorkers('auto', { cores: 16, quota: undefined }), 16);
});

test('workers: auto is capped by a cgroup quota, rounded down, never below 1', () => {
  assert.equal(resolveWorkers('auto', { cores: 64, quota: 4 }), 4);
  assert.equal(resolveWorkers('auto', { cores: 64, quota: 2.5 }), 2);
  assert.equal(resolveWorkers('auto', { cores: 64, quota: 0.5 }), 1);
  assert.equal(resolveWorkers('auto', { cores: 2, quota: 8 }), 2);
});

test('workers: the quota is read from cgroup v2 cpu.max and from cgroup v1 cfs files', () => {
  assert.equal(cgroupQuota(cgroup('v2', { 'cpu.max': '300000 100000\n' })), 3);
  assert.equal(cgroupQuota(cgroup('v2-max', { 'cpu.max': 'max 100000\n' })), undefined);
  const v1 = cgroup('v1', { 'cpu/cpu.cfs_quota_us': '150000\n', 'cpu/cpu.cfs_period_us': '100000\n' });
  assert.equal(cgroupQuota(v1), 1.5);
  const unlimited = cgroup('v1-none', {
    'cpu/cpu.cfs_quota_us': '-1\n',
    'cpu/cpu.cfs_period_us': '100000\n',
  });
  assert.equal(cgroupQuota(unlimited), undefined);
  assert.equal(cgroupQuota(join(dir.path, 'absent')), undefined);
  assert.equal(probeCpus(join(dir.path, 'absent')).cores, availableParallelism());
});

test('workers: a gateway started with auto runs as many workers as this machine allows', async () => {
  const expected = resolveWorkers('auto');
  const gw = await startClusterGateway(
    `
routes:
  - { name: hello, match: { path: /hello }, policy: hello }
policies:
  - name: hello
    nodes:
      - { id: listener, type: listener }
      - { id: m, type: mocking, config: { response_status: 200, response_example: hi } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: m.in }
      - { from: m.success, to: client.in }
`,
    { workers: 'auto' },
  );
  try {
    assert.equal((await request(`${gw.data}/hello`)).status, 200);
    const text = await gw.metrics();
    if (expected === 1) {
      // One core: today's single-process path, no workers.
      assert.doesNotMatch(text, /gateway_cluster_workers/);
    } else {
      await waitForWorkers(gw, expected);
      assert.match(text, new RegExp(`^gateway_cluster_workers_configured ${expected}$`, 'm'));
    }
  } finally {
    await gw.stop();
  }
});
