import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdUnavailable } from '../../src/config/etcd-client.js';
import { EtcdConfigSource, EtcdConflict } from '../../src/config/etcd-source.js';
import { parseGatewayConfig, type GatewayConfig } from '../../src/config/gateway.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { silentLogger } from '../../src/core/logger.js';
import { freePort } from '../support/free-port.js';
import { skipWithoutEtcd, startEtcd, type EtcdServer } from '../support/etcd.js';

const skip = skipWithoutEtcd();
let etcd: EtcdServer;
before(async () => {
  if (skip === false) etcd = await startEtcd();
});
after(async () => etcd?.stop());

let prefixes = 0;
function source(endpoints = [etcd.url]): EtcdConfigSource {
  return new EtcdConfigSource(
    { endpoints, prefix: `/sy-test-${++prefixes}`, timeout_ms: 3000 },
    silentLogger,
  );
}

const SEED = parseGatewayConfig(`
routes:
  - { name: zeta, match: { path: /z }, policy: p }
  - { name: alpha, match: { path: /a }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: "\${GREETING}" } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
stores:
  - { name: cache, type: redis, url: "\${REDIS_URL}" }
`);

test(
  'etcd source: an empty prefix is seeded with one key per resource, placeholders kept',
  { skip },
  async () => {
    const s = source();
    const loaded = await s.loadOrSeed(() => SEED);
    assert.ok(EtcdConfigSource.same(loaded, EtcdConfigSource.arrange(SEED, SEED)));
    // Issue 31 item 2 (F3): the seed file's order, kept in each route's `order`, not name order.
    assert.deepEqual(
      loaded.routes.map((r) => r.name),
      ['zeta', 'alpha'],
    );
    assert.deepEqual(await etcd.keys(`${s.prefix}/`), [
      `${s.prefix}/policies/p`,
      `${s.prefix}/routes/alpha`,
      `${s.prefix}/routes/zeta`,
      `${s.prefix}/stores/cache`,
    ]);
    const again = await s.load();
    assert.match(JSON.stringify(again.stores), /\$\{REDIS_URL\}/);
    assert.match(JSON.stringify(again.policies), /\$\{GREETING\}/);
  },
);

test(
  "etcd source: a prefix that holds resources is not seeded again; routes come back in the seed's order",
  { skip },
  async () => {
    const s = source();
    await s.loadOrSeed(() => SEED);
    let seeded = false;
    const loaded = await s.loadOrSeed(() => {
      seeded = true;
      return parseGatewayConfig('routes: []');
    });
    assert.equal(seeded, false);
    assert.deepEqual(
      loaded.routes.map((r) => r.name),
      ['zeta', 'alpha'],
    );
  },
);

test(
  'etcd source: commit writes changes and deletes removed resources, leaving foreign keys alone',
  { skip },
  async () => {
    const s = source();
    await s.loadOrSeed(() => SEED);
    await etcd.put(`${s.prefix}/notes/readme`, 'kept');
    await etcd.put(`${s.prefix}/routes`, 'no name: not a resource key');
    const base = await s.read();
    const next: GatewayConfig = structuredClone(base.config);
    next.routes = next.routes.filter((r) => r.name !== 'zeta');
    next.routes.push({ name: 'beta', match: { path: '/b' }, policy: 'p' });
    await s.commit(base, next);
    assert.deepEqual(await etcd.keys(`${s.prefix}/`), [
      `${s.prefix}/notes/readme`,
      `${s.prefix}/policies/p`,
      `${s.prefix}/routes`,
      `${s.prefix}/routes/alpha`,
      `${s.prefix}/routes/beta`,
      `${s.prefix}/stores/cache`,
    ]);
    assert.ok(EtcdConfigSource.same(await s.load(), { ...next, routes: [next.routes[0]!, next.routes[1]!] }));
  },
);

test('etcd source: a bad document is rejected with its key as the path', { skip }, async () => {
  const s = source();
  await s.loadOrSeed(() => SEED);
  await etcd.put(`${s.prefix}/routes/broken`, '{not json');
  await etcd.put(`${s.prefix}/policies/other`, JSON.stringify({ name: 'different', nodes: [], edges: [] }));
  await assert.rejects(s.load(), (err: unknown) => {
    assert.ok(err instanceof ConfigRejected);
    const paths = err.issues.map((i) => i.path);
    assert.ok(paths.includes(`etcd:${s.prefix}/routes/broken`), JSON.stringify(err.issues));
    assert.ok(paths.includes(`etcd:${s.prefix}/policies/other`), JSON.stringify(err.issues));
    return true;
  });
});

