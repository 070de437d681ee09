/**
 * Issue 35 "examples that run": examples/secrets as its comment says to run it (from the
 * repository root: here a copy of the folder, so the test can rotate the key file): the key-auth
 * key comes from the `file` secret manager, a request without it is refused, with it answered;
 * a changed file reaches the running gateway within refresh_s; the value is in no log line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/secrets/', import.meta.url));

test('examples/secrets runs as written: the key-auth key from a secret file, rotated without a restart', async () => {
  const dir = tempDir('switchyard-secrets-example-');
  const root = dir.path;
  cpSync(EXAMPLE, join(root, 'examples', 'secrets'), { recursive: true });
  const port = await freePort();
  const cwd = process.cwd();
  // The example's paths are relative to the repository root, where its comment runs it.
  process.chdir(root);
  const gw = spawnGateway(
    ['--system-config', 'examples/secrets/system.yaml', '--gateway-config', 'examples/secrets/gateway.yaml'],
    { GATEWAY_PORT: String(port), SECRETS_REFRESH_S: '1' },
  );
  process.chdir(cwd);
  const url = `http://127.0.0.1:${port}/api/hi`;
  const status = async (key?: string) =>
    (await fetch(url, key === undefined ? {} : { headers: { 'x-api-key': key } })).status;
  try {
    await waitForHttp(url, 60_000);
    assert.equal(await status(), 401);
    assert.equal(await status('wrong'), 401);
    const ok = await fetch(url, { headers: { 'x-api-key': 'example-key-2f9c' } });
    assert.equal(ok.status, 200);
    assert.equal(await ok.text(), 'hello, key holder');

    // Rotated as a Secret volume is: a new file renamed over the old one.
    const file = join(root, 'examples', 'secrets', 'files', 'api-keys.json');
    writeFileSync(`${file}.new`, '{ "api_key": "example-key-rotated-81d0" }\n');
    renameSync(`${file}.new`, file);
    await waitFor(async () => (await status('example-key-rotated-81d0')) === 200, {
      timeoutMs: 20_000,
      what: 'the rotated key to be accepted',
    });
    assert.equal(await status('example-key-2f9c'), 401, 'the old key is refused');
  } finally {
    const code = await gw.stop('SIGTERM');
    dir.remove();
    assert.equal(code, 0, gw.output());
  }
  assert.ok(!gw.output().includes('example-key-2f9c'), 'a key value reached the log');
  assert.ok(!gw.output().includes('example-key-rotated-81d0'), 'a key value reached the log');
});
