import assert from 'node:assert/strict';
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { skipWithoutEtcd, startEtcd, type EtcdServer } from '../support/etcd.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { request } from '../support/http.js';
import { skipWithoutRedis, startRedis, type RedisServer } from '../support/redis.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { resolveCompatNames } from '../../src/config/compat-names.js';
import { parseSystemConfig } from '../../src/config/system.js';

const SECRET = 'a session secret both gateways share';
const WINDOW_SECONDS = 3600;

/** One configuration, laid out in etcd the way the reference keeps it: one JSON document per resource. */
const config = (redisUrl: string) => ({
  stores: [{ name: 'main', type: 'redis', url: redisUrl }],
  routes: [
    { name: 'app', match: { path: '/app/*' }, policy: 'sso' },
    { name: 'limited', match: { path: '/limited' }, policy: 'limited' },
    { name: 'cached', match: { path: '/cached' }, policy: 'cached' },
  ],
  policies: [
    {
      name: 'sso',
      nodes: [
        { id: 'in', type: 'listener' },
        {
          id: 'cas',
          type: 'cas-auth',
          config: {
            idp_uri: 'http://127.0.0.1:9/cas',
            session_secret: SECRET,
            session_storage: 'redis',
            session_store: 'main',
          },
        },
        { id: 'show', type: 'echo', config: { body: 'hello {{message.user}}' } },
        { id: 'out', type: 'client' },
      ],
      edges: [
        { from: 'in.out', to: 'cas.in' },
        { from: 'cas.success', to: 'show.in' },
        { from: 'cas.denied', to: 'out.in' },
        { from: 'cas.redirect', to: 'out.in' },
        { from: 'show.success', to: 'out.in' },
      ],
    },
    {
      name: 'limited',
      nodes: [
        { id: 'in', type: 'listener' },
        {
          id: 'limit',
          type: 'limit-count',
          config: {
            count: 2,
            time_window: WINDOW_SECONDS,
            key: '$http_x_user',
            policy: 'redis',
            store: 'main',
            rejected_code: 429,
          },
        },
        { id: 'ok', type: 'echo', config: { body: 'ok' } },
        { id: 'out', type: 'client' },
      ],
      edges: [
        { from: 'in.out', to: 'limit.in' },
        { from: 'limit.success', to: 'ok.in' },
        { from: 'limit.limited', to: 'out.in' },
        { from: 'ok.success', to: 'out.in' },
      ],
    },
    {
      name: 'cached',
      nodes: [
        { id: 'in', type: 'listener' },
        {
          id: 'lookup',
          type: 'proxy-cache',
          config: { phase: 'lookup', id: 'page', cache_key: ['$request_uri'] },
        },
        { id: 'page', type: 'echo', config: { body: 'page' } },
        {
          id: 'store',
          type: 'proxy-cache',
          config: { phase: 'store', id: 'page', cache_key: ['$request_uri'], cache_ttl: 60 },
        },
        { id: 'out', type: 'client' },
      ],
      edges: [
        { from: 'in.out', to: 'lookup.in' },
        { from: 'lookup.success', to: 'page.in' },
        { from: 'lookup.hit', to: 'out.in' },
        { from: 'page.success', to: 'store.in' },
        { from: 'store.success', to: 'out.in' },
        { from: 'store.hit', to: 'out.in' },
      ],
    },
  ],
});

/** A session sealed as the reference seals it: base64url(nonce | AES-256-GCM(expiry u64 BE | payload) | tag). */
function referenceSeal(payload: unknown, ttlSeconds: number): string {
  const key = createHash('sha256').update(SECRET).digest();
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const expiry = Buffer.alloc(8);
  expiry.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 1000) + ttlSeconds));
  const body = Buffer.concat([cipher.update(expiry), cipher.update(JSON.stringify(payload)), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64url');
}

interface Running {
  data: string;
  admin: string;
  process: GatewayProcess;
}

async function startGateway(
  etcd: EtcdServer,
  dir: string,
  name: string,
  redisUrl: string,
  compat: string,
): Promise<Running> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const system = join(dir, `${name}-system.yaml`);
  const gateway = join(dir, `${name}-gateway.yaml`);
  writeFileSync(
    system,
    [
      `listener: { bind: 127.0.0.1, port: ${port} }`,
      `admin: { bind: 127.0.0.1, port: ${adminPort}, username: admin, password: secret-password }`,
      `config: { source: etcd, etcd: { endpoints: ['${etcd.url}'] } }`,
      'debug: { enabled: true }',
      compat,
    ].join('\n'),
  );
  // The local file seeds an empty prefix only: the reference's tree is already there.
  writeFileSync(gateway, JSON.stringify(config(redisUrl)));
  const process = spawnGateway(['--system-config', system, '--gateway-config', gateway]);
  const data = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`http://127.0.0.1:${adminPort}/readyz`, 60000);
    await waitFor(async () => (await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status === 200, {
      timeoutMs: 30000,
      what: `${name} ready`,
    });
  } catch (err) {
    await process.stop();
    throw new Error(`${(err as Error).message}\n${process.output()}`, { cause: err });
  }
  return { data, admin: `http://127.0.0.1:${adminPort}`, process };
}

