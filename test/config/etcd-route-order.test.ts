/**
 * Issue 31 item 2, operator review F2 and F3 (shared/reports/operator-review.md §4): with
 * `config.source: etcd` routes run in the order of the file the prefix was seeded from, and
 * `PUT /api/route-order` is stored in etcd (each route's `order`), so every gateway on the prefix
 * runs it, after an unrelated write and after a restart too. Real etcd, real gateway processes.
 * Every route answers its own name, so a body says which route won.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EtcdConfigSource, EtcdConflict, routeOrders } from '../../src/config/etcd-source.js';
import { emptyGatewayConfig } from '../../src/config/gateway.js';
import { silentLogger } from '../../src/core/logger.js';
import { skipWithoutEtcd, startEtcd, type EtcdServer } from '../support/etcd.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { request } from '../support/http.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const AUTH = `Basic ${Buffer.from('admin:secret-password').toString('base64')}`;

const answering = (name: string) => ({
  name,
  nodes: [
    { id: 'in', type: 'listener' },
    { id: 'm', type: 'mocking', config: { response_example: name, content_type: 'text/plain' } },
    { id: 'out', type: 'client' },
  ],
  edges: [
    { from: 'in.out', to: 'm.in' },
    { from: 'm.success', to: 'out.in' },
  ],
});

type Route = { name: string; match: Record<string, unknown>; priority?: number };

/**
 * Overlapping routes whose declaration order is not their name order (the review's
 * `zz-specific` before `aa-catchall`), some with a priority, two of equal priority.
 */
const ROUTES: Route[] = [
  { name: 'zz-specific', match: { path: '/api/special' } },
  { name: 'aa-catchall', match: { path: '/api/*' } },
  { name: 'yy-tenant', match: { path: '/api/*', headers: { 'x-tenant': 'acme' } }, priority: 2 },
  { name: 'bb-host', match: { path: '/api/*', host: 'api.example.com' }, priority: 2 },
  { name: 'xx-write', match: { path: '/admin/*', methods: ['POST', 'PUT'] } },
  { name: 'cc-admin', match: { path: '/admin/*' } },
  { name: 'ww-orders', match: { path: '/users/*/orders' } },
  { name: 'dd-users', match: { path: '/users/*' } },
  { name: 'ee-health', match: { path: '/health' }, priority: 100 },
  { name: 'ab-root', match: { path: '/*' }, priority: -1 },
  { name: 'vv-exact', match: { path: '/users/me' } },
];

const config = (routes: Route[]) => ({
  routes: routes.map((r) => ({ ...r, policy: r.name })),
  policies: routes.map((r) => answering(r.name)),
});

/** Requests (method, path, headers) and the route that must win each, as the file declares it. */
const REQUESTS: { method: string; path: string; headers?: Record<string, string>; winner: string }[] = [
  { method: 'GET', path: '/api/special', winner: 'zz-specific' },
  { method: 'GET', path: '/api/other', winner: 'aa-catchall' },
  { method: 'GET', path: '/api', winner: 'aa-catchall' },
  { method: 'GET', path: '/api/special', headers: { 'x-tenant': 'acme' }, winner: 'yy-tenant' },
  { method: 'GET', path: '/api/special', headers: { host: 'api.example.com' }, winner: 'bb-host' },
  {
    method: 'GET',
    path: '/api/x',
    headers: { host: 'api.example.com', 'x-tenant': 'acme' },
    winner: 'yy-tenant',
  },
  { method: 'GET', path: '/api/x', headers: { 'x-tenant': 'other' }, winner: 'aa-catchall' },
  { method: 'POST', path: '/admin/users', winner: 'xx-write' },
  { method: 'PUT', path: '/admin', winner: 'xx-write' },
  { method: 'GET', path: '/admin/users', winner: 'cc-admin' },
  { method: 'DELETE', path: '/admin/x', winner: 'cc-admin' },
  { method: 'GET', path: '/users/5/orders', winner: 'ww-orders' },
  { method: 'GET', path: '/users/5', winner: 'dd-users' },
  { method: 'GET', path: '/users/me', winner: 'dd-users' },
  { method: 'GET', path: '/users', winner: 'dd-users' },
  { method: 'GET', path: '/health', winner: 'ee-health' },
  { method: 'GET', path: '/health', headers: { host: 'api.example.com' }, winner: 'ee-health' },
  { method: 'GET', path: '/', winner: 'ab-root' },
  { method: 'GET', path: '/elsewhere/deep', winner: 'ab-root' },
  { method: 'POST', path: '/api/special', winner: 'zz-specific' },
];

interface Member {
  admin: string;
  data: string;
  process: GatewayProcess;
}

