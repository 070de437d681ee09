import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { read, startAdmin, type AdminHarness } from '../admin/harness.js';
import { Browser } from '../support/browser.js';
import { startCasServer, type CasServer } from '../support/cas-server.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { skipWithoutRedis, startRedis, type RedisServer } from '../support/redis.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const gatewayYaml = (storage: 'cookie' | 'kvstore'): string => `
stores:
  - { name: main, type: redis, url: '\${REDIS_URL}' }
  - { name: spare, type: redis, url: '\${REDIS_URL}', key_prefix: spare }
routes:
  - { name: app, match: { path: /app/* }, policy: sso }
policies:
  - name: sso
    nodes:
      - { id: in, type: listener }
      - id: cas
        type: cas-auth
        config:
          idp_uri: \${CAS_URL}
          session_secret: \${SESSION_SECRET}
          session_storage: ${storage === 'kvstore' ? 'redis' : 'cookie'}
          ${storage === 'kvstore' ? 'session_store: main' : ''}
      - { id: show, type: echo, config: { body: 'hello {{message.user}}' } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: cas.in }
      - { from: cas.success, to: show.in }
      - { from: cas.denied, to: out.in }
      - { from: cas.redirect, to: out.in }
      - { from: show.success, to: out.in }
`;

interface Listed {
  sessions: {
    id: string;
    subject: string;
    plugin: string;
    policy: string;
    route: string;
    created_at: number;
    expires_at: number;
  }[];
  next_cursor: string | null;
}

describe('sessions through the Admin API', { skip: skipWithoutRedis() }, () => {
  let redis: RedisServer;
  let cas: CasServer;
  let h: AdminHarness;

  before(async () => {
    redis = await startRedis();
    cas = await startCasServer();
    h = await startAdmin({
      gatewayYaml: gatewayYaml('kvstore'),
      env: { REDIS_URL: redis.url, CAS_URL: cas.url, SESSION_SECRET: 'shared secret' },
    });
  });
  after(async () => {
    await h.stop();
    await cas.close();
    await redis.stop();
  });

  const login = async (user: string): Promise<{ browser: Browser; id: string }> => {
    const browser = new Browser();
    const service = `${h.data}/app/home`;
    const res = await browser.get(`${service}?ticket=${cas.issueTicket(user, service)}`);
    assert.equal(res.status, 302);
    return { browser, id: browser.cookie('127.0.0.1', 'cas_session') ?? '' };
  };

  test('E2E-STORE-04: /api/sessions without store is 400; an unknown store is 404', async () => {
    assert.equal((await h.call('GET', '/api/sessions')).status, 400);
    assert.equal((await h.call('GET', '/api/sessions?store=nope')).status, 404);
    assert.equal((await h.call('DELETE', '/api/sessions?subject=a')).status, 400);
    assert.equal((await h.call('DELETE', '/api/sessions?store=main')).status, 400);
    assert.equal((await h.call('DELETE', `/api/sessions/nope/${'a'.repeat(32)}`)).status, 404);
    assert.equal((await h.call('DELETE', '/api/sessions/main/not-an-id')).status, 400);
    assert.equal((await h.call('GET', '/api/sessions?store=main&limit=0')).status, 400);
    assert.equal((await h.call('GET', '/api/sessions')).headers.get('content-type'), 'application/json');
  });

  test('E2E-SESS-01/02: a session is a 32-hex cookie listed with its metadata only', async () => {
    const before = Math.floor(Date.now() / 1000);
    const { id } = await login('alice');
    assert.match(id, /^[0-9a-f]{32}$/);
    const { status, body } = await read(await h.call('GET', '/api/sessions?store=main&subject=alice'));
    assert.equal(status, 200);
    const listed = body as Listed;
    const record = listed.sessions.find((s) => s.id === id);
    assert.ok(record, JSON.stringify(listed));
    assert.deepEqual(Object.keys(record).sort(), [
      'created_at',
      'expires_at',
      'id',
      'plugin',
      'policy',
      'route',
      'subject',
    ]);
    assert.equal(record.subject, 'alice');
    assert.equal(record.plugin, 'cas-auth');
    assert.equal(record.policy, 'sso');
    assert.equal(record.route, 'app');
    assert.ok(record.created_at >= before);
    assert.equal(record.expires_at - record.created_at, 3600);
    const all = (await read(await h.call('GET', '/api/sessions?store=main&plugin=cas-auth'))).body as Listed;
    assert.ok(all.sessions.some((s) => s.id === id));
    const otherStore = (await read(await h.call('GET', '/api/sessions?store=spare'))).body as Listed;
    assert.deepEqual(otherStore, { sessions: [], next_cursor: null });
  });

  test('E2E-SESS-03: a session revoked through the Admin API stops working at once', async () => {
    const { browser, id } = await login('bob');
    assert.equal((await browser.get(`${h.data}/app/x`)).body, 'hello bob');
    const res = await h.call('DELETE', `/api/sessions/main/${id}`);
    assert.deepEqual(await read(res), { status: 200, body: { status: 'deleted' } });
    const after = await browser.get(`${h.data}/app/x`);
    assert.equal(after.status, 302);
    assert.match(String(after.headers.location), /\/cas\/login\?service=/);
  });

  test('sessions: DELETE /api/sessions?store=&subject= revokes every session of the subject', async () => {
    const one = await login('carol');
    const two = await login('carol');
    const keep = await login('dave');
    const { body } = await read(await h.call('DELETE', '/api/sessions?store=main&subject=carol'));
    assert.deepEqual(body, { revoked: 2 });
    assert.equal((await one.browser.get(`${h.data}/app/x`)).status, 302);
    assert.equal((await two.browser.get(`${h.data}/app/x`)).status, 302);
    assert.equal((await keep.browser.get(`${h.data}/app/x`)).body, 'hello dave');
  });

  test('sessions: a store outage answers 502 on the session endpoints', async () => {
    await redis.stop();
    try {
      assert.equal((await h.call('GET', '/api/sessions?store=main')).status, 502);
      assert.equal((await h.call('DELETE', '/api/sessions?store=main&subject=x')).status, 502);
      assert.equal((await h.call('DELETE', `/api/sessions/main/${'b'.repeat(32)}`)).status, 502);
    } finally {
      await redis.start();
    }
    await waitFor(async () => (await h.call('GET', '/api/sessions?store=main')).status === 200, {
      what: 'the store to return',
    });
  });
});

