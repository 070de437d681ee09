import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { checkGatewayShape, parseGatewayConfig, type GatewayConfig } from '../../src/config/gateway.js';
import { persistGatewayConfig, renderGatewayYaml, writeFileAtomic } from '../../src/config/persist.js';
import { tempDir } from '../support/temp-dir.js';
import { BASE_YAML, getText, mockPolicy, read, startAdmin } from './harness.js';

const COMMENTED = `# Top comment: keep me
routes:
  # Answered by the gateway itself.
  - name: hello
    match: { path: /hello, methods: [GET] }
    policy: p # trailing comment

  # Proxied
  - name: api
    match:
      path: \${API_PATH:-/api/*}
    policy: p
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: "\${GREETING:-hi}" } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
# end of file
`;

const reparse = (text: string): GatewayConfig => checkGatewayShape(parse(text) ?? {});

test('persist: untouched parts keep their comments, flow style and ${ENV} placeholders', () => {
  const current = parseGatewayConfig(COMMENTED);
  const next = structuredClone(current);
  next.routes.push({ name: 'new', match: { path: '/new' }, policy: 'p' });
  const text = renderGatewayYaml(COMMENTED, next);
  for (const kept of [
    '# Top comment: keep me',
    '# Answered by the gateway itself.',
    'policy: p # trailing comment',
    '# Proxied',
    'path: ${API_PATH:-/api/*}',
    '- { id: m, type: mocking, config: { response_example: "${GREETING:-hi}" } }',
    '# end of file',
  ]) {
    assert.ok(text.includes(kept), `missing ${kept}\n${text}`);
  }
  assert.deepEqual(reparse(text), next);
});

test('persist: a changed item is rebuilt but keeps the comment above it; removed items disappear', () => {
  const current = parseGatewayConfig(COMMENTED);
  const next = structuredClone(current);
  (next.routes[1] as { policy: string }).policy = 'q';
  next.policies.push({ ...mockPolicy('q', 'q'), description: 'second' });
  next.routes.splice(0, 1);
  const text = renderGatewayYaml(COMMENTED, next);
  assert.ok(text.includes('# Proxied'));
  assert.ok(!text.includes('name: hello'));
  assert.ok(text.includes('path: ${API_PATH:-/api/*}'));
  assert.deepEqual(reparse(text), next);
});

