import { after, before, test } from 'node:test';
import type { GatewayProcess } from '../support/gateway-process.js';
import assert from 'node:assert/strict';
import { basic } from './harness.js';
import { rawRequest, spawnedConfig, startSpawned, type SpawnedConfig } from './spawned.js';

const system = [
  'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
  'logging: { level: warn, format: json }',
  'timeouts: { shutdown_timeout_seconds: 2 }',
  'admin:',
  '  port: @ADMIN_PORT@',
  '  username: admin',
  '  password: "correct horse"',
  '  allowed_origins: ["https://editor.example.com"]',
  '',
].join('\n');

/** What an `enctype="text/plain"` form on another site posts with the admin's cached credentials. */
const FORGED = '{"name":"mallory","credentials":{"key-auth":{"key":"attacker-key="}}}\r\n';

const consumerExists = async (config: SpawnedConfig, name: string) =>
  (
    await rawRequest(`http://127.0.0.1:${config.adminPort}/api/consumers/${name}`, {
      headers: { authorization: basic() },
    })
  ).status === 200;

// One gateway for the tests below that share its configuration (spawning is slow on a busy machine).
let config: SpawnedConfig;
let p: GatewayProcess;
before(async () => {
  config = await spawnedConfig(system);
  p = await startSpawned(config);
});
after(async () => {
  await p.stop();
  config.remove();
});

test('admin CSRF (M2): a cross-site text/plain POST is refused with 403 and creates nothing', async () => {
  const url = `http://127.0.0.1:${config.adminPort}/api/consumers`;
  const forged = [
    { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site', 'content-type': 'text/plain' },
    { origin: 'http://evil.example', 'content-type': 'application/json' },
    { origin: 'null', 'content-type': 'application/json' },
    // Another port of the same host (the data plane, say) is another origin.
    { origin: `http://127.0.0.1:${config.dataPort}`, 'content-type': 'application/json' },
    { 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' },
  ];
  for (const headers of forged) {
    const res = await rawRequest(url, {
      method: 'POST',
      headers: { authorization: basic(), ...headers },
      body: FORGED,
    });
    assert.equal(res.status, 403, JSON.stringify(headers));
    assert.equal((JSON.parse(res.body) as { error: string }).error, 'forbidden');
  }
  assert.equal(await consumerExists(config, 'mallory'), false);
});

test('admin CSRF (M2): writes with a body need Content-Type application/json (415 otherwise), even without Origin', async () => {
  const base = `http://127.0.0.1:${config.adminPort}`;
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
    const res = await rawRequest(`${base}/api/consumers`, {
      method: 'POST',
      headers: { authorization: basic(), 'content-type': type },
      body: FORGED,
    });
    assert.equal(res.status, 415, type);
    assert.equal(res.headers.accept, 'application/json');
  }
  const untyped = await rawRequest(`${base}/api/consumers`, {
    method: 'POST',
    headers: { authorization: basic() },
    body: FORGED,
  });
  assert.equal(untyped.status, 415, 'a body without a type');
  const put = await rawRequest(`${base}/api/routes/hello`, {
    method: 'PUT',
    headers: { authorization: basic(), 'content-type': 'text/plain' },
    body: JSON.stringify({ match: { path: '/x' }, policy: 'hello-policy' }),
  });
  assert.equal(put.status, 415);
  assert.equal(await consumerExists(config, 'mallory'), false);
  // Credentials are still checked first: an anonymous untyped write is a 401, not a 415.
  const anonymous = await rawRequest(`${base}/api/consumers`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: FORGED,
  });
  assert.equal(anonymous.status, 401);
});

test('admin CSRF (M2): same-origin, allowed-origin and Origin-less JSON writes pass; bodiless writes need no type', async () => {
  const base = `http://127.0.0.1:${config.adminPort}`;
  const post = (name: string, headers: Record<string, string>) =>
    rawRequest(`${base}/api/consumers`, {
      method: 'POST',
      headers: { authorization: basic(), 'content-type': 'application/json; charset=utf-8', ...headers },
      body: JSON.stringify({ name }),
    });
  assert.equal((await post('from-curl', {})).status, 201);
  assert.equal(
    (await post('from-editor', { origin: base, 'sec-fetch-site': 'same-origin' })).status,
    201,
    'the editor is same-origin',
  );
  assert.equal((await post('from-allowed', { origin: 'https://editor.example.com' })).status, 201);
  const deleted = await rawRequest(`${base}/api/consumers/from-curl`, {
    method: 'DELETE',
    headers: { authorization: basic(), origin: base },
  });
  assert.equal(deleted.status, 200);
  const reload = await rawRequest(`${base}/api/config/reload`, {
    method: 'POST',
    headers: { authorization: basic() },
  });
  assert.equal(reload.status, 200);
  const foreignDelete = await rawRequest(`${base}/api/consumers/from-editor`, {
    method: 'DELETE',
    headers: { authorization: basic(), origin: 'http://evil.example' },
  });
  assert.equal(foreignDelete.status, 403);
  assert.equal(await consumerExists(config, 'from-editor'), true);
  // Reads are not writes: a foreign Origin on GET is left to the browser's same-origin policy.
  const read = await rawRequest(`${base}/api/consumers`, {
    headers: { authorization: basic(), origin: 'http://evil.example' },
  });
  assert.equal(read.status, 200);
});
