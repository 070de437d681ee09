/**
 * `switchyard migrate` over the reference implementation's corpus: files that
 * fail only for what earlier releases allowed come out validating, files that
 * already validate come out byte for byte, and the reference e2e fixture as it
 * was before the hand-added edges gets exactly those edges.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { compileIssues, migrateGatewayText } from '../../src/migrate/migrate.js';
import { expandBench } from '../support/compat-corpus.js';
import { tempDir } from '../support/temp-dir.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const shared = join(repo, '..', 'shared');
const corpus = process.env.SWITCHYARD_COMPAT_CORPUS ?? join(shared, 'compat-corpus');
const referenceE2e = join(shared, 'reference-e2e');

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : /\.ya?ml$/.test(path) ? [path] : [];
  });
}

const isGateway = (doc: unknown) =>
  typeof doc === 'object' &&
  doc !== null &&
  ['routes', 'policies', 'supernodes', 'plugin_configs', 'stores', 'consumers'].some((k) => k in doc);

/** The corpus README's "env vars with no default", set to plausible values. */
const env: NodeJS.ProcessEnv = {
  HOME: '/tmp',
  CLIENT_ID: 'featherbit',
  CLIENT_SECRET: 'client-secret',
  KEYCLOAK_HOST: 'keycloak',
  KEYCLOAK_PORT: '8443',
  REALM_NAME: 'featherbit',
  SESSION_SECRET: 'session-secret',
  DEPLOYMENT_BASE_URL: 'https://app.example.com',
};

/** Files whose referenced files are not in the corpus (README): Lua scripts under /etc/gateway/plugins. */
const MISSING_REFERENCED_FILES = new Set([
  'new/examples/lua-scripts/config/gateway.yaml',
  'v0.3/examples/gateway-with-scripts.yaml',
]);

if (!existsSync(corpus)) {
  test('migrate: compat corpus', { skip: `corpus not found at ${corpus}` }, () => {});
} else {
  for (const file of walk(corpus)) {
    const name = relative(corpus, file);
    const raw = readFileSync(file, 'utf8');
    const text = file.includes('/bench/') ? expandBench(raw) : raw;
    if (!isGateway(parse(text))) continue;
    const before = compileIssues(text, { env });
    if (before.length === 0) {
      test(`migrate: ${name} already validates and comes out unchanged`, () => {
        const result = migrateGatewayText(text, { env });
        assert.deepEqual(result.changes, []);
        assert.equal(result.text, text);
        assert.deepEqual(result.errors, []);
      });
      continue;
    }
    if (MISSING_REFERENCED_FILES.has(name)) {
      test(`migrate: ${name} is fixed except for the Lua files it references, which the corpus lacks`, () => {
        const result = migrateGatewayText(text, { env });
        assert.ok(result.changes.length > 0);
        assert.ok(result.errors.length > 0);
        for (const issue of result.errors)
          assert.match(issue.message, /LUA_LOAD_ERROR: cannot read \/etc\/gateway\/plugins\/.*ENOENT/);
      });
      continue;
    }
    test(`migrate: ${name} does not validate today and validates after migrate`, () => {
      const result = migrateGatewayText(text, { env });
      assert.ok(result.changes.length > 0);
      assert.deepEqual(
        result.errors.map((i) => i.message),
        [],
      );
      assert.deepEqual(compileIssues(result.text, { env }), []);
    });
  }
}

/** `from → to` of every edge, keyed by policy name. */
function edgesByPolicy(text: string): Map<string, string[]> {
  const doc = parse(text) as { policies: { name: string; edges?: { from: string; to: string }[] }[] };
  return new Map(doc.policies.map((p) => [p.name, (p.edges ?? []).map((e) => `${e.from} → ${e.to}`)]));
}

/** Edges of `after` not in `before`, as `policy: from → to`. */
function addedEdges(before: string, after: string): string[] {
  const old = edgesByPolicy(before);
  const added: string[] = [];
  for (const [policy, edges] of edgesByPolicy(after)) {
    const rest = [...(old.get(policy) ?? [])];
    for (const edge of edges) {
      const at = rest.indexOf(edge);
      if (at >= 0) rest.splice(at, 1);
      else added.push(`${policy}: ${edge}`);
    }
  }
  return added.sort();
}

const fixture = join(referenceE2e, 'e2e', 'fixtures', 'gateway.yaml');
const edits = join(referenceE2e, 'switchyard-edits.diff');
test(
  'migrate: the reference e2e fixture before the Switchyard edits gets exactly the 24 hand-added edges, to client',
  { skip: existsSync(fixture) && existsSync(edits) ? false : 'reference-e2e not found' },
  (t) => {
    const dir = tempDir('switchyard-migrate-');
    t.after(() => dir.remove());
    // Reverse-apply only the fixture's part of the diff into a copy.
    const diff = readFileSync(edits, 'utf8');
    const start = diff.indexOf('--- a/e2e/fixtures/gateway.yaml');
    const end = diff.indexOf('\n--- a/', start + 1);
    writeFileSync(join(dir.path, 'fixture.diff'), diff.slice(start, end < 0 ? undefined : end + 1));
    const copy = join(dir.path, 'e2e', 'fixtures', 'gateway.yaml');
    mkdirSync(dirname(copy), { recursive: true });
    copyFileSync(fixture, copy);
    execFileSync('patch', ['-R', '-p1', '-s', '-i', 'fixture.diff'], { cwd: dir.path });
    const original = readFileSync(copy, 'utf8');
    const edited = readFileSync(fixture, 'utf8');

    const handAdded = addedEdges(original, edited);
    assert.equal(handAdded.length, 24);
    assert.ok(compileIssues(original, { env }).length >= 24);

    const result = migrateGatewayText(original, { env });
    assert.deepEqual(result.errors, []);
    assert.deepEqual(compileIssues(result.text, { env }), []);
    assert.deepEqual(addedEdges(original, result.text), handAdded);
    assert.equal(result.changes.length, 24);
    assert.ok(handAdded.every((e) => e.endsWith('→ client.in')));
    // Comments survive.
    assert.ok(result.text.includes('# Seed config for the e2e suite.'));
  },
);

