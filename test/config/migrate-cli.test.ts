/** `switchyard migrate` as a command: output streams, --write with a .bak, and exit codes 0 / 1 / 2. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../support/temp-dir.js';

const bin = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));

function switchyard(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A 0.3-era policy: key-auth's `denied` port did not exist yet, so it is unwired. */
const legacy = `# keep this comment
routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: auth, type: key-auth, config: { keys: [k] } } # the auth node
      - { id: out, type: client }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: out.in }
`;

test('migrate cli: prints the migrated YAML on stdout, the changes on stderr, and exits 0 when it validates', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const gw = join(dir.path, 'gateway.yaml');
  writeFileSync(gw, legacy);
  const validateBefore = await switchyard([
    'validate',
    '--gateway-config',
    gw,
    '--system-config',
    join(dir.path, 'none.yaml'),
  ]);
  assert.equal(validateBefore.code, 1);
  assert.match(
    validateBefore.stderr,
    /output port 'denied' of node 'auth' \(type 'key-auth'\) must be wired.*switchyard migrate/,
  );

  const r = await switchyard(['migrate', '--gateway-config', gw]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /changed: policy 'p': wired auth\.denied → out\.in \(node 'auth', port 'denied'\)/);
  assert.match(r.stdout, /# keep this comment/);
  assert.match(r.stdout, /# the auth node/);
  assert.match(r.stdout, /\{ from: auth\.denied, to: out\.in \}/);
  assert.equal(readFileSync(gw, 'utf8'), legacy, 'without --write the file is untouched');
  assert.ok(!existsSync(`${gw}.bak`));
});

test('migrate cli: --write replaces the file, keeps a .bak, and the result validates', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const gw = join(dir.path, 'gateway.yaml');
  const sys = join(dir.path, 'system.yaml');
  writeFileSync(gw, legacy);
  writeFileSync(sys, 'listener: { bind: 127.0.0.1, port: 0 }\n');
  const r = await switchyard(['migrate', '--gateway-config', gw, '--system-config', sys, '--write']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '');
  assert.equal(readFileSync(`${gw}.bak`, 'utf8'), legacy);
  assert.match(readFileSync(gw, 'utf8'), /auth\.denied/);
  const v = await switchyard(['validate', '--gateway-config', gw, '--system-config', sys]);
  assert.equal(v.code, 0, v.stderr);
});

test('migrate cli: a config migrate cannot fix exits 1 and lists the remaining errors', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const gw = join(dir.path, 'gateway.yaml');
  writeFileSync(gw, legacy.replace('type: key-auth, config: { keys: [k] }', 'type: no-such-type'));
  const r = await switchyard(['migrate', '--gateway-config', gw]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /error: .*no-such-type/);
  assert.match(r.stderr, /\d+ error\(s\) remain after migrate/);
});

test('migrate cli: usage errors exit 2 (no --gateway-config, --write without migrate)', async () => {
  const a = await switchyard(['migrate']);
  assert.equal(a.code, 2);
  assert.match(a.stderr, /migrate needs --gateway-config/);
  const b = await switchyard(['validate', '--write']);
  assert.equal(b.code, 2);
});

test('migrate cli: --drop-unknown-keys drops each unknown node-config key, listing it, and exits 0', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const gw = join(dir.path, 'gateway.yaml');
  writeFileSync(gw, legacy.replace('config: { keys: [k] }', 'config: { keys: [k], header_nam: x-key }'));
  const without = await switchyard(['migrate', '--gateway-config', gw]);
  assert.equal(without.code, 1);
  assert.match(without.stderr, /config\.header_nam unknown key \(did you mean 'header_name'\?\)/);
  const r = await switchyard(['migrate', '--gateway-config', gw, '--drop-unknown-keys']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /changed: .*dropped unknown config key 'header_nam'/);
  assert.doesNotMatch(r.stdout, /header_nam:/);
});