/** A small deterministic PRNG so the property test is repeatable. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

test('persist: random edit sequences always parse back to exactly the new config', () => {
  const random = rng(42);
  let text = COMMENTED;
  let config = parseGatewayConfig(text);
  for (let step = 0; step < 200; step++) {
    const next = structuredClone(config);
    const pick = Math.floor(random() * 6);
    const n = Math.floor(random() * 1000);
    if (pick === 0) next.routes.push({ name: `r${n}`, match: { path: `/r${n}` }, policy: 'p' });
    else if (pick === 1 && next.routes.length > 0)
      next.routes.splice(Math.floor(random() * next.routes.length), 1);
    else if (pick === 2 && next.routes.length > 0) {
      const r = next.routes[Math.floor(random() * next.routes.length)];
      if (r !== undefined)
        r.match = random() < 0.5 ? { path: `/m${n}`, methods: ['POST'] } : { host: `h${n}.example` };
    } else if (pick === 3) {
      next.stores = random() < 0.5 ? [] : [{ name: `s${n}`, type: 'redis', url: '${REDIS:-redis://x}' }];
    } else if (pick === 4) {
      const m = next.policies[0]?.nodes[1];
      if (m !== undefined) m.config = { response_example: `v${n}`, response_status: 200 + (n % 50) };
    } else {
      next.consumers.push({ name: `c${n}`, credentials: { 'key-auth': { key: `k${n}` } } });
    }
    const rendered = renderGatewayYaml(text, next);
    assert.deepEqual(reparse(rendered), checkGatewayShape(structuredClone(next)), `step ${step}`);
    assert.ok(rendered.includes('# Top comment: keep me'), `step ${step}`);
    text = rendered;
    config = next;
  }
});

test('persist: an empty, comment-only, broken or missing file is written fresh and correct', async () => {
  const next = parseGatewayConfig(BASE_YAML);
  for (const current of [undefined, '', '# only a comment\n', 'routes: [ {\n']) {
    const text = renderGatewayYaml(current, next);
    assert.deepEqual(reparse(text), next, JSON.stringify(current));
    if (current === '# only a comment\n') assert.ok(text.includes('# only a comment'));
  }
  const dir = tempDir();
  try {
    const file = join(dir.path, 'gateway.yaml');
    const written = (await persistGatewayConfig(file, next)).toString('utf8');
    assert.equal(readFileSync(file, 'utf8'), written);
    assert.deepEqual(reparse(written), next);
  } finally {
    dir.remove();
  }
});

test('persist: the atomic write leaves no temp file, keeps the mode and writes through a symlink', async () => {
  const dir = tempDir();
  try {
    const real = join(dir.path, 'real.yaml');
    const link = join(dir.path, 'gateway.yaml');
    writeFileSync(real, 'old\n');
    chmodSync(real, 0o640);
    symlinkSync(real, link);
    await writeFileAtomic(link, 'new\n');
    assert.equal(readFileSync(real, 'utf8'), 'new\n');
    assert.equal(statSync(real).mode & 0o777, 0o640);
    assert.ok(statSync(link, { throwIfNoEntry: true }).isFile());
    assert.deepEqual(readdirSync(dir.path).sort(), ['gateway.yaml', 'real.yaml']);
  } finally {
    dir.remove();
  }
});

test('persist: an admin change is written to gateway.yaml, comments kept, and served at once', async () => {
  const h = await startAdmin({ onDisk: true });
  try {
    const file = h.file as string;
    const res = await h.call('POST', '/api/routes', {
      name: 'two',
      match: { path: '/two' },
      policy: 'hello-policy',
    });
    assert.equal(res.status, 201);
    const text = readFileSync(file, 'utf8');
    assert.ok(text.includes('# seeded by the admin tests'));
    assert.ok(text.includes('# the first route'));
    assert.deepEqual(
      reparse(text).routes.map((r) => r.name),
      ['hello', 'two'],
    );
    assert.deepEqual(await getText(`${h.data}/two`), { status: 200, text: 'hello' });
    assert.equal((await h.call('DELETE', '/api/routes/two')).status, 200);
    assert.equal(readFileSync(file, 'utf8').includes('name: two'), false);
  } finally {
    await h.stop();
  }
});

test('persist: a rejected change leaves the file byte-for-byte unchanged', async () => {
  const h = await startAdmin({ onDisk: true });
  try {
    const file = h.file as string;
    const before = readFileSync(file);
    const etag = (await h.call('GET', '/api/routes/hello')).headers.get('etag') as string;
    const attempts: [string, string, unknown, Record<string, string>?][] = [
      ['POST', '/api/routes', { name: 'x', match: { path: '/x' }, policy: 'missing' }],
      ['POST', '/api/routes', { name: 'hello', match: { path: '/x' }, policy: 'hello-policy' }],
      ['POST', '/api/routes', '{not json'],
      ['PUT', '/api/routes/nope', { match: {}, policy: 'missing' }],
      ['PUT', '/api/policies/hello-policy', { nodes: [{ id: 'in', type: 'listener' }], edges: [] }],
      ['DELETE', '/api/policies/hello-policy', undefined],
      [
        'PUT',
        '/api/routes/hello',
        { match: { path: '/y' }, policy: 'hello-policy' },
        { 'if-match': '"stale"' },
      ],
    ];
    for (const [method, path, body, headers] of attempts) {
      const res = await h.call(method, path, body, headers);
      assert.ok(res.status >= 400, `${method} ${path} → ${res.status}`);
      assert.deepEqual(readFileSync(file), before, `${method} ${path} changed the file`);
    }
    assert.ok(etag);
    assert.deepEqual(await getText(`${h.data}/hello`), { status: 200, text: 'hello' });
  } finally {
    await h.stop();
  }
});

test('persist: with config.persist false admin changes stay in memory and the file is untouched', async () => {
  const h = await startAdmin({ onDisk: true, system: 'config: { persist: false }' });
  try {
    const file = h.file as string;
    const before = readFileSync(file);
    assert.equal(
      (await h.call('POST', '/api/routes', { name: 'mem', match: { path: '/mem' }, policy: 'hello-policy' }))
        .status,
      201,
    );
    assert.equal((await getText(`${h.data}/mem`)).status, 200);
    assert.deepEqual(readFileSync(file), before);
    assert.equal((await read(await h.call('GET', '/api/status'))).body instanceof Object, true);
  } finally {
    await h.stop();
  }
});

test('persist: our own write is recognized by the file watcher and not reloaded', async () => {
  const h = await startAdmin({ onDisk: true });
  try {
    assert.equal(
      (await h.call('POST', '/api/routes', { name: 'own', match: { path: '/own' }, policy: 'hello-policy' }))
        .status,
      201,
    );
    let reloads = 0;
    const gateway = h.gateway as unknown as {
      reloadFromFile: () => Promise<unknown>;
      onFileChange: () => void;
    };
    const original = gateway.reloadFromFile.bind(h.gateway);
    gateway.reloadFromFile = () => {
      reloads++;
      return original();
    };
    // What the watcher calls after its debounce: the file equals what we wrote, so nothing happens.
    gateway.onFileChange();
    assert.equal(reloads, 0);
    writeFileSync(h.file as string, `${readFileSync(h.file as string, 'utf8')}# edited by hand\n`);
    gateway.onFileChange();
    assert.equal(reloads, 1, 'a foreign edit is still picked up');
  } finally {
    await h.stop();
  }
});

test('persist: concurrent admin writes all reach the file', async () => {
  const h = await startAdmin({ onDisk: true });
  try {
    const statuses = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const res = await h.call('PUT', `/api/consumers/c${i}`, { group: `g${i % 3}` });
        return res.status;
      }),
    );
    assert.deepEqual(new Set(statuses), new Set([201]));
    const stored = reparse(readFileSync(h.file as string, 'utf8'));
    assert.deepEqual(
      stored.consumers.map((c) => c.name).sort(),
      Array.from({ length: 20 }, (_, i) => `c${i}`).sort(),
    );
  } finally {
    await h.stop();
  }
});