describe(
  'compat.reference_names: taking over a reference deployment',
  {
    skip: skipWithoutEtcd() || skipWithoutRedis(),
  },
  () => {
    let etcd: EtcdServer;
    let redis: RedisServer;
    let raw: Redis;
    let dir: ReturnType<typeof tempDir>;
    let reference: Running;
    let ours: Running;
    const sessionId = randomBytes(16).toString('hex');
    const slot = Math.floor(Date.now() / (WINDOW_SECONDS * 1000));

    before(async () => {
      dir = tempDir('switchyard-compat-');
      [etcd, redis] = await Promise.all([startEtcd(), startRedis()]);
      raw = new Redis(redis.url);
      // The reference's etcd tree: <prefix>/<family>/<name>, each value the resource as JSON.
      const tree = config(redis.url);
      for (const [family, items] of Object.entries(tree))
        for (const item of items) await etcd.put(`/featherbit/${family}/${item.name}`, JSON.stringify(item));
      // Its Redis keys under key_prefix fb: a session of alice and bob's counter, already at the limit.
      await raw.set(`fb:sess:{${sessionId}}`, referenceSeal({ user: 'alice' }, 600), 'EX', 600);
      await raw.set(
        `fb:sess:{${sessionId}}:meta`,
        JSON.stringify({ subject: 'alice', plugin: 'cas-auth', policy: 'sso', route: 'app' }),
        'EX',
        600,
      );
      // Both this window and the next, so a boundary crossed mid-test cannot reset bob.
      for (const s of [slot, slot + 1])
        await raw.set(`fb:cnt:${s}:bob`, '2', 'PX', 2 * WINDOW_SECONDS * 1000);
      reference = await startGateway(
        etcd,
        dir.path,
        'reference',
        redis.url,
        'compat: { reference_names: true }',
      );
      ours = await startGateway(etcd, dir.path, 'ours', redis.url, '');
    });
    after(async () => {
      await Promise.all([reference?.process.stop(), ours?.process.stop()]);
      raw?.disconnect();
      await Promise.all([etcd?.stop(), redis?.stop()]);
      dir?.remove();
    });

    test('routes load from the reference etcd prefix; without the switch the gateway seeds its own', async () => {
      assert.equal(
        (await request(`${reference.data}/limited`, { headers: { 'x-user': 'dave' } })).status,
        200,
      );
      // Ours found /switchyard empty and seeded it from the local file; the reference tree is untouched.
      const keys = await etcd.keys('/switchyard/');
      assert.ok(keys.includes('/switchyard/routes/app'), keys.join());
      assert.ok((await etcd.keys('/featherbit/')).includes('/featherbit/policies/sso'));
    });

    test('a session the reference stored in Redis is honoured', async () => {
      const res = await request(`${reference.data}/app/home`, {
        headers: { cookie: `cas_session=${sessionId}` },
      });
      assert.equal(res.status, 200, res.body);
      assert.equal(res.body, 'hello alice');
      const anonymous = await request(`${reference.data}/app/home`);
      assert.equal(anonymous.status, 302);
    });

    test('without the switch the same cookie is no session (our key prefix and sealing)', async () => {
      const res = await request(`${ours.data}/app/home`, { headers: { cookie: `cas_session=${sessionId}` } });
      assert.equal(res.status, 302);
    });

    test('a limit counter the reference wrote keeps counting; new counters use its key layout', async () => {
      assert.equal(
        (await request(`${reference.data}/limited`, { headers: { 'x-user': 'bob' } })).status,
        429,
      );
      assert.equal(
        (await request(`${reference.data}/limited`, { headers: { 'x-user': 'carol' } })).status,
        200,
      );
      const counted = await raw.keys('fb:cnt:*:carol');
      assert.equal(counted.length, 1, counted.join());
      assert.match(counted[0] ?? '', /^fb:cnt:\d+:carol$/);
      // Without the switch bob's reference counter is not ours: our own counter starts at zero.
      assert.equal((await request(`${ours.data}/limited`, { headers: { 'x-user': 'bob' } })).status, 200);
      assert.ok((await raw.keys('sy:cnt:*bob')).length === 1);
    });

    test('the reference debug header traces and the trace id comes back under its name', async () => {
      const traced = await request(`${reference.data}/limited`, {
        headers: { 'x-user': 'erin', 'x-featherbit-debug': '1' },
      });
      assert.match(String(traced.headers['x-featherbit-trace-id']), /^[0-9a-f-]{36}$/);
      assert.equal(traced.headers['x-switchyard-trace-id'], undefined);
      const ourHeader = await request(`${reference.data}/limited`, {
        headers: { 'x-user': 'erin', 'x-switchyard-debug': '1' },
      });
      assert.equal(ourHeader.headers['x-featherbit-trace-id'], undefined);
      const unrouted = await request(`${reference.data}/nowhere`, { headers: { 'x-featherbit-debug': '1' } });
      assert.equal(unrouted.status, 404);
      assert.ok(unrouted.headers['x-featherbit-trace-id']);
    });

    test('without the switch our debug and trace-id header names apply', async () => {
      const traced = await request(`${ours.data}/limited`, {
        headers: { 'x-user': 'erin', 'x-switchyard-debug': '1' },
      });
      assert.match(String(traced.headers['x-switchyard-trace-id']), /^[0-9a-f-]{36}$/);
      const theirs = await request(`${ours.data}/limited`, {
        headers: { 'x-user': 'erin', 'x-featherbit-debug': '1' },
      });
      assert.equal(theirs.headers['x-switchyard-trace-id'], undefined);
      assert.equal(theirs.headers['x-featherbit-trace-id'], undefined);
    });

    test('proxy-cache answers with the reference cache-status header (ours without the switch)', async () => {
      const first = await request(`${reference.data}/cached`);
      assert.equal(first.headers['featherbit-cache-status'], 'MISS');
      const second = await request(`${reference.data}/cached`);
      assert.equal(second.headers['featherbit-cache-status'], 'HIT');
      assert.equal(second.headers['switchyard-cache-status'], undefined);
      await request(`${ours.data}/cached`);
      assert.equal((await request(`${ours.data}/cached`)).headers['switchyard-cache-status'], 'HIT');
    });

    test('the Admin API challenge names the reference realm (ours without the switch)', async () => {
      const theirs = await fetch(`${reference.admin}/api/routes`);
      assert.equal(theirs.status, 401);
      assert.equal(theirs.headers.get('www-authenticate'), 'Basic realm="featherbit admin"');
      const mine = await fetch(`${ours.admin}/api/routes`);
      assert.equal(mine.headers.get('www-authenticate'), 'Basic realm="switchyard admin"');
      const settings = await fetch(`${reference.admin}/api/debug/config`, {
        headers: { authorization: `Basic ${Buffer.from('admin:secret-password').toString('base64')}` },
      });
      const body = (await settings.json()) as Record<string, unknown>;
      assert.equal(body['trigger_header'], 'x-featherbit-debug');
      assert.equal(body['trace_id_header'], 'x-featherbit-trace-id');
    });
  },
);

