import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdUnavailable } from '../../src/config/etcd-client.js';
import { EtcdConfigSource } from '../../src/config/etcd-source.js';
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
    assert.equal(loaded, SEED);
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
  'etcd source: a prefix that holds resources is not seeded again; routes come back in name order',
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
      ['alpha', 'zeta'],
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
    const next: GatewayConfig = structuredClone(SEED);
    next.routes = next.routes.filter((r) => r.name !== 'zeta');
    next.routes.push({ name: 'beta', match: { path: '/b' }, policy: 'p' });
    await s.commit(next);
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
