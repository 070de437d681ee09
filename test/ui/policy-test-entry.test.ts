/**
 * Issue 34 item 3: the console's sandbox saves a run as a policy test. The entry the console
 * builds (ui/src/traces/policy-test-entry.ts) from a real sandbox run is written as a test file
 * and run by `switchyard test` as a real process: it passes, and it fails once the policy changes.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { defaultTestName, testFromRun, type RunOutcome } from '../../ui/src/traces/policy-test-entry.js';
import { startAdmin } from '../admin/harness.js';
import { tempDir } from '../support/temp-dir.js';

const BIN = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));

function cli(args: string[]): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, SWITCHYARD_FROM_SOURCE: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

const gatewayYaml = (status: number) => `
routes:
  - { name: orders, match: { path: /api/orders }, policy: shop }
consumers:
  - { name: bob, credentials: { key-auth: { key: bobs-key } } }
policies:
  - name: shop
    nodes:
      - { id: listener, type: listener }
      - { id: auth, type: key-auth, config: { use_consumers: true } }
      - id: backend
        type: upstream
        config: { targets: [{ host: 127.0.0.1, port: 1 }] }
      - { id: denied, type: mocking, config: { response_status: ${status}, response_example: no key } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: auth.in }
      - { from: auth.success, to: backend.in }
      - { from: auth.denied, to: denied.in }
      - { from: denied.success, to: client.in }
      - { from: backend.success, to: client.in }
`;

test('sandbox → test: a mocked sandbox run saved as a test entry passes `switchyard test`, and catches a change', async () => {
  const dir = tempDir('sandbox-test-');
  const h = await startAdmin({
    gatewayYaml: gatewayYaml(401),
    system: 'debug: { enabled: true, sandbox: true }',
  });
  const entries = [];
  try {
    for (const headers of [{ 'x-api-key': 'bobs-key' }, {}]) {
      const ask = {
        method: 'POST',
        path: '/api/orders',
        headers,
        body: '{"item":1}',
        mocks: { backend: { status: 201, headers: { 'x-order': '7' }, body: 'created' } },
      };
      const res = await h.call('POST', '/api/debug/sandbox', {
        policy: 'shop',
        context: { method: ask.method, path: ask.path, headers: ask.headers, body: ask.body },
        upstreams: ask.mocks,
      });
      assert.equal(res.status, 200);
      const { trace } = (await res.json()) as { trace: RunOutcome };
      entries.push(testFromRun(defaultTestName(ask, trace), ask, trace));
    }
  } finally {
    await h.stop();
  }
  assert.deepEqual(
    entries.map((e) => [e.expect.status, e.expect.ports]),
    [
      [201, ['auth.success', 'backend.success']],
      [401, ['auth.denied', 'denied.success']],
    ],
  );
  const system = join(dir.path, 'system.yaml');
  const gateway = join(dir.path, 'gateway.yaml');
  const file = join(dir.path, 'shop.tests.yaml');
  writeFileSync(system, 'logging: { level: warn }\n');
  writeFileSync(file, stringify({ tests: entries }));
  try {
    writeFileSync(gateway, gatewayYaml(401));
    const pass = await cli(['test', '--system-config', system, '--gateway-config', gateway, file]);
    assert.equal(pass.code, 0, pass.stdout);
    assert.match(pass.stdout, /2 passed, 0 failed/);

    writeFileSync(gateway, gatewayYaml(403));
    const fail = await cli(['test', '--system-config', system, '--gateway-config', gateway, file]);
    assert.equal(fail.code, 1, fail.stdout);
    assert.match(fail.stdout, /status 403, expected 401/);
    assert.match(fail.stdout, /1 passed, 1 failed/);
  } finally {
    dir.remove();
  }
});