test('migrate: a policy without a client node gets one, and unwired ports go to it', () => {
  const text = `policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: auth, type: key-auth, config: { keys: [k] } }
      - { id: m, type: mocking, config: { response_example: ok } }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: m.in }
routes:
  - { name: r, match: { path: /x }, policy: p }
`;
  const result = migrateGatewayText(text, { env });
  assert.deepEqual(
    result.errors.map((e) => e.message),
    [],
  );
  assert.ok(result.changes.some((c) => c.includes("added client node 'client'")));
  assert.ok(result.changes.some((c) => c.includes('auth.denied → client.in')));
  assert.ok(result.changes.some((c) => c.includes('m.success → client.in')));
});

test('migrate: with several client nodes the one the success path reaches is picked and the choice listed', () => {
  const text = `policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: other, type: client }
      - { id: auth, type: key-auth, config: { keys: [k] } }
      - { id: done, type: client }
      - { id: eh, type: error-handler }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: done.in }
      - { from: auth.error, to: eh.in }
      - { from: eh.success, to: other.in }
routes:
  - { name: r, match: { path: /x }, policy: p }
`;
  const result = migrateGatewayText(text, { env });
  assert.deepEqual(result.errors, []);
  assert.ok(result.changes.some((c) => c.includes('auth.denied → done.in')));
  assert.ok(result.undecided.some((u) => u.includes("'done'")));
});

const withUnknownKeys = `routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: hi, colour: red, content_typ: text/plain } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`;

test('migrate: unknown node-config keys stay errors unless --drop-unknown-keys', () => {
  const kept = migrateGatewayText(withUnknownKeys, { env });
  assert.deepEqual(kept.changes, []);
  assert.equal(kept.text, withUnknownKeys);
  assert.deepEqual(kept.errors.map((e) => e.path).sort(), [
    'policies[0].nodes[1].config.colour',
    'policies[0].nodes[1].config.content_typ',
  ]);
});

test('migrate: --drop-unknown-keys removes each unknown node-config key and lists it', () => {
  const result = migrateGatewayText(withUnknownKeys, { env, dropUnknownKeys: true });
  assert.deepEqual(result.errors, []);
  assert.equal(result.changes.length, 2);
  assert.ok(result.changes.some((c) => c.includes("dropped unknown config key 'colour'")));
  assert.ok(
    result.changes.some((c) =>
      c.includes(
        "dropped unknown config key 'content_typ' (policies[0].nodes[1].config.content_typ) (did you mean 'content_type'?)",
      ),
    ),
    result.changes.join('\n'),
  );
  assert.match(result.text, /config: \{ response_example: hi \}/);
});

test('F4: migrate keeps fan-in as written: a node shared by several branches is not copied', () => {
  // cors.preflight is unwired (migrate wires it); both the cache hit and the upstream enter `headers`.
  const text = `policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: cors, type: cors }
      - { id: lookup, type: proxy-cache, config: { phase: lookup, id: c } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: 9 }] } }
      - { id: store, type: proxy-cache, config: { phase: store, id: c } }
      - { id: headers, type: response-rewrite, config: { headers: { set: { x-shared: yes } } } }
      - { id: client, type: client }
    edges:
      - { from: in.out, to: cors.in }
      - { from: cors.success, to: lookup.in }
      - { from: lookup.success, to: up.in }
      - { from: lookup.hit, to: headers.in }
      - { from: up.success, to: store.in }
      - { from: store.success, to: headers.in }
      - { from: store.hit, to: headers.in }
      - { from: headers.success, to: client.in }
routes:
  - { name: r, match: { path: /x }, policy: p }
`;
  const result = migrateGatewayText(text, { env });
  assert.deepEqual(result.errors, []);
  assert.deepEqual(result.changes, [
    "policy 'p': wired cors.preflight → client.in (node 'cors', port 'preflight')",
  ]);
  assert.deepEqual(addedEdges(text, result.text), ['p: cors.preflight → client.in']);
  const doc = parse(result.text) as { policies: { nodes: { id: string }[]; edges: { to: string }[] }[] };
  const policy = doc.policies[0]!;
  assert.deepEqual(
    policy.nodes.map((n) => n.id),
    ['in', 'cors', 'lookup', 'up', 'store', 'headers', 'client'],
  );
  assert.equal(policy.edges.filter((e) => e.to === 'headers.in').length, 3);

  // Once wired, the same file needs no change at all: fan-in is not something to fix.
  const again = migrateGatewayText(result.text, { env });
  assert.deepEqual(again.changes, []);
  assert.equal(again.text, result.text);
});
