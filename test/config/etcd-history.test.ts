/**
 * Issue 34 item 2 with `config.source: etcd`: the configuration history is kept in etcd
 * (`<prefix>.history/index` and `<prefix>.history/v<N>`, docs/etcd.md#history), so it survives a
 * restart and is one history for every gateway on the prefix. Real etcd, two real gateway
 * processes on one prefix: concurrent Admin writes on both get distinct, increasing versions
 * with none lost; a rollback on one is listed (and served) by the other; a change written with
 * etcd's own API is one version, not one per gateway; a restart continues the numbering without a
 * duplicate `startup` entry; `admin.history.max_versions` bounds the index and the stored keys.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { skipWithoutEtcd, startEtcd, type EtcdServer } from '../support/etcd.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const PREFIX = '/shared';
const MAX_VERSIONS = 16;
const AUTH = `Basic ${Buffer.from('admin:secret-password').toString('base64')}`;

interface Entry {
  version: number;
  time: string;
  user: string | null;
  source: string;
  summary: string;
  sha256: string;
}

const SEED = {
  routes: [{ name: 'hello', match: { path: '/hello' }, policy: 'hello' }],
  policies: [
    {
      name: 'hello',
      nodes: [
        { id: 'in', type: 'listener' },
        { id: 'm', type: 'mocking', config: { response_example: 'hello' } },
        { id: 'out', type: 'client' },
      ],
      edges: [
        { from: 'in.out', to: 'm.in' },
        { from: 'm.success', to: 'out.in' },
      ],
    },
  ],
};

const route = (name: string) => ({ name, match: { path: `/${name}` }, policy: 'hello' });

interface Member {
  name: string;
  admin: string;
  process: GatewayProcess;
  files: { system: string; gateway: string };
}

function memberFiles(dir: string, name: string, endpoint: string, ports: [number, number], prefix = PREFIX) {
  const system = join(dir, `${name}-system.yaml`);
  const gateway = join(dir, `${name}-gateway.yaml`);
  writeFileSync(
    system,
    [
      `listener: { bind: 127.0.0.1, port: ${ports[0]} }`,
      `admin: { bind: 127.0.0.1, port: ${ports[1]}, username: admin, password: secret-password, history: { max_versions: ${MAX_VERSIONS} } }`,
      `config: { source: etcd, etcd: { endpoints: ['${endpoint}'], prefix: ${prefix}, timeout_ms: 5000 } }`,
      'logging: { level: warn }',
    ].join('\n'),
  );
  writeFileSync(gateway, JSON.stringify(SEED));
  return { system, gateway, admin: `http://127.0.0.1:${ports[1]}` };
}

async function launch(
  name: string,
  files: { system: string; gateway: string },
  admin: string,
): Promise<Member> {
  const process = spawnGateway(['--system-config', files.system, '--gateway-config', files.gateway]);
  try {
    await waitForHttp(`${admin}/readyz`, 60000);
    await waitFor(async () => (await fetch(`${admin}/readyz`)).status === 200, {
      timeoutMs: 30000,
      what: `${name} ready`,
    });
  } catch (err) {
    await process.stop();
    throw new Error(`${(err as Error).message}\n${process.output()}`, { cause: err });
  }
  return { name, admin, process, files };
}

async function call(
  member: Member,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${member.admin}${path}`, {
    method,
    headers: { authorization: AUTH, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, text: await res.text() };
}

async function history(member: Member): Promise<Entry[]> {
  const res = await call(member, 'GET', '/api/config/history');
  assert.equal(res.status, 200, res.text);
  return (JSON.parse(res.text) as { versions: Entry[] }).versions;
}

/** The route names of history version `version`, as `member` serves it. */
async function routesOf(member: Member, version: number): Promise<Set<string>> {
  const res = await call(member, 'GET', `/api/config/history/${version}`);
  assert.equal(res.status, 200, `${member.name} version ${version}: ${res.text}`);
  const config = parse(res.text) as { routes?: { name: string }[] };
  return new Set((config.routes ?? []).map((r) => r.name));
}

/** Newest first, consecutive, no sha256 twice in a row, at most MAX_VERSIONS. */
function assertWellFormed(entries: Entry[], what: string): void {
  assert.ok(entries.length > 0 && entries.length <= MAX_VERSIONS, `${what}: ${entries.length} entries`);
  entries.forEach((e, i) => {
    if (i > 0) assert.equal(e.version, entries[i - 1]!.version - 1, `${what}: versions consecutive`);
  });
}

const skip = skipWithoutEtcd();
let etcd: EtcdServer;
before(async () => {
  if (skip === false) etcd = await startEtcd();
});
after(async () => etcd?.stop());