test('etcd source: an endpoint that does not answer is skipped for the next one', { skip }, async () => {
  const dead = `http://127.0.0.1:${await freePort()}`;
  const s = source([dead, etcd.url]);
  const loaded = await s.loadOrSeed(() => SEED);
  assert.equal(loaded.routes.length, 2);
  const none = new EtcdConfigSource({ endpoints: [dead], prefix: '/x', timeout_ms: 1000 }, silentLogger);
  await assert.rejects(
    none.load(),
    (err: unknown) => err instanceof EtcdUnavailable && /no etcd endpoint answered/.test(err.message),
  );
});

test('etcd source: an empty prefix is refused before any request', () => {
  assert.throws(
    () =>
      new EtcdConfigSource(
        { endpoints: ['http://127.0.0.1:1'], prefix: '/', timeout_ms: 1000 },
        silentLogger,
      ),
    (err: unknown) => err instanceof ConfigRejected && err.issues[0]?.path === 'config.etcd.prefix',
  );
});

test('etcd source: user and password authenticate against etcd with auth enabled', { skip }, async () => {
  const secured = await startEtcd();
  try {
    const add = await secured.call('/v3/auth/user/add', { name: 'root', password: 'hunter2-long' });
    assert.equal(add.status, 200, JSON.stringify(add.body));
    assert.equal((await secured.call('/v3/auth/user/grant', { user: 'root', role: 'root' })).status, 200);
    assert.equal((await secured.call('/v3/auth/enable', {})).status, 200);
    const ok = new EtcdConfigSource(
      { endpoints: [secured.url], prefix: '/auth', user: 'root', password: 'hunter2-long', timeout_ms: 3000 },
      silentLogger,
    );
    assert.equal((await ok.loadOrSeed(() => SEED)).routes.length, 2);
    assert.equal((await ok.load()).policies.length, 1);
    const wrong = new EtcdConfigSource(
      { endpoints: [secured.url], prefix: '/auth', user: 'root', password: 'nope', timeout_ms: 3000 },
      silentLogger,
    );
    await assert.rejects(
      wrong.load(),
      (err: unknown) => err instanceof EtcdUnavailable && /refused the credentials/.test(err.message),
    );
    const anonymous = new EtcdConfigSource(
      { endpoints: [secured.url], prefix: '/auth', timeout_ms: 3000 },
      silentLogger,
    );
    await assert.rejects(anonymous.load(), EtcdUnavailable);
  } finally {
    await secured.stop();
  }
});

/** etcd's own record of `key`: its value and mod_revision, or undefined when absent. */
async function stored(key: string): Promise<{ value: string; mod: string } | undefined> {
  const res = await etcd.call('/v3/kv/range', { key: Buffer.from(key).toString('base64') });
  const kv = (res.body['kvs'] as { value: string; mod_revision: string }[] | undefined)?.[0];
  return kv === undefined
    ? undefined
    : { value: Buffer.from(kv.value, 'base64').toString('utf8'), mod: kv.mod_revision };
}

const route = (name: string, path = `/${name}`) => ({ name, match: { path }, policy: 'p' });

test(
  'F-4: commit writes only the resources the write changed; keys put by others since the read are kept',
  { skip },
  async () => {
    const s = source();
    await s.loadOrSeed(() => SEED);
    const base = await s.read();
    const policyBefore = await stored(`${s.prefix}/policies/p`);
    // Put behind this gateway's back after its read: neither in its view nor in its write.
    await etcd.put(`${s.prefix}/routes/other`, JSON.stringify(route('other')));
    await etcd.put(`${s.prefix}/consumers/c1`, JSON.stringify({ name: 'c1' }));
    const next = structuredClone(base.config);
    next.routes = next.routes.filter((r) => r.name !== 'zeta');
    next.routes.push(route('beta'));
    await s.commit(base, next);
    assert.deepEqual(await etcd.keys(`${s.prefix}/`), [
      `${s.prefix}/consumers/c1`,
      `${s.prefix}/policies/p`,
      `${s.prefix}/routes/alpha`,
      `${s.prefix}/routes/beta`,
      `${s.prefix}/routes/other`,
      `${s.prefix}/stores/cache`,
    ]);
    // An untouched resource is not rewritten (its mod_revision stays).
    assert.deepEqual(await stored(`${s.prefix}/policies/p`), policyBefore);
  },
);