describe('sessions across gateway processes', { skip: skipWithoutRedis() }, () => {
  let redis: RedisServer;
  let cas: CasServer;
  before(async () => {
    redis = await startRedis();
    cas = await startCasServer();
  });
  after(async () => {
    await cas.close();
    await redis.stop();
  });

  for (const storage of ['cookie', 'kvstore'] as const) {
    test(`sessions (${storage}): two gateway processes with the same secret accept each other's sessions`, async () => {
      const dir = tempDir('switchyard-cas-');
      const procs: GatewayProcess[] = [];
      try {
        writeFileSync(join(dir.path, 'gateway.yaml'), gatewayYaml(storage));
        const urls: string[] = [];
        for (const name of ['a', 'b']) {
          const port = await freePort();
          const system = join(dir.path, `system-${name}.yaml`);
          writeFileSync(system, `listener: { bind: 127.0.0.1, port: ${port} }\nconfig: { watch: false }\n`);
          procs.push(
            spawnGateway(['--system-config', system, '--gateway-config', join(dir.path, 'gateway.yaml')], {
              REDIS_URL: redis.url,
              CAS_URL: cas.url,
              SESSION_SECRET: 'one secret for every instance',
            }),
          );
          urls.push(`http://127.0.0.1:${port}`);
        }
        const [a = '', b = ''] = urls;
        // Each process compiles the sources through tsx at start: slow on a busy machine.
        await Promise.all(urls.map((u) => waitForHttp(`${u}/healthz`, 60_000)));
        const browser = new Browser();
        const service = `${a}/app/home`;
        const res = await browser.get(`${service}?ticket=${cas.issueTicket('erin', service)}`);
        assert.equal(res.status, 302);
        const onB = await browser.get(`${b}/app/home`);
        assert.equal(onB.status, 200, procs.map((p) => p.output()).join('\n'));
        assert.equal(onB.body, 'hello erin');
      } finally {
        await Promise.all(procs.map((p) => p.stop()));
        dir.remove();
      }
    });
  }
});
