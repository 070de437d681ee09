/**
 * Issue 34 item 3 (docs/config-as-code.md#a-test-from-a-trace): `POST /api/debug/traces/{id}/test`
 * turns a stored trace into a `tests:` entry that `switchyard test` runs. A real request is traced,
 * turned into a test, and the real CLI runs it against the same gateway.yaml (passes) and against
 * a broken one (fails, naming the port path taken).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { basic, startAdmin, type AdminHarness } from './harness.js';
import { echo, startOrigin, type Origin } from '../support/origins.js';
import { tempDir } from '../support/temp-dir.js';

const BIN = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));
const SECRET = 'Bearer s3cret-token-never-in-a-test';

function cli(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, SWITCHYARD_FROM_SOURCE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

const gatewayYaml = (premium: Origin, standard: Origin, premiumTo = 'premium-up') => `
routes:
  - { name: shop, match: { path: /shop/* }, policy: tiers }
policies:
  - name: tiers
    nodes:
      - { id: listener, type: listener }
      - id: tier
        type: condition
        config: { conditions: [["http_x_tier", "==", "premium"]] }
      - { id: premium-up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${premium.port} }] } }
      - { id: standard-up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${standard.port} }] } }
      - { id: stamp, type: response-rewrite, config: { headers: { set: { x-served: tiered } } } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: tier.in }
      - { from: tier.true, to: ${premiumTo}.in }
      - { from: tier.false, to: standard-up.in }
      - { from: premium-up.success, to: stamp.in }
      - { from: standard-up.success, to: stamp.in }
      - { from: stamp.success, to: client.in }
`;

const dir = tempDir('switchyard-trace-test-');
let h: AdminHarness;
let premium: Origin;
let standard: Origin;
before(async () => {
  premium = await startOrigin(echo('premium'), { name: 'premium' });
  standard = await startOrigin(echo('standard'), { name: 'standard' });
  h = await startAdmin({
    gatewayYaml: gatewayYaml(premium, standard),
    admin: 'users: [{ username: watcher, password: "viewer-password-0123", role: viewer }]',
    system: 'debug: { enabled: true, trace_all: true, capture_bodies: true }',
  });
});
after(async () => {
  await h.stop();
  await Promise.all([premium.close(), standard.close()]);
  dir.remove();
});

/** Sends one traced request and answers its trace id. */
async function traced(headers: Record<string, string>): Promise<string> {
  const res = await fetch(`${h.data}/shop/cart?item=42`, { headers });
  await res.text();
  assert.equal(res.status, 200);
  const id = res.headers.get('x-switchyard-trace-id');
  if (id !== null) return id;
  const list = (await (await h.call('GET', '/api/debug/traces?limit=1')).json()) as {
    traces?: { id: string }[];
  };
  const first = list.traces?.[0]?.id;
  assert.ok(first, 'a trace was stored');
  return first;
}

test('issue 34: a trace becomes a test that switchyard test passes; the broken policy fails it naming the port path', async () => {
  const id = await traced({ 'x-tier': 'premium', authorization: SECRET });
  const res = await h.call('POST', `/api/debug/traces/${id}/test`, {
    name: 'premium shoppers get the premium pool',
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /yaml/);
  const yaml = await res.text();
  assert.ok(!yaml.includes('s3cret'), `the redacted credential stays out:\n${yaml}`);
  assert.match(yaml, /^# request header authorization: redacted in the trace, left out$/m);
  const parsed = parse(yaml) as {
    tests: {
      name: string;
      request: { method: string; path: string; headers: Record<string, string> };
      upstreams: Record<string, { status: number; body?: string }>;
      expect: { status: number; ports: string[]; ports_exact: boolean };
    }[];
  };
  const [made] = parsed.tests;
  assert.ok(made);
  assert.equal(made.name, 'premium shoppers get the premium pool');
  assert.equal(made.request.method, 'GET');
  assert.equal(made.request.path, '/shop/cart?item=42');
  assert.equal(made.request.headers['x-tier'], 'premium');
  assert.equal(made.request.headers.authorization, undefined);
  assert.deepEqual(Object.keys(made.upstreams), ['premium-up']);
  assert.equal(made.upstreams['premium-up']?.status, 200);
  // The upstream's body streamed to the client (nothing after it reads it): not in the trace.
  assert.equal(made.upstreams['premium-up']?.body, undefined);
  assert.match(yaml, /^# node premium-up response body: streamed, not in the trace; left out$/m);
  assert.deepEqual(made.expect, {
    status: 200,
    ports: ['tier.true', 'premium-up.success', 'stamp.success'],
    ports_exact: true,
  });

  const gateway = join(dir.path, 'gateway.yaml');
  const tests = join(dir.path, 'from-trace.yaml');
  writeFileSync(gateway, gatewayYaml(premium, standard));
  writeFileSync(tests, yaml);
  // The test never calls out: the premium origin sees no request from it.
  const seen = premium.requests.length;
  const pass = await cli(['test', '--gateway-config', gateway, tests]);
  assert.equal(pass.code, 0, pass.out);
  assert.match(pass.out, /1 passed, 0 failed\s*$/);
  assert.equal(premium.requests.length, seen);

  // Broken: premium requests wired to the standard pool.
  writeFileSync(gateway, gatewayYaml(premium, standard, 'standard-up'));
  const fail = await cli(['test', '--gateway-config', gateway, tests]);
  assert.equal(fail.code, 1, fail.out);
  assert.match(fail.out, /ports taken: tier\.true → standard-up\.success → stamp\.success/);
  assert.match(fail.out, /0 passed, 1 failed\s*$/);
});

test('issue 34: the trace test as JSON, admin only, 404 for an unknown trace', async () => {
  const id = await traced({});
  const res = await h.call('POST', `/api/debug/traces/${id}/test`, undefined, { accept: 'application/json' });
  assert.equal(res.status, 200);
  const body = (await res.json()) as {
    tests: { name: string; expect: { ports: string[] } }[];
    notes: string[];
  };
  assert.equal(body.tests.length, 1);
  assert.equal(body.tests[0]?.name, `trace ${id}: GET /shop/cart → 200`);
  assert.deepEqual(body.tests[0]?.expect.ports, ['tier.false', 'standard-up.success', 'stamp.success']);
  assert.ok(Array.isArray(body.notes));

  const viewer = await fetch(`${h.url}/api/debug/traces/${id}/test`, {
    method: 'POST',
    headers: { authorization: basic('watcher', 'viewer-password-0123') },
  });
  assert.equal(viewer.status, 403);
  const missing = await h.call('POST', '/api/debug/traces/no-such-trace/test');
  assert.equal(missing.status, 404);
});