test(
  'F-4: a write guarded by a stale mod_revision is refused as a conflict naming the resource, and applies nothing',
  { skip },
  async () => {
    const s = source();
    await s.loadOrSeed(() => SEED);
    const base = await s.read();
    const theirs = JSON.stringify(route('alpha', '/theirs'));
    await etcd.put(`${s.prefix}/routes/alpha`, theirs);
    const next = structuredClone(base.config);
    next.routes = [route('alpha', '/mine'), route('gamma'), ...next.routes.filter((r) => r.name !== 'alpha')];
    await assert.rejects(s.commit(base, next), (err: unknown) => {
      assert.ok(err instanceof EtcdConflict, String(err));
      assert.deepEqual(err.resources, ['routes/alpha']);
      return true;
    });
    assert.equal((await stored(`${s.prefix}/routes/alpha`))?.value, theirs);
    assert.equal(await stored(`${s.prefix}/routes/gamma`), undefined, 'nothing of the write applied');
    // Re-read, the same edit applies on the fresh state.
    const fresh = await s.read();
    const again = structuredClone(fresh.config);
    again.routes = again.routes.map((r) => (r.name === 'alpha' ? route('alpha', '/mine') : r));
    await s.commit(fresh, again);
    assert.equal((await stored(`${s.prefix}/routes/alpha`))?.value, JSON.stringify(route('alpha', '/mine')));
  },
);

test(
  'F-4: a create of a name someone took since the read, and a delete of a key changed since, are conflicts',
  { skip },
  async () => {
    const s = source();
    await s.loadOrSeed(() => SEED);
    const base = await s.read();
    await etcd.put(`${s.prefix}/routes/taken`, JSON.stringify(route('taken', '/first')));
    const create = structuredClone(base.config);
    create.routes.push(route('taken', '/second'));
    await assert.rejects(
      s.commit(base, create),
      (err: unknown) => err instanceof EtcdConflict && err.resources.join() === 'routes/taken',
    );
    assert.equal((await stored(`${s.prefix}/routes/taken`))?.value, JSON.stringify(route('taken', '/first')));

    const before = await s.read();
    await etcd.put(`${s.prefix}/routes/zeta`, JSON.stringify(route('zeta', '/changed')));
    const remove = structuredClone(before.config);
    remove.routes = remove.routes.filter((r) => r.name !== 'zeta');
    await assert.rejects(
      s.commit(before, remove),
      (err: unknown) => err instanceof EtcdConflict && err.resources.join() === 'routes/zeta',
    );
    assert.equal((await stored(`${s.prefix}/routes/zeta`))?.value, JSON.stringify(route('zeta', '/changed')));
  },
);

test(
  "etcd source: a read sees others' changes and deletions and keeps the objects of unchanged resources",
  { skip },
  async () => {
    const s = source();
    await s.loadOrSeed(() => SEED);
    const first = await s.read();
    await etcd.put(`${s.prefix}/routes/alpha`, JSON.stringify(route('alpha', '/new')));
    await etcd.call('/v3/kv/deleterange', { key: Buffer.from(`${s.prefix}/routes/zeta`).toString('base64') });
    const second = await s.read();
    assert.deepEqual(second.config.routes, [route('alpha', '/new')]);
    assert.equal(second.config.policies[0], first.config.policies[0], 'unchanged: the same object');
    assert.equal(second.revisions.has(`${s.prefix}/routes/zeta`), false);
  },
);

test(
  'etcd source: two gateways seeding one empty prefix at once end up with one seed',
  { skip },
  async () => {
    const a = source();
    const b = new EtcdConfigSource(
      { endpoints: [etcd.url], prefix: a.prefix, timeout_ms: 3000 },
      silentLogger,
    );
    const other = parseGatewayConfig(`
routes:
  - { name: other, match: { path: /o }, policy: p }
policies:
  - { name: p, nodes: [{ id: in, type: listener }], edges: [] }
`);
    const [fromA, fromB] = await Promise.all([a.loadOrSeed(() => SEED), b.loadOrSeed(() => other)]);
    assert.ok(EtcdConfigSource.same(fromA, fromB), 'both read the same configuration');
    const keys = await etcd.keys(`${a.prefix}/routes/`);
    assert.ok(
      keys.join() === `${a.prefix}/routes/alpha,${a.prefix}/routes/zeta` ||
        keys.join() === `${a.prefix}/routes/other`,
      keys.join(),
    );
  },
);

test('etcd source: arrange keeps routes in the order given (etcd stores it) and refuses to reorder global rules', () => {
  const base = parseGatewayConfig(`
routes: [{ name: a, match: { path: /a }, policy: p }, { name: c, match: { path: /c }, policy: p }]
global_rules: [{ name: r1, supernode: s }, { name: r2, supernode: s }]
`);
  const next = structuredClone(base);
  next.routes.push({ name: 'b', match: { path: '/b' }, policy: 'p' });
  next.routes.reverse();
  assert.deepEqual(
    EtcdConfigSource.arrange(base, next).routes.map((r) => r.name),
    ['b', 'c', 'a'],
  );
  const reordered = structuredClone(base);
  reordered.global_rules.reverse();
  assert.throws(
    () => EtcdConfigSource.arrange(base, reordered),
    (err: unknown) => err instanceof ConfigRejected && err.issues[0]?.path === 'global_rules',
  );
});
