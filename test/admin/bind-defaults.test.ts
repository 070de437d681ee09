import { test } from 'node:test';
import assert from 'node:assert/strict';
import { basic } from './harness.js';
import { waitFor } from '../support/wait.js';
import { logLines, rawRequest, spawnedConfig, startSpawned } from './spawned.js';

const adminListening = (output: string) =>
  logLines(output).find((l) => l.listener === 'admin API' && typeof l.bind === 'string');

/** The admin listener's log line; /healthz may answer before the line reaches our end of the pipe. */
async function adminLine(p: { output(): string }) {
  await waitFor(() => adminListening(p.output()) !== undefined, {
    what: "the admin listener's log line",
  }).catch(() => undefined);
  return adminListening(p.output());
}

test('admin bind defaults (M1): without admin.bind the admin listener binds 127.0.0.1 only', async () => {
  const config = await spawnedConfig(
    [
      'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
      'logging: { level: info, format: json }',
      'timeouts: { shutdown_timeout_seconds: 2 }',
      'admin: { port: @ADMIN_PORT@, username: admin, password: "correct horse" }',
      '',
    ].join('\n'),
  );
  const p = await startSpawned(config);
  try {
    const line = await adminLine(p);
    assert.ok(line !== undefined, p.output());
    assert.equal(line.bind, '127.0.0.1');
    assert.equal(line.port, config.adminPort);
    const warned = logLines(p.output()).some((l) => String(l.msg).includes('plain HTTP'));
    assert.equal(warned, false, 'a loopback admin listener is not warned about');
    const status = await rawRequest(`http://127.0.0.1:${config.adminPort}/api/status`, {
      headers: { authorization: basic() },
    });
    assert.equal(status.status, 200);
  } finally {
    await p.stop();
    config.remove();
  }
});

test('admin bind defaults (M1): a non-loopback admin bind without TLS logs a warning at start', async () => {
  const config = await spawnedConfig(
    [
      'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
      'logging: { level: info, format: json }',
      'timeouts: { shutdown_timeout_seconds: 2 }',
      'admin: { bind: 0.0.0.0, port: @ADMIN_PORT@, username: admin, password: "correct horse" }',
      '',
    ].join('\n'),
  );
  const p = await startSpawned(config);
  try {
    assert.equal((await adminLine(p))?.bind, '0.0.0.0');
    const warned = () => logLines(p.output()).find((l) => String(l.msg).includes('plain HTTP'));
    await waitFor(() => warned() !== undefined, { what: 'the plain HTTP warning' }).catch(() => undefined);
    const warning = warned();
    assert.ok(warning !== undefined, p.output());
    assert.equal(warning.level, 40, 'pino warn');
    assert.equal(warning.bind, '0.0.0.0');
  } finally {
    await p.stop();
    config.remove();
  }
});