describe('issue 34: the configuration history in etcd, two gateways on one prefix', { skip }, () => {
  let dir: ReturnType<typeof tempDir>;
  let a: Member;
  let b: Member;

  before(async () => {
    dir = tempDir();
    const fa = memberFiles(dir.path, 'a', etcd.url, [await freePort(), await freePort()]);
    const fb = memberFiles(dir.path, 'b', etcd.url, [await freePort(), await freePort()]);
    a = await launch('a', fa, fa.admin);
    b = await launch('b', fb, fb.admin);
  });
  after(async () => {
    await Promise.all([a?.process.stop(), b?.process.stop()]);
    dir?.remove();
  });

  test('the first gateway seeds version 1 (startup); the second, same content, adds no startup entry', async () => {
    for (const member of [a, b]) {
      const entries = await history(member);
      assert.equal(entries.length, 1, `${member.name}: ${JSON.stringify(entries)}`);
      assert.equal(entries[0]!.version, 1);
      assert.equal(entries[0]!.source, 'startup');
      assert.equal(entries[0]!.user, null);
    }
    const stored = await etcd.keys(`${PREFIX}.history/`);
    assert.deepEqual(stored, [`${PREFIX}.history/index`, `${PREFIX}.history/v1`]);
  });

  test('12 concurrent Admin writes (6 rounds of one POST to each) get distinct, increasing versions, none lost, listed alike by both', async () => {
    for (let i = 1; i <= 6; i++) {
      const [ra, rb] = await Promise.all([
        call(a, 'POST', '/api/routes', route(`a-${i}`)),
        call(b, 'POST', '/api/routes', route(`b-${i}`)),
      ]);
      assert.equal(ra.status, 201, ra.text);
      assert.equal(rb.status, 201, rb.text);
    }
    const [ha, hb] = [await history(a), await history(b)];
    assert.deepEqual(ha, hb, 'one history for both gateways');
    assertWellFormed(ha, 'after the writes');
    assert.equal(ha[0]!.version, 13, 'startup + 12 writes: every write has its version');
    const writes = ha.filter((e) => e.version > 1);
    assert.ok(
      writes.every((e) => e.source === 'admin' && e.user === 'admin'),
      JSON.stringify(writes),
    );
    assert.equal(new Set(writes.map((e) => e.sha256)).size, writes.length, 'each a different content');
    assert.ok(
      writes.every((e) => e.summary === 'routes +1'),
      JSON.stringify(writes),
    );
    // Each version holds the previous one's routes and the one its write added.
    const added: string[] = [];
    let previous = await routesOf(a, 1);
    for (const entry of [...writes].reverse()) {
      const routes = await routesOf(entry.version % 2 === 0 ? a : b, entry.version);
      assert.ok(
        [...previous].every((r) => routes.has(r)),
        `version ${entry.version} lost nothing`,
      );
      added.push(...[...routes].filter((r) => !previous.has(r)));
      previous = routes;
    }
    added.sort();
    const expected = [1, 2, 3, 4, 5, 6].flatMap((i) => [`a-${i}`, `b-${i}`]).sort();
    assert.deepEqual(added, expected, 'each version names the route its write added');
  });

  test("a rollback on gateway A is the newest version in gateway B's history, with its target's sha256 and content", async () => {
    const before = await history(a);
    const target = before.find((e) => e.version === 5)!;
    const rolled = await call(a, 'POST', '/api/config/rollback', { version: 5 });
    assert.equal(rolled.status, 200, rolled.text);
    const answer = JSON.parse(rolled.text) as Entry & { rolled_back_to: number };
    assert.equal(answer.version, before[0]!.version + 1);
    assert.equal(answer.rolled_back_to, 5);
    const seen = await history(b);
    assert.equal(seen[0]!.version, answer.version, JSON.stringify(seen[0]));
    assert.equal(seen[0]!.source, 'rollback');
    assert.equal(seen[0]!.sha256, target.sha256);
    assert.equal(seen[0]!.summary, 'rollback to version 5');
    const [fromA, fromB] = [
      await call(a, 'GET', '/api/config/history/5'),
      await call(b, 'GET', `/api/config/history/${answer.version}`),
    ];
    assert.equal(fromB.status, 200, fromB.text);
    assert.equal(fromB.text, fromA.text, 'B serves the rollback version, equal to version 5');
    // B runs it too (its watch), and its reload added no version of its own.
    await waitFor(async () => (await call(b, 'GET', '/api/config')).text === fromA.text, {
      timeoutMs: 20000,
      intervalMs: 100,
      what: 'B runs the rolled-back configuration',
    });
    assert.equal((await history(b))[0]!.version, answer.version);
    // A rollback from B to a version A's write made works the same way.
    const back = await call(b, 'POST', '/api/config/rollback', { version: before[0]!.version });
    assert.equal(back.status, 200, back.text);
    assert.equal((await history(a))[0]!.sha256, before[0]!.sha256);
  });

  test("a change written with etcd's own API is one version (source etcd), not one per gateway", async () => {
    const newest = (await history(a))[0]!;
    await etcd.put(`${PREFIX}/routes/external`, JSON.stringify(route('external')));
    await waitFor(async () => (await history(a))[0]!.version > newest.version, {
      timeoutMs: 20000,
      intervalMs: 100,
      what: 'a version for the etcd write',
    });
    // Both gateways run it before the history is compared again.
    for (const member of [a, b])
      await waitFor(async () => (await call(member, 'GET', '/api/config')).text.includes('external'), {
        timeoutMs: 20000,
        intervalMs: 100,
        what: `${member.name} runs the external route`,
      });
    const entries = await history(b);
    assert.equal(entries[0]!.version, newest.version + 1, JSON.stringify(entries.slice(0, 3)));
    assert.equal(entries[0]!.source, 'etcd');
    assert.equal(entries[0]!.user, null);
    assert.equal(entries[0]!.summary, 'routes +1');
    assert.ok((await routesOf(a, entries[0]!.version)).has('external'));
    assert.deepEqual(await history(a), entries);
  });

  test('the history survives a restart of both gateways: numbering continues, no duplicate startup entry', async () => {
    const before = await history(a);
    await Promise.all([a.process.stop(), b.process.stop()]);
    a = await launch('a', a.files, a.admin);
    b = await launch('b', b.files, b.admin);
    assert.deepEqual(await history(a), before, 'same versions after the restart, none added');
    assert.deepEqual(await history(b), before);
    const created = await call(b, 'POST', '/api/routes', route('after-restart'));
    assert.equal(created.status, 201, created.text);
    const entries = await history(a);
    assert.equal(entries[0]!.version, before[0]!.version + 1, 'the counter was not reset');
    assert.equal(entries[0]!.source, 'admin');
    assert.ok((await routesOf(b, entries[0]!.version)).has('after-restart'));
  });

  test('admin.history.max_versions bounds the index and the stored versions; a dropped version answers 404', async () => {
    for (let i = 1; (await history(a))[0]!.version < MAX_VERSIONS + 3; i++) {
      const created = await call(i % 2 === 0 ? a : b, 'POST', '/api/routes', route(`more-${i}`));
      assert.equal(created.status, 201, created.text);
    }
    const entries = await history(a);
    assert.deepEqual(await history(b), entries);
    assert.equal(entries.length, MAX_VERSIONS);
    assertWellFormed(entries, 'bounded');
    const kept = new Set(entries.map((e) => `${PREFIX}.history/v${e.version}`));
    const stored = (await etcd.keys(`${PREFIX}.history/`)).filter((k) => !k.endsWith('/index'));
    assert.deepEqual(new Set(stored), kept, 'older version keys deleted');
    const oldest = entries.at(-1)!.version;
    assert.equal((await call(b, 'GET', `/api/config/history/${oldest - 1}`)).status, 404);
    assert.equal((await call(b, 'GET', `/api/config/history/${oldest}`)).status, 200);
    const refused = await call(a, 'POST', '/api/config/rollback', { version: 1 });
    assert.equal(refused.status, 404, refused.text);
  });
});