describe('compat names resolution', () => {
  test('the switch picks the reference names; a compat key or the feature key overrides one name', () => {
    const system = parseSystemConfig(
      [
        'admin: { username: a, password: secret-password, realm: corp admin }',
        "config: { source: etcd, etcd: { endpoints: ['http://127.0.0.1:2379'] } }",
        'debug: { trigger_header: X-Trace-Me }',
        'compat: { reference_names: true, store_key_prefix: shop }',
      ].join('\n'),
      {},
    );
    assert.equal(system.debug.trigger_header, 'x-trace-me');
    assert.equal(system.debug.trace_id_header, 'x-featherbit-trace-id');
    assert.equal(system.admin?.realm, 'corp admin');
    assert.equal(system.config.etcd?.prefix, '/featherbit');
    const names = resolveCompatNames(system.compat);
    assert.equal(names.storeKeyPrefix, 'shop');
    assert.equal(names.cacheStatusHeader, 'featherbit-cache-status');
    assert.equal(names.storeLayout, 'reference');
  });

  test('without a compat block every name is ours', () => {
    const system = parseSystemConfig(
      "config: { source: etcd, etcd: { endpoints: ['http://127.0.0.1:2379'] } }",
      {},
    );
    assert.equal(system.debug.trigger_header, 'x-switchyard-debug');
    assert.equal(system.debug.trace_id_header, 'x-switchyard-trace-id');
    assert.equal(system.config.etcd?.prefix, '/switchyard');
    assert.deepEqual(resolveCompatNames(system.compat), resolveCompatNames(undefined));
    assert.equal(resolveCompatNames(undefined).storeKeyPrefix, 'sy');
  });

  test('a compat value of the wrong kind is rejected with its key path', () => {
    assert.throws(
      () => parseSystemConfig('compat: { store_layout: fb }', {}),
      (err: unknown) => JSON.stringify(err).includes('compat.store_layout'),
    );
  });
});