/** A gateway process; `prefix` set: `config.source: etcd` seeded from `gatewayFile`, else that file. */
async function startMember(
  dir: string,
  name: string,
  gatewayFile: string,
  etcdSetting?: { url: string; prefix: string },
): Promise<Member> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const system = join(dir, `${name}-system.yaml`);
  writeFileSync(
    system,
    [
      `listener: { bind: 127.0.0.1, port: ${port} }`,
      `admin: { bind: 127.0.0.1, port: ${adminPort}, username: admin, password: secret-password }`,
      etcdSetting === undefined
        ? 'config: { persist: false }'
        : `config: { source: etcd, etcd: { endpoints: ['${etcdSetting.url}'], prefix: ${etcdSetting.prefix}, timeout_ms: 5000 } }`,
      'logging: { level: warn }',
    ].join('\n'),
  );
  const process = spawnGateway(['--system-config', system, '--gateway-config', gatewayFile]);
  const admin = `http://127.0.0.1:${adminPort}`;
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
  return { admin, data: `http://127.0.0.1:${port}`, process };
}

async function winner(
  member: Member,
  req: { method: string; path: string; headers?: Record<string, string> },
) {
  const res = await request(member.data + req.path, { method: req.method, headers: req.headers ?? {} });
  return res.status === 404 ? '404' : res.body;
}

