/**
 * F-4 (shared/reports/security-review.md): with `config.source: etcd`, Admin
 * writes on two gateways sharing one prefix, at the same moment, lose
 * nothing that was acknowledged and bring nothing deleted back. Real etcd,
 * real gateway processes; gateway A reaches etcd through a proxy that can
 * hold back its watch stream, so "a change its watch has not delivered yet"
 * is a state the test sets, not a race it hopes for.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { startAdminServer } from '../../src/admin/server.js';
import { EtcdConfigSource, type EtcdSnapshot } from '../../src/config/etcd-source.js';
import type { GatewayConfig } from '../../src/config/gateway.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { silentLogger } from '../../src/core/logger.js';
import { Gateway } from '../../src/gateway.js';
import { skipWithoutEtcd, startEtcd, type EtcdServer } from '../support/etcd.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const PREFIX = '/race';
const AUTH = `Basic ${Buffer.from('admin:secret-password').toString('base64')}`;
const b64 = (text: string) => Buffer.from(text).toString('base64');

const SEED = {
  routes: [{ name: 'hello', match: { path: '/hello' }, policy: 'hello' }],
  policies: [mockPolicy('hello', 'hello')],
};

function mockPolicy(name: string, text: string) {
  return {
    name,
    nodes: [
      { id: 'in', type: 'listener' },
      { id: 'm', type: 'mocking', config: { response_example: text } },
      { id: 'out', type: 'client' },
    ],
    edges: [
      { from: 'in.out', to: 'm.in' },
      { from: 'm.success', to: 'out.in' },
    ],
  };
}

/** A TCP proxy to etcd that can hold back what etcd sends on watch connections (`POST /v3/watch`). */
interface WatchGate {
  url: string;
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

async function watchGate(target: string): Promise<WatchGate> {
  const { hostname, port } = new URL(target);
  let holding = false;
  const held: { socket: Socket; chunk: Buffer }[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    let watch = false;
    client.on('data', (chunk: Buffer) => {
      if (chunk.includes('POST /v3/watch ')) watch = true;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (watch && holding) held.push({ socket: client, chunk });
      else client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    hold: () => (holding = true),
    release: () => {
      holding = false;
      for (const { socket, chunk } of held.splice(0)) if (!socket.destroyed) socket.write(chunk);
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface Member {
  admin: string;
  process: GatewayProcess;
}

async function startMember(dir: string, name: string, endpoint: string): Promise<Member> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const system = join(dir, `${name}-system.yaml`);
  const gateway = join(dir, `${name}-gateway.yaml`);
  writeFileSync(
    system,
    [
      `listener: { bind: 127.0.0.1, port: ${port} }`,
      `admin: { bind: 127.0.0.1, port: ${adminPort}, username: admin, password: secret-password }`,
      `config: { source: etcd, etcd: { endpoints: ['${endpoint}'], prefix: ${PREFIX}, timeout_ms: 5000 } }`,
      'logging: { level: warn }',
    ].join('\n'),
  );
  writeFileSync(gateway, JSON.stringify(SEED));
  const process = spawnGateway(['--system-config', system, '--gateway-config', gateway]);
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
  return { admin, process };
}

async function call(
  member: Member,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; etag: string | null }> {
  const res = await fetch(`${member.admin}${path}`, {
    method,
    headers: { authorization: AUTH, 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, text: await res.text(), etag: res.headers.get('etag') };
}

async function names(member: Member, segment: string): Promise<Set<string>> {
  const res = await call(member, 'GET', `/api/${segment}`);
  assert.equal(res.status, 200, res.text);
  return new Set((JSON.parse(res.text) as { name: string }[]).map((i) => i.name));
}

/** The value etcd holds at `key`, or undefined. */
async function stored(etcd: EtcdServer, key: string): Promise<string | undefined> {
  const res = await etcd.call('/v3/kv/range', { key: b64(key) });
  const kv = (res.body['kvs'] as { value: string }[] | undefined)?.[0];
  return kv === undefined ? undefined : Buffer.from(kv.value, 'base64').toString('utf8');
}

const route = (name: string) => ({ name, match: { path: `/${name}` }, policy: 'hello' });

const skip = skipWithoutEtcd();
let etcd: EtcdServer;
before(async () => {
  if (skip === false) etcd = await startEtcd();
});
after(async () => etcd?.stop());

describe('F-4: Admin writes of two gateways on one etcd prefix', { skip }, () => {
  let gate: WatchGate;
  let dir: ReturnType<typeof tempDir>;
  let a: Member;
  let b: Member;
  const both = () => [a, b];

  before(async () => {
    gate = await watchGate(etcd.url);
    dir = tempDir();
    a = await startMember(dir.path, 'a', gate.url);
    b = await startMember(dir.path, 'b', etcd.url);
  });
  after(async () => {
    gate?.release();
    await Promise.all([a?.process.stop(), b?.process.stop()]);
    await gate?.close();
    dir?.remove();
  });

  /** Polls until `check` holds on both gateways. */
  const converge = (what: string, check: (m: Member) => Promise<boolean>) =>
    Promise.all(both().map((m) => waitFor(() => check(m), { timeoutMs: 20000, intervalMs: 100, what })));

  test('F-4: two gateways on one prefix, 40 concurrent creates (20 rounds of one POST to each) lose nothing acknowledged', async () => {
    const created: string[] = [];
    for (let i = 1; i <= 20; i++) {
      const [ra, rb] = await Promise.all([
        call(a, 'POST', '/api/routes', route(`a-${i}`)),
        call(b, 'POST', '/api/routes', route(`b-${i}`)),
      ]);
      assert.equal(ra.status, 201, `a-${i}: ${ra.text}`);
      assert.equal(rb.status, 201, `b-${i}: ${rb.text}`);
      created.push(`a-${i}`, `b-${i}`);
    }
    const keys = new Set(await etcd.keys(`${PREFIX}/routes/`));
    const lost = created.filter((n) => !keys.has(`${PREFIX}/routes/${n}`));
    assert.deepEqual(lost, [], 'every acknowledged create is in etcd');
    await converge('both gateways to list all 40 routes', async (m) => {
      const listed = await names(m, 'routes');
      return created.every((n) => listed.has(n));
    });
    // Both run the routes in one order, the one stored in etcd (each route's `order`), also right
    // after a gateway's own POST appended one.
    await converge('both gateways to list the routes in one order', async () => {
      const [fromA, fromB] = [[...(await names(a, 'routes'))], [...(await names(b, 'routes'))]];
      return fromA.join() === fromB.join();
    });
  });

  test('F-4 (issue 31, F2): a reorder is stored in etcd and both gateways run it', async () => {
    const order = [...(await names(a, 'routes'))];
    const res = await call(a, 'PUT', '/api/route-order', { names: [...order].reverse() });
    assert.equal(res.status, 200, res.text);
    await converge(
      'both gateways to list the reversed order',
      async (m) => [...(await names(m, 'routes'))].join() === [...order].reverse().join(),
    );
  });

  test('F-4: 10 deletions racing creates on the other gateway are not resurrected', async () => {
    const revoked = Array.from({ length: 10 }, (_, i) => `revoked-${i + 1}`);
    for (const name of revoked) assert.equal((await call(a, 'POST', '/api/consumers', { name })).status, 201);
    await converge('both gateways to list the 10 consumers', async (m) => {
      const listed = await names(m, 'consumers');
      return revoked.every((n) => listed.has(n));
    });
    for (let i = 1; i <= 10; i++) {
      const [del, post] = await Promise.all([
        call(a, 'DELETE', `/api/consumers/revoked-${i}`),
        call(b, 'POST', '/api/routes', route(`extra-${i}`)),
      ]);
      assert.equal(del.status, 200, `delete revoked-${i}: ${del.text}`);
      assert.equal(post.status, 201, `create extra-${i}: ${post.text}`);
    }
    const keys = new Set(await etcd.keys(`${PREFIX}/`));
    assert.deepEqual(
      revoked.filter((n) => keys.has(`${PREFIX}/consumers/${n}`)),
      [],
      'no deleted consumer is back in etcd',
    );
    for (let i = 1; i <= 10; i++) assert.ok(keys.has(`${PREFIX}/routes/extra-${i}`), `extra-${i} in etcd`);
    await converge('both gateways to drop the revoked consumers and list the new routes', async (m) => {
      const [consumers, routes] = await Promise.all([names(m, 'consumers'), names(m, 'routes')]);
      return revoked.every((n) => !consumers.has(n)) && routes.has('extra-10') && routes.has('extra-1');
    });
  });

  test('F-4: the same resource changed on both gateways at once: each answer is a clean result or a refusal, etcd holds one whole version', async () => {
    assert.equal((await call(a, 'PUT', '/api/policies/shared', mockPolicy('shared', 'v0'))).status, 201);
    for (let round = 1; round <= 8; round++) {
      const mine = mockPolicy('shared', `a-${round}`);
      const theirs = mockPolicy('shared', `b-${round}`);
      const [ra, rb] = await Promise.all([
        call(a, 'PUT', '/api/policies/shared', mine),
        call(b, 'PUT', '/api/policies/shared', theirs),
      ]);
      for (const r of [ra, rb]) assert.ok(r.status === 200 || r.status === 409, `${r.status} ${r.text}`);
      assert.ok(ra.status === 200 || rb.status === 200, 'one of the two writes wins');
      const value = JSON.parse((await stored(etcd, `${PREFIX}/policies/shared`)) ?? 'null') as unknown;
      const accepted = [ra.status === 200 ? mine : undefined, rb.status === 200 ? theirs : undefined];
      assert.ok(
        accepted.some((v) => v !== undefined && JSON.stringify(v) === JSON.stringify(value)),
        `etcd holds one accepted version whole: ${JSON.stringify(value)}`,
      );
      await converge('both gateways to hold the stored version', async (m) => {
        const got = await call(m, 'GET', '/api/policies/shared');
        return JSON.stringify(JSON.parse(got.text)) === JSON.stringify(value);
      });
    }

    // With If-Match on both sides, the version both read: exactly one applies.
    const etags = await Promise.all(both().map((m) => call(m, 'GET', '/api/policies/shared')));
    assert.equal(etags[0]!.etag, etags[1]!.etag);
    const [ra, rb] = await Promise.all([
      call(a, 'PUT', '/api/policies/shared', mockPolicy('shared', 'if-a'), { 'if-match': etags[0]!.etag! }),
      call(b, 'PUT', '/api/policies/shared', mockPolicy('shared', 'if-b'), { 'if-match': etags[1]!.etag! }),
    ]);
    const statuses = [ra.status, rb.status].sort();
    assert.ok(
      statuses[0] === 200 && (statuses[1] === 409 || statuses[1] === 412),
      `${ra.status} ${ra.text} / ${rb.status} ${rb.text}`,
    );
    const winner = ra.status === 200 ? 'if-a' : 'if-b';
    assert.match((await stored(etcd, `${PREFIX}/policies/shared`)) ?? '', new RegExp(`"${winner}"`));

    // Creating the same name on both: one 201, one 409 naming it; etcd holds the winner's.
    const [ca, cb] = await Promise.all([
      call(a, 'POST', '/api/routes', { ...route('same'), match: { path: '/same-a' } }),
      call(b, 'POST', '/api/routes', { ...route('same'), match: { path: '/same-b' } }),
    ]);
    assert.deepEqual([ca.status, cb.status].sort(), [201, 409], `${ca.text} / ${cb.text}`);
    assert.match(ca.status === 409 ? ca.text : cb.text, /same/);
    const path = ca.status === 201 ? '/same-a' : '/same-b';
    assert.equal(
      (JSON.parse((await stored(etcd, `${PREFIX}/routes/same`)) ?? '{}') as { match?: { path?: string } })
        .match?.path,
      path,
    );
  });

  test("F-4: a key put with etcd's API before the gateway's watch delivers it survives the gateway's next unrelated Admin write", async () => {
    gate.hold();
    try {
      await etcd.put(`${PREFIX}/routes/from-etcdctl`, JSON.stringify(route('from-etcdctl')));
      await etcd.put(`${PREFIX}/consumers/from-etcdctl`, JSON.stringify({ name: 'from-etcdctl' }));
      // Gateway A has not heard of them: its watch stream is held back.
      assert.equal((await names(a, 'routes')).has('from-etcdctl'), false);
      const write = await call(a, 'PUT', '/api/policies/unrelated', mockPolicy('unrelated', 'x'));
      assert.equal(write.status, 201, write.text);
      assert.ok(await stored(etcd, `${PREFIX}/routes/from-etcdctl`), 'the route put behind its back is kept');
      assert.ok(await stored(etcd, `${PREFIX}/consumers/from-etcdctl`), 'the consumer too');
      // The write read etcd first, so A already runs them without waiting for its watch.
      assert.ok((await names(a, 'routes')).has('from-etcdctl'));
      assert.ok((await names(a, 'consumers')).has('from-etcdctl'));
    } finally {
      gate.release();
    }
    await converge('both gateways to list the etcdctl route', async (m) =>
      (await names(m, 'routes')).has('from-etcdctl'),
    );
  });
});

/** An etcd source that lets another writer change `key` right before each of its commits. */
class Overtaken extends EtcdConfigSource {
  overtakes = 0;
  constructor(
    private readonly key: string,
    prefix: string,
  ) {
    super({ endpoints: [etcd.url], prefix, timeout_ms: 3000 }, silentLogger);
  }
  override async commit(base: EtcdSnapshot, next: GatewayConfig): Promise<void> {
    this.overtakes++;
    await etcd.put(this.key, JSON.stringify(mockPolicy('contested', `other-${this.overtakes}`)));
    return super.commit(base, next);
  }
}

test(
  'F-4: a write that keeps losing its race answers 409 conflict naming the resource, and applies nothing',
  { skip },
  async () => {
    const prefix = '/overtaken';
    await etcd.put(`${prefix}/policies/contested`, JSON.stringify(mockPolicy('contested', 'v0')));
    const system = parseSystemConfig(
      [
        'listener: { bind: 127.0.0.1, port: 0 }',
        'admin: { bind: 127.0.0.1, port: 0, username: admin, password: secret-password }',
        `config: { source: etcd, etcd: { endpoints: ["${etcd.url}"], prefix: ${prefix} } }`,
      ].join('\n'),
      {},
    );
    const source = new Overtaken(`${prefix}/policies/contested`, prefix);
    const gateway = await Gateway.createFromEtcd({ system, logger: silentLogger, etcd: source });
    const admin = await startAdminServer(gateway, system.admin!, silentLogger, { print: () => undefined });
    try {
      const res = await fetch(`${admin.url}/api/policies/contested`, {
        method: 'PUT',
        headers: { authorization: AUTH, 'content-type': 'application/json' },
        body: JSON.stringify(mockPolicy('contested', 'mine')),
      });
      const body = (await res.json()) as { error?: string; resources?: string[] };
      assert.equal(res.status, 409, JSON.stringify(body));
      assert.equal(body.error, 'conflict');
      assert.deepEqual(body.resources, ['policies/contested']);
      assert.equal(source.overtakes, 5, 'retried a bounded number of times');
      assert.doesNotMatch((await stored(etcd, `${prefix}/policies/contested`)) ?? '', /mine/);
      assert.doesNotMatch(JSON.stringify(gateway.runtime.config), /mine/, 'not applied locally either');
    } finally {
      await Promise.all([admin.close(), gateway.shutdown()]);
    }
  },
);
