/**
 * F35 (shared/reports/operator-review.md): `promtool check config` on the shipped
 * deploy/prometheus/prometheus.yml fails until the token file exists; docs/metrics.md#credentials
 * says so and gives the command that writes it. This runs that command's effect and promtool.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promtool } from '../support/prometheus.js';
import { tempDir } from '../support/temp-dir.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const dir = tempDir('switchyard-promtool-');
after(() => dir.remove());

test('F35: promtool check config fails naming the missing token file, and passes once the command of docs/metrics.md wrote it', () => {
  const kit = join(dir.path, 'deploy', 'prometheus');
  mkdirSync(kit, { recursive: true });
  for (const file of ['prometheus.yml', 'alerts.yml'])
    copyFileSync(join(ROOT, 'deploy/prometheus', file), join(kit, file));
  const before = promtool(['check', 'config', join(kit, 'prometheus.yml')]);
  assert.notEqual(before.status, 0);
  assert.match(before.output, /stat \S*switchyard-metrics-token: no such file or directory/);

  const docs = readFileSync(join(ROOT, 'docs/metrics.md'), 'utf8');
  const command = /`(printf '%s' "\$METRICS_TOKEN" > deploy\/prometheus\/switchyard-metrics-token)`/.exec(
    docs,
  )?.[1];
  assert.ok(command, 'docs/metrics.md gives the command');
  execFileSync('sh', ['-c', command], {
    cwd: dir.path,
    env: { ...process.env, METRICS_TOKEN: 'metrics-token-0123456789abcdef' },
  });
  assert.equal(readFileSync(join(kit, 'switchyard-metrics-token'), 'utf8'), 'metrics-token-0123456789abcdef');
  const after = promtool(['check', 'config', join(kit, 'prometheus.yml')]);
  assert.equal(after.status, 0, after.output);
  assert.match(after.output, /SUCCESS/);

  const ignored = readFileSync(join(ROOT, 'deploy/prometheus/.gitignore'), 'utf8').split('\n');
  assert.ok(ignored.includes('switchyard-metrics-token'), 'the token file is kept out of Git');
});