const BIN = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));

/** The real CLI, with the admin credentials in the environment. */
function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, SWITCHYARD_ADMIN_USER: 'admin', SWITCHYARD_ADMIN_PASSWORD: 'secret-password' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('issue 34: the CI-style script against a gateway on etcd', { skip }, () => {
  let dir: ReturnType<typeof tempDir>;
  let member: Member;

  before(async () => {
    dir = tempDir();
    const files = memberFiles(dir.path, 'ci', etcd.url, [await freePort(), await freePort()], '/ci');
    member = await launch('ci', files, files.admin);
  });
  after(async () => {
    await member?.process.stop();
    dir?.remove();
  });

  test('dump → edit → diff (exit 1) → apply → diff (exit 0) → rollback to the first version → dump byte-identical', async () => {
    const withAdmin = (args: string[]) => [...args, '--admin-url', member.admin];
    const first = await cli(withAdmin(['dump']));
    assert.equal(first.code, 0, first.stderr);
    const edited = join(dir.path, 'edited.yaml');
    writeFileSync(edited, first.stdout.replace('response_example: hello', 'response_example: hello again'));
    const diff = await cli(withAdmin(['diff', '--gateway-config', edited]));
    assert.equal(diff.code, 1, diff.stderr);
    assert.deepEqual(
      diff.stdout.split('\n').filter((l) => /^[+~-] [a-z_]+\//.test(l)),
      ['~ policies/hello'],
    );
    const applied = await cli(withAdmin(['apply', '--gateway-config', edited]));
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, /version 2/);
    const again = await cli(withAdmin(['diff', '--gateway-config', edited]));
    assert.equal(again.code, 0, again.stdout + again.stderr);
    const versions = await history(member);
    assert.deepEqual(
      versions.map((v) => [v.version, v.source]),
      [
        [2, 'apply'],
        [1, 'startup'],
      ],
    );
    assert.deepEqual(await etcd.keys('/ci.history/'), [
      '/ci.history/index',
      '/ci.history/v1',
      '/ci.history/v2',
    ]);
    const rolled = await call(member, 'POST', '/api/config/rollback', { version: 1 });
    assert.equal(rolled.status, 200, rolled.text);
    const dump = await cli(withAdmin(['dump']));
    assert.equal(
      dump.stdout,
      first.stdout,
      'after the rollback the dump equals the first dump byte for byte',
    );
    const newest = (await history(member))[0]!;
    assert.deepEqual([newest.version, newest.source, newest.sha256], [3, 'rollback', versions[1]!.sha256]);
  });
});