async function adminCall(member: Member, method: string, path: string, body?: unknown) {
  const res = await fetch(member.admin + path, {
    method,
    headers: { authorization: AUTH, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, text: await res.text() };
}

/** etcd's record of `key`: value and mod_revision. */
async function stored(etcd: EtcdServer, key: string): Promise<{ value: string; mod: string } | undefined> {
  const res = await etcd.call('/v3/kv/range', { key: Buffer.from(key).toString('base64') });
  const kv = (res.body['kvs'] as { value: string; mod_revision: string }[] | undefined)?.[0];
  return kv === undefined
    ? undefined
    : { value: Buffer.from(kv.value, 'base64').toString(), mod: kv.mod_revision };
}

const skip = skipWithoutEtcd();
let etcd: EtcdServer;
let dir: ReturnType<typeof tempDir>;
before(async () => {
  dir = tempDir('switchyard-route-order-');
  if (skip === false) etcd = await startEtcd();
});
after(async () => {
  await etcd?.stop();
  dir?.remove();
});

describe('F3: etcd mode matches in the order of the file it was seeded from', { skip }, () => {
  let fromFile: Member;
  let fromEtcd: Member;
  before(async () => {
    const file = join(dir.path, 'f3-gateway.yaml');
    writeFileSync(file, JSON.stringify(config(ROUTES)));
    [fromFile, fromEtcd] = await Promise.all([
      startMember(dir.path, 'f3-file', file),
      startMember(dir.path, 'f3-etcd', file, { url: etcd.url, prefix: '/f3' }),
    ]);
  });
  after(async () => {
    await Promise.all([fromFile?.process.stop(), fromEtcd?.process.stop()]);
  });

  test('F3: the same config from a file and from etcd routes every request to the same winner', async () => {
    const expected = REQUESTS.map(
      (r) => `${r.method} ${r.path} ${JSON.stringify(r.headers ?? {})} → ${r.winner}`,
    );
    const got = async (m: Member) =>
      Promise.all(
        REQUESTS.map(
          async (r) => `${r.method} ${r.path} ${JSON.stringify(r.headers ?? {})} → ${await winner(m, r)}`,
        ),
      );
    assert.deepEqual(await got(fromFile), expected, 'file mode: the declared precedence');
    assert.deepEqual(await got(fromEtcd), expected, 'etcd mode: the same winners as the file');
    // The order is in each route's document, not in a list key every write would rewrite.
    const keys = await etcd.keys('/f3/');
    assert.deepEqual(
      keys.filter((k) => !k.startsWith('/f3/routes/') && !k.startsWith('/f3/policies/')),
      [],
      keys.join(),
    );
    const orders = await Promise.all(
      ROUTES.map(
        async (r) =>
          (JSON.parse((await stored(etcd, `/f3/routes/${r.name}`))!.value) as { order: number }).order,
      ),
    );
    assert.deepEqual(
      orders,
      [...orders].sort((x, y) => x - y),
      'seeded orders follow the declaration order',
    );
    // The Admin API lists the routes in the file's order on both.
    const listed = async (m: Member) =>
      (
        JSON.parse((await adminCall(m, 'GET', '/api/routes')).text) as { name: string; order?: unknown }[]
      ).map((r) => r.name + (r.order === undefined ? '' : ' (order leaked)'));
    assert.deepEqual(
      await listed(fromEtcd),
      ROUTES.map((r) => r.name),
    );
    assert.deepEqual(
      await listed(fromFile),
      ROUTES.map((r) => r.name),
    );
  });
});

describe('F2: route-order on one gateway is stored in etcd', { skip }, () => {
  const PREFIX = '/f2';
  const TWO: Route[] = [
    { name: 'zz-specific', match: { path: '/api/special' } },
    { name: 'aa-catchall', match: { path: '/api/*' } },
  ];
  let file: string;
  let a: Member;
  let b: Member;
  before(async () => {
    file = join(dir.path, 'f2-gateway.yaml');
    writeFileSync(file, JSON.stringify(config(TWO)));
    a = await startMember(dir.path, 'f2-a', file, { url: etcd.url, prefix: PREFIX });
    b = await startMember(dir.path, 'f2-b', file, { url: etcd.url, prefix: PREFIX });
  });
  after(async () => {
    await Promise.all([a?.process.stop(), b?.process.stop()]);
  });

  const special = { method: 'GET', path: '/api/special' };
  const both = (what: string, name: string) =>
    Promise.all(
      [a, b].map((m) =>
        waitFor(async () => (await winner(m, special)) === name, { timeoutMs: 20000, intervalMs: 100, what }),
      ),
    );

  test('F2: PUT /api/route-order on gateway A is seen by gateway B on the same etcd prefix, and survives a restart and an unrelated write', async () => {
    assert.equal(await winner(a, special), 'zz-specific');
    assert.equal(await winner(b, special), 'zz-specific');
    const revisions = async () =>
      Promise.all(TWO.map(async (r) => (await stored(etcd, `${PREFIX}/routes/${r.name}`))?.mod));
    const beforeReorder = await revisions();

    const reordered = await adminCall(a, 'PUT', '/api/route-order', {
      names: ['aa-catchall', 'zz-specific'],
    });
    assert.equal(reordered.status, 200, reordered.text);
    await both('both gateways to run aa-catchall first', 'aa-catchall');
    // One route's order changed, so one key was written; the prefix holds no order list.
    const afterReorder = await revisions();
    assert.equal(afterReorder.filter((rev, i) => rev !== beforeReorder[i]).length, 1, afterReorder.join());
    assert.deepEqual(
      (await etcd.keys(`${PREFIX}/`)).filter((k) => !/^\/f2\/(routes|policies)\//.test(k)),
      [],
    );

    // An unrelated write on B (a new route and its policy) keeps the order on both.
    assert.equal((await adminCall(b, 'PUT', '/api/policies/mm-other', answering('mm-other'))).status, 201);
    const created = await adminCall(b, 'POST', '/api/routes', {
      name: 'mm-other',
      match: { path: '/other' },
      policy: 'mm-other',
    });
    assert.equal(created.status, 201, created.text);
    await Promise.all(
      [a, b].map((m) =>
        waitFor(async () => (await winner(m, { method: 'GET', path: '/other' })) === 'mm-other', {
          timeoutMs: 20000,
          intervalMs: 100,
          what: 'both gateways to serve the new route',
        }),
      ),
    );
    assert.equal(await winner(a, special), 'aa-catchall', 'A after an unrelated write');
    assert.equal(await winner(b, special), 'aa-catchall', 'B after an unrelated write');
    const listed = JSON.parse((await adminCall(a, 'GET', '/api/routes')).text) as { name: string }[];
    assert.deepEqual(
      listed.map((r) => r.name),
      ['aa-catchall', 'zz-specific', 'mm-other'],
      'a POSTed route comes after the last',
    );

    // A restart of B (its local file still declares zz-specific first) runs etcd's order.
    await b.process.stop();
    b = await startMember(dir.path, 'f2-b', file, { url: etcd.url, prefix: PREFIX });
    assert.equal(await winner(b, special), 'aa-catchall', 'B after a restart');
    assert.equal(await winner(a, special), 'aa-catchall');
  });
});

test(
  'etcd: routes written without an order (older gateways) come after the ordered ones, in name order; a reorder gives them one',
  { skip },
  async () => {
    const prefix = '/legacy';
    const put = (name: string, order?: number) =>
      etcd.put(
        `${prefix}/routes/${name}`,
        JSON.stringify({
          name,
          match: { path: `/${name}` },
          policy: 'p',
          ...(order === undefined ? {} : { order }),
        }),
      );
    await etcd.put(`${prefix}/policies/p`, JSON.stringify(answering('p')));
    await put('m-legacy');
    await put('b-legacy');
    await put('z-ordered', 5);
    await put('y-ordered', 7);
    const source = new EtcdConfigSource({ endpoints: [etcd.url], prefix, timeout_ms: 3000 }, silentLogger);
    const base = await source.read();
    assert.deepEqual(
      base.config.routes.map((r) => r.name),
      ['z-ordered', 'y-ordered', 'b-legacy', 'm-legacy'],
    );
    // An unrelated write rewrites no route.
    const revision = (await stored(etcd, `${prefix}/routes/b-legacy`))!.mod;
    await source.commit(base, { ...base.config, consumers: [{ name: 'c' }] });
    assert.equal((await stored(etcd, `${prefix}/routes/b-legacy`))!.mod, revision);

    const fresh = await source.read();
    const next = { ...fresh.config, routes: [...fresh.config.routes].reverse() };
    await source.commit(fresh, next);
    assert.deepEqual(
      (await source.read()).config.routes.map((r) => r.name),
      ['m-legacy', 'b-legacy', 'y-ordered', 'z-ordered'],
    );
    assert.equal(
      typeof (JSON.parse((await stored(etcd, `${prefix}/routes/b-legacy`))!.value) as { order?: unknown })
        .order,
      'number',
    );

    // A document whose order is not an integer is refused, naming the key.
    await etcd.put(
      `${prefix}/routes/bad`,
      JSON.stringify({ name: 'bad', match: {}, policy: 'p', order: 'first' }),
    );
    await assert.rejects(source.read(), (err: unknown) =>
      /etcd:\/legacy\/routes\/bad\.order/.test(JSON.stringify((err as { issues?: unknown }).issues)),
    );
  },
);

test(
  'F2: two reorders read from the same state never blend: the second is a conflict and applies nothing',
  { skip },
  async () => {
    const prefix = '/two-reorders';
    const settings = { endpoints: [etcd.url], prefix, timeout_ms: 3000 };
    const one = new EtcdConfigSource(settings, silentLogger);
    const other = new EtcdConfigSource(settings, silentLogger);
    const names = ['a', 'b', 'c', 'd'];
    await one.loadOrSeed(() => ({
      ...config(names.map((name) => ({ name, match: { path: `/${name}` } }))),
      consumers: [],
      supernodes: [],
      plugin_configs: [],
      stores: [],
      global_rules: [],
    }));
    const [first, second] = [await one.read(), await other.read()];
    const order = (base: typeof first, wanted: string[]) => ({
      ...base.config,
      routes: wanted.map((n) => base.config.routes.find((r) => r.name === n)!),
    });
    // Each moves a different route: alone, each would write one key, not the other's.
    await one.commit(first, order(first, ['b', 'a', 'c', 'd']));
    await assert.rejects(other.commit(second, order(second, ['a', 'b', 'd', 'c'])), (err: unknown) => {
      assert.ok(err instanceof EtcdConflict, String(err));
      assert.ok(
        err.resources.every((r) => r.startsWith('routes/')),
        err.resources.join(),
      );
      return true;
    });
    assert.deepEqual(
      (await other.read()).config.routes.map((r) => r.name),
      ['b', 'a', 'c', 'd'],
    );
    // An unrelated write from the stale state is no reorder and still goes through.
    await other.commit(second, { ...second.config, consumers: [{ name: 'c1' }] });
    assert.deepEqual(
      (await one.read()).config.routes.map((r) => r.name),
      ['b', 'a', 'c', 'd'],
    );
  },
);

test('routeOrders: a move rewrites only the moved route; no room between neighbours numbers all afresh', () => {
  const routes = (...names: string[]) => names.map((name) => ({ name, match: {}, policy: 'p' }));
  const base = (orders: Record<string, number>, names = Object.keys(orders)) => ({
    config: { ...emptyGatewayConfig(), routes: routes(...names) },
    orders: new Map(Object.entries(orders)),
  });
  const stored = { a: 1_000_000, b: 2_000_000, c: 3_000_000, d: 4_000_000 };
  const changed = (next: Map<string, number | undefined>, orders: Record<string, number>) =>
    [...next].filter(([name, order]) => orders[name] !== order).map(([name]) => name);
  // Unchanged, then d moved to the top, then b moved to the end, then a new route appended.
  assert.deepEqual(changed(routeOrders(routes('a', 'b', 'c', 'd'), base(stored)), stored), []);
  const top = routeOrders(routes('d', 'a', 'b', 'c'), base(stored));
  assert.deepEqual(changed(top, stored), ['d']);
  assert.ok(top.get('d')! < stored.a);
  assert.deepEqual(changed(routeOrders(routes('a', 'c', 'd', 'b'), base(stored)), stored), ['b']);
  const appended = routeOrders(routes('a', 'b', 'c', 'd', 'e'), base(stored));
  assert.deepEqual(changed(appended, stored), ['e']);
  assert.equal(appended.get('e'), 5_000_000);
  // Between 5 and 6 there is no integer: everyone gets a fresh value, in the new order.
  const tight = { a: 5, b: 6 };
  const fresh = routeOrders(routes('a', 'c', 'b'), base(tight, ['a', 'b', 'c']));
  assert.deepEqual(
    [...fresh],
    [
      ['a', 1_000_000],
      ['c', 2_000_000],
      ['b', 3_000_000],
    ],
  );
});
