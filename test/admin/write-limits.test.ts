import { after, before, test } from 'node:test';
import type { GatewayProcess } from '../support/gateway-process.js';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { jsonDepthExceeds } from '../../src/admin/http.js';
import { basic } from './harness.js';
import { rawRequest, spawnedConfig, startSpawned, type RawReply, type SpawnedConfig } from './spawned.js';

const system = (limits = '') =>
  [
    'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
    'logging: { level: warn, format: json }',
    'timeouts: { shutdown_timeout_seconds: 2 }',
    'debug: { enabled: true, sandbox: true, sandbox_timeout_seconds: 5 }',
    `admin: { port: @ADMIN_PORT@, username: admin, password: "correct horse"${limits} }`,
    '',
  ].join('\n');

const nested = (depth: number, leaf = '"x"') => `${'{"a":'.repeat(depth)}${leaf}${'}'.repeat(depth)}`;
const nestedArray = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

const errorText = (reply: RawReply): string => {
  const body = JSON.parse(reply.body) as { error?: unknown; message?: unknown; details?: unknown };
  return JSON.stringify(body);
};

// One gateway for the tests below that share its configuration (spawning is slow on a busy machine).
let config: SpawnedConfig;
let p: GatewayProcess;
before(async () => {
  config = await spawnedConfig(system());
  p = await startSpawned(config);
});
after(async () => {
  await p.stop();
  config.remove();
});

test('admin write limits (L1): deeply nested JSON answers 400, never 500, and changes nothing', async () => {
  const base = `http://127.0.0.1:${config.adminPort}`;
  const write = (method: string, path: string, body: string) =>
    rawRequest(base + path, {
      method,
      headers: { authorization: basic(), 'content-type': 'application/json' },
      body,
    });
  const initial = sha(config.gatewayPath);
  // The review's three shapes: 100k-deep response_headers, 300k-deep nodes, 200k-deep sandbox context.
  const policy = `{"nodes":[{"id":"in","type":"listener"},{"id":"m","type":"mocking","config":{"response_example":"x","response_headers":${nested(100_000)}}},{"id":"out","type":"client"}],"edges":[{"from":"in.out","to":"m.in"},{"from":"m.success","to":"out.in"}]}`;
  const cases: [string, string, string][] = [
    ['PUT', '/api/policies/deep', policy],
    ['POST', '/api/policies/validate', `{"nodes":${nestedArray(300_000)}}`],
    ['POST', '/api/debug/sandbox', `{"policy":"hello-policy","context":{"message":${nested(200_000)}}}`],
    ['POST', '/api/consumers', `{"name":"deep","labels":${nested(5_000)}}`],
  ];
  for (const [method, path, body] of cases) {
    const res = await write(method, path, body);
    assert.equal(res.status, 400, `${method} ${path}: ${res.body.slice(0, 200)}`);
    assert.match(errorText(res), /nested deeper than 128 levels/);
  }
  assert.equal(sha(config.gatewayPath), initial, 'gateway.yaml unchanged');
  assert.equal((await rawRequest(`http://127.0.0.1:${config.dataPort}/hello`)).status, 200);
  // Ordinary nesting still works.
  const ok = await write('POST', '/api/consumers', JSON.stringify({ name: 'ok', labels: { team: 'a' } }));
  assert.equal(ok.status, 201, ok.body);
});

