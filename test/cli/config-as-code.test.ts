/**
 * Config as code (issue 34 items 1 and 2, docs/config-as-code.md): `switchyard dump`, `diff` and
 * `apply` run as real processes against a real spawned gateway; the history versions every
 * applied configuration (file reload, SIGHUP, Admin API write, apply, rollback), survives a
 * restart and is bounded by admin.history.max_versions; the audit log names who changed what.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnedConfig, startSpawned, type SpawnedConfig } from '../admin/spawned.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const BIN = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));

const SYSTEM = `
listener: { bind: 127.0.0.1, port: @DATA_PORT@ }
logging: { level: warn }
timeouts: { shutdown_timeout_seconds: 2 }
config: { watch: false }
admin:
  bind: 127.0.0.1
  port: @ADMIN_PORT@
  username: ops
  password: ops-password
  users: [{ username: watcher, password: watcher-password, role: viewer }]
  history: { max_versions: 8 }
`;

const policy = (name: string, body: string) => `
  - name: ${name}
    nodes:
      - { id: in, type: listener }
      - { id: mock, type: mocking, config: { response_example: '${body}', with_mock_header: false } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: mock.in }
      - { from: mock.success, to: out.in }`;

// Flow style, comments and key order that the canonical dump does not keep.
const GATEWAY = `# the shop
routes:
  - { policy: hello-policy, name: hello, match: { path: /hello } }
  - name: bye
    match: { path: /bye }
    policy: bye-policy
policies:${policy('hello-policy', 'hello')}${policy('bye-policy', 'bye')}
consumers:
  - name: alice
    credentials: { key-auth: { key: '\${ALICE_KEY}' } }
  - name: bob
    credentials: { key-auth: { key: bob-literal-key } }
`;

let config: SpawnedConfig;
let gw: GatewayProcess;
let admin: string;
let data: string;
const work = tempDir('switchyard-cac-');

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const OPS = basic('ops', 'ops-password');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The real `switchyard` CLI, asynchronously (the gateway it talks to is another process). */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: {
        ...process.env,
        SWITCHYARD_ADMIN_USER: 'ops',
        SWITCHYARD_ADMIN_PASSWORD: 'ops-password',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
const withAdmin = (args: string[]) => [...args, '--admin-url', admin];

interface Version {
  version: number;
  time: string;
  user: string | null;
  source: string;
  summary: string;
  sha256: string;
}

async function history(): Promise<Version[]> {
  const res = await fetch(`${admin}/api/config/history`, { headers: { authorization: OPS } });
  assert.equal(res.status, 200);
  return ((await res.json()) as { versions: Version[] }).versions;
}

async function newest(): Promise<Version> {
  return (await history())[0] as Version;
}

const write = (path: string, method: string, body?: unknown, auth = OPS) =>
  fetch(`${admin}${path}`, {
    method,
    headers: { authorization: auth, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

const body = async (path: string) => (await fetch(`${data}${path}`)).text();

before(async () => {
  config = await spawnedConfig(SYSTEM, GATEWAY);
  gw = await startSpawned(config, { ALICE_KEY: 'alice-secret-key' });
  admin = `http://127.0.0.1:${config.adminPort}`;
  data = `http://127.0.0.1:${config.dataPort}`;
});

after(async () => {
  await gw.stop();
  config.remove();
  work.remove();
});

test('the configuration loaded at start is version 1, source startup, no user', async () => {
  const versions = await history();
  assert.equal(versions.length, 1);
  const [first] = versions as [Version];
  assert.equal(first.version, 1);
  assert.equal(first.source, 'startup');
  assert.equal(first.user, null);
  assert.match(first.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  assert.match(first.sha256, /^[0-9a-f]{64}$/);
});

let firstDump = '';

test('dump twice is byte-identical, keeps ${VAR} references for an admin, and writes --output', async () => {
  const one = await cli(withAdmin(['dump']));
  assert.equal(one.code, 0, one.stderr);
  const two = await cli(withAdmin(['dump']));
  assert.equal(two.stdout, one.stdout);
  assert.match(one.stdout, /key: \$\{ALICE_KEY\}/);
  assert.match(one.stdout, /key: bob-literal-key/);
  assert.doesNotMatch(one.stdout, /alice-secret-key/);
  assert.doesNotMatch(one.stdout, /# the shop/, 'comments are not part of the configuration');
  // Canonical key order: name first, whatever the file said.
  assert.match(one.stdout, /- name: hello\n {4}match:/);
  const out = join(work.path, 'dump.yaml');
  const three = await cli(withAdmin(['dump', '--output', out]));
  assert.equal(three.code, 0, three.stderr);
  assert.equal(three.stdout, '');
  assert.equal(readFileSync(out, 'utf8'), one.stdout);
  firstDump = one.stdout;
});

test('a viewer dump is masked', async () => {
  const run = await cli(withAdmin(['dump']), {
    SWITCHYARD_ADMIN_USER: 'watcher',
    SWITCHYARD_ADMIN_PASSWORD: 'watcher-password',
  });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /name: bob/);
  assert.doesNotMatch(run.stdout, /bob-literal-key/);
  assert.match(run.stdout, /redacted/i);
  const again = await cli(withAdmin(['dump']), {
    SWITCHYARD_ADMIN_USER: 'watcher',
    SWITCHYARD_ADMIN_PASSWORD: 'watcher-password',
  });
  assert.equal(again.stdout, run.stdout);
});

test('dump with a wrong password or an unreachable gateway exits 2', async () => {
  const wrong = await cli(withAdmin(['dump']), { SWITCHYARD_ADMIN_PASSWORD: 'nope' });
  assert.equal(wrong.code, 2);
  assert.match(wrong.stderr, /401/);
  const down = await cli(['dump', '--admin-url', 'http://127.0.0.1:9']);
  assert.equal(down.code, 2);
  assert.match(down.stderr, /cannot reach the Admin API/);
});

test('diff: exit 0 for the dump itself, 1 with the right resources and a unified diff, 2 for a bad file', async () => {
  const same = join(work.path, 'same.yaml');
  writeFileSync(same, firstDump);
  const none = await cli(withAdmin(['diff', '--gateway-config', same]));
  assert.equal(none.code, 0, none.stderr);
  assert.equal(none.stdout, '');
  // The original file (flow style, comments, other key order) is the same configuration.
  const original = await cli(withAdmin(['diff', '--gateway-config', config.gatewayPath]));
  assert.equal(original.code, 0, original.stdout + original.stderr);

  const edited = join(work.path, 'edited.yaml');
  writeFileSync(edited, editedYaml());
  const run = await cli(withAdmin(['diff', '--gateway-config', edited]));
  assert.equal(run.code, 1, run.stderr);
  const named = run.stdout.split('\n').filter((l) => /^[+~-] [a-z_]+\//.test(l));
  assert.deepEqual(named, [
    '+ routes/new',
    '+ policies/new-policy',
    '~ policies/hello-policy',
    '- consumers/alice',
    '- consumers/bob',
  ]);
  assert.match(
    run.stdout,
    /~ policies\/hello-policy\n--- a\/policies\/hello-policy\n\+\+\+ b\/policies\/hello-policy\n@@ /,
  );
  assert.match(run.stdout, /^-.*response_example: hello$/m);
  assert.match(run.stdout, /^\+.*response_example: hello again$/m);
  assert.doesNotMatch(
    run.stdout,
    /routes\/hello|routes\/bye|bye-policy/,
    'unchanged resources are not named',
  );

  const broken = join(work.path, 'broken.yaml');
  writeFileSync(broken, 'routes: [ {');
  const bad = await cli(withAdmin(['diff', '--gateway-config', broken]));
  assert.equal(bad.code, 2);
  const missing = await cli(withAdmin(['diff', '--gateway-config', join(work.path, 'absent.yaml')]));
  assert.equal(missing.code, 2);
});

test('diff A B works offline', async () => {
  const a = join(work.path, 'a.yaml');
  const b = join(work.path, 'b.yaml');
  writeFileSync(a, GATEWAY);
  writeFileSync(b, editedYaml());
  const run = await cli(['diff', a, b, '--admin-url', 'http://127.0.0.1:9']);
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.stdout, /^\+ routes\/new$/m);
  const same = await cli(['diff', a, a]);
  assert.equal(same.code, 0);
});

function editedYaml(): string {
  return firstDump
    .replace('response_example: hello\n', 'response_example: hello again\n')
    .replace(/consumers:\n[\s\S]*$/, '')
    .replace('routes:\n', 'routes:\n  - { name: new, match: { path: /new }, policy: new-policy }\n')
    .replace('policies:\n', `policies:${policy('new-policy', 'new')}\n`);
}

test('apply --dry-run validates and changes nothing; apply replaces the whole configuration; diff then exits 0', async () => {
  const edited = join(work.path, 'edited.yaml');
  writeFileSync(edited, editedYaml());
  const dry = await cli(withAdmin(['apply', '--gateway-config', edited, '--dry-run']));
  assert.equal(dry.code, 1, dry.stderr);
  assert.match(dry.stdout, /dry run: 2 added, 1 changed, 2 removed; nothing applied/);
  assert.notEqual(await body('/new'), 'new');
  assert.equal((await history()).length, 1);

  const run = await cli(withAdmin(['apply', '--gateway-config', edited]));
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /applied: 2 added, 1 changed, 2 removed; version 2/);
  assert.equal(await body('/new'), 'new');
  assert.equal(await body('/hello'), 'hello again');
  const v2 = await newest();
  assert.equal(v2.version, 2);
  assert.equal(v2.source, 'apply');
  assert.equal(v2.user, 'ops');
  assert.match(v2.summary, /routes \+1/);
  const again = await cli(withAdmin(['diff', '--gateway-config', edited]));
  assert.equal(again.code, 0, again.stdout);
  // Persisted to gateway.yaml (config.persist default): the file holds the new route.
  assert.match(readFileSync(config.gatewayPath, 'utf8'), /new-policy/);
});

test('an invalid file is refused by apply with exit 2 and nothing applied', async () => {
  const invalid = join(work.path, 'invalid.yaml');
  writeFileSync(invalid, 'routes:\n  - { name: x, match: { path: /x }, policy: missing-policy }\n');
  const run = await cli(withAdmin(['apply', '--gateway-config', invalid]));
  assert.equal(run.code, 2);
  assert.match(run.stderr, /missing-policy/);
  assert.equal((await newest()).version, 2);
});

test('apply with a concurrent change after its ETag was read exits 2 and applies nothing', async () => {
  const read = await fetch(`${admin}/api/config`, { headers: { authorization: OPS } });
  const etag = read.headers.get('etag') as string;
  assert.match(etag, /^"[0-9a-f]{64}"$/);
  // Someone else writes in between.
  const res = await write('/api/routes', 'POST', {
    name: 'other',
    match: { path: '/other' },
    policy: 'bye-policy',
  });
  assert.equal(res.status, 201);
  const before = await newest();
  assert.equal(before.source, 'admin');
  assert.equal(before.user, 'ops');
  const edited = join(work.path, 'edited.yaml');
  const run = await cli(withAdmin(['apply', '--gateway-config', edited, '--if-match', etag]));
  assert.equal(run.code, 2);
  assert.match(run.stderr, /changed since it was read.*nothing applied/);
  assert.equal((await newest()).version, before.version);
  assert.equal(await body('/other'), 'bye');
  // The Admin API answers 412 to the same PUT.
  const put = await fetch(`${admin}/api/config`, {
    method: 'PUT',
    headers: { authorization: OPS, 'content-type': 'application/json', 'if-match': etag },
    body: JSON.stringify({ routes: [] }),
  });
  assert.equal(put.status, 412);
});

test('a file reload and a SIGHUP each make a version; an unchanged reload makes none', async () => {
  const start = (await newest()).version;
  // The running configuration as canonical YAML, edited (the persisted file keeps its own style).
  const text = (await cli(withAdmin(['dump']))).stdout;
  assert.match(text, /response_example: bye\n/);
  writeFileSync(
    config.gatewayPath,
    text.replace('response_example: bye\n', 'response_example: bye from file\n'),
  );
  assert.equal((await write('/api/config/reload', 'POST')).status, 200);
  assert.equal(await body('/bye'), 'bye from file');
  const file = await newest();
  assert.equal(file.version, start + 1);
  assert.equal(file.source, 'file');
  assert.equal(file.summary, 'policies ~1');
  // The same file again: no new version.
  assert.equal((await write('/api/config/reload', 'POST')).status, 200);
  assert.equal((await newest()).version, start + 1);

  writeFileSync(
    config.gatewayPath,
    text.replace('response_example: bye\n', 'response_example: bye from signal\n'),
  );
  gw.child.kill('SIGHUP');
  await waitFor(async () => (await body('/bye')) === 'bye from signal', {
    timeoutMs: 15_000,
    what: 'SIGHUP reload',
  });
  await waitFor(async () => (await newest()).version === start + 2, {
    timeoutMs: 5_000,
    what: 'signal version',
  });
  const signal = await newest();
  assert.equal(signal.source, 'signal');
  assert.equal(signal.user, null);
});

test('rollback to version 1: a new version with the sha256 of version 1, and the dump equals the first dump', async () => {
  const beforeRollback = (await newest()).version;
  const res = await write('/api/config/rollback', 'POST', { version: 1 });
  assert.equal(res.status, 200);
  const entry = (await res.json()) as Version & { rolled_back_to: number };
  const first = (await history()).find((v) => v.version === 1) as Version;
  assert.equal(entry.source, 'rollback');
  assert.equal(entry.user, 'ops');
  assert.equal(entry.sha256, first.sha256);
  assert.equal(entry.version, beforeRollback + 1);
  assert.equal(entry.rolled_back_to, 1);
  assert.match(entry.summary, /rollback to version 1/);
  assert.deepEqual((await newest()).version, entry.version);
  const dump = await cli(withAdmin(['dump']));
  assert.equal(
    dump.stdout,
    firstDump,
    'after a rollback to version 1 the dump equals the first dump byte for byte',
  );
  assert.equal(await body('/hello'), 'hello');

  const yaml = await fetch(`${admin}/api/config/history/1`, { headers: { authorization: OPS } });
  assert.equal(yaml.status, 200);
  assert.match(yaml.headers.get('content-type') ?? '', /yaml/);
  assert.equal(await yaml.text(), firstDump);
  const unknown = await fetch(`${admin}/api/config/history/999`, { headers: { authorization: OPS } });
  assert.equal(unknown.status, 404);
  const missing = await write('/api/config/rollback', 'POST', { version: 999 });
  assert.equal(missing.status, 404);
  const viewer = await write(
    '/api/config/rollback',
    'POST',
    { version: 1 },
    basic('watcher', 'watcher-password'),
  );
  assert.equal(viewer.status, 403);
});

test('the audit log lists admin changes with user, method, resource, both sha256 and status', async () => {
  const res = await fetch(`${admin}/api/audit`, { headers: { authorization: OPS } });
  assert.equal(res.status, 200);
  const { entries } = (await res.json()) as {
    entries: {
      time: string;
      user: string | null;
      method: string;
      resource: string;
      before_sha256: string;
      after_sha256: string;
      status: number;
    }[];
  };
  const post = entries.find((e) => e.method === 'POST' && e.resource === '/api/routes');
  assert.ok(post, JSON.stringify(entries));
  assert.equal(post.user, 'ops');
  assert.equal(post.status, 201);
  assert.notEqual(post.before_sha256, post.after_sha256);
  const refused = entries.find((e) => e.method === 'PUT' && e.resource === '/api/config' && e.status === 412);
  assert.ok(refused, 'a refused write is audited too');
  assert.equal(refused.before_sha256, refused.after_sha256);
  const rollback = entries.find((e) => e.resource === '/api/config/rollback' && e.status === 200);
  assert.ok(rollback);
  const v1 = (await history()).find((v) => v.version === 1);
  // A rollback's after_sha256 is its target's (later changes came after it).
  assert.equal(rollback.after_sha256, v1?.sha256);
  // Newest first.
  assert.ok(
    entries[0] !== undefined &&
      entries.at(-1) !== undefined &&
      entries[0].time >= (entries.at(-1)?.time ?? ''),
  );
  assert.ok(existsSync(`${config.gatewayPath}.audit.jsonl`));
});

test('the history survives a restart and is bounded by admin.history.max_versions', async () => {
  const kept = await history();
  await gw.stop();
  gw = await startSpawned(config, { ALICE_KEY: 'alice-secret-key' });
  // The same content at start is not a new version.
  assert.deepEqual(await history(), kept);
  for (let i = 0; i < 9; i++) {
    const res = await write(`/api/routes`, 'POST', {
      name: `extra-${i}`,
      match: { path: `/extra-${i}` },
      policy: 'bye-policy',
    });
    assert.equal(res.status, 201);
  }
  const versions = await history();
  assert.equal(versions.length, 8);
  const numbers = versions.map((v) => v.version);
  assert.deepEqual(
    numbers,
    [...numbers].sort((a, b) => b - a),
    'newest first',
  );
  assert.equal(numbers[0], (kept[0]?.version ?? 0) + 9);
  const gone = await fetch(`${admin}/api/config/history/1`, { headers: { authorization: OPS } });
  assert.equal(gone.status, 404, 'a version beyond max_versions is dropped');
  const oldest = numbers.at(-1) as number;
  const kept8 = await fetch(`${admin}/api/config/history/${oldest}`, { headers: { authorization: OPS } });
  assert.equal(kept8.status, 200);
});