test('admin write limits (L8): a 9 MB description, long or control-character names and bad header names answer 400 naming the key', async () => {
  const base = `http://127.0.0.1:${config.adminPort}`;
  const post = (path: string, body: unknown) =>
    rawRequest(base + path, {
      method: 'POST',
      headers: { authorization: basic(), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const route = (extra: Record<string, unknown>) => ({
    name: 'r',
    match: { path: '/r' },
    policy: 'hello-policy',
    ...extra,
  });
  const initial = sha(config.gatewayPath);
  const huge = await post('/api/routes', route({ description: 'd'.repeat(9 * 1024 * 1024) }));
  assert.equal(huge.status, 400, huge.body.slice(0, 200));
  assert.match(errorText(huge), /routes\[1\]\.description/);
  assert.match(errorText(huge), /4096/);

  const header = await post('/api/routes', route({ match: { path: '/r', headers: { 'bad header': 'x' } } }));
  assert.equal(header.status, 400);
  assert.match(errorText(header), /routes\[1\]\.match\.headers/);
  assert.match(errorText(header), /bad header/);

  const newline = await post('/api/routes', route({ name: 'a\nb' }));
  assert.equal(newline.status, 400);
  assert.match(errorText(newline), /routes\[1\]\.name/);

  const long = await post('/api/consumers', { name: 'n'.repeat(10_000) });
  assert.equal(long.status, 400);
  assert.match(errorText(long), /consumers\[\d+\]\.name/);
  assert.match(errorText(long), /128/);

  const policyName = await rawRequest(`${base}/api/policies/${encodeURIComponent('a\nb: c')}`, {
    method: 'PUT',
    headers: { authorization: basic(), 'content-type': 'application/json' },
    body: JSON.stringify({ nodes: [], edges: [] }),
  });
  assert.equal(policyName.status, 400);
  assert.match(errorText(policyName), /policies\[1\]\.name/);

  assert.equal(sha(config.gatewayPath), initial, 'gateway.yaml unchanged');
  // Printable names, spaces and non-ASCII included, are fine.
  const fine = await post('/api/routes', route({ name: 'Route Ω 1', description: 'd'.repeat(4096) }));
  assert.equal(fine.status, 201, fine.body);
});

test('admin write limits (L8): bodies over max_body_bytes get 413; writes that would grow the config past max_config_bytes get 413', async () => {
  const limited = await spawnedConfig(
    system(', limits: { max_body_bytes: 200000, max_config_bytes: 50000 }'),
  );
  const gw = await startSpawned(limited);
  const base = `http://127.0.0.1:${limited.adminPort}`;
  const post = (name: string, size: number) =>
    rawRequest(`${base}/api/consumers`, {
      method: 'POST',
      headers: { authorization: basic(), 'content-type': 'application/json' },
      body: JSON.stringify({ name, labels: { blob: 'x'.repeat(size) } }),
    });
  try {
    const tooBig = await post('big', 300_000);
    assert.equal(tooBig.status, 413);
    assert.match(errorText(tooBig), /admin\.limits\.max_body_bytes/);

    const initial = sha(limited.gatewayPath);
    const first = await post('c1', 30_000);
    assert.equal(first.status, 201, first.body);
    const grown = await post('c2', 30_000);
    assert.equal(grown.status, 413, grown.body);
    assert.match(errorText(grown), /config_too_large/);
    assert.match(errorText(grown), /admin\.limits\.max_config_bytes/);
    assert.notEqual(sha(limited.gatewayPath), initial);
    const afterFirst = sha(limited.gatewayPath);
    // Shrinking is always allowed, so an oversized configuration can be repaired.
    const removed = await rawRequest(`${base}/api/consumers/c1`, {
      method: 'DELETE',
      headers: { authorization: basic() },
    });
    assert.equal(removed.status, 200);
    assert.notEqual(sha(limited.gatewayPath), afterFirst);
  } finally {
    await gw.stop();
    limited.remove();
  }
});

test('admin write limits: the depth scan ignores brackets inside strings', () => {
  assert.equal(jsonDepthExceeds('{"a":"[[[[[[[[[[[[[[[["}', 2), false);
  assert.equal(jsonDepthExceeds('{"a":"\\"[[[["}', 1), false);
  assert.equal(jsonDepthExceeds('{"a":{"b":[1]}}', 3), false);
  assert.equal(jsonDepthExceeds('{"a":{"b":[1]}}', 2), true);
});
