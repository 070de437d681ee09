import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { NodeError } from '../../src/core/errors.js';
import { Sealer } from '../../src/sessions/sealer.js';
import {
  deleteSession,
  deleteSubjectSessions,
  listSessions,
  resolveSessionSettings,
  Sessions,
  type SessionConfig,
} from '../../src/sessions/index.js';
import type { StoreSet } from '../../src/stores/index.js';
import { freePort } from '../support/free-port.js';
import { pluginEnv, requestContext } from '../support/plugin-env.js';
import { skipWithoutRedis, startRedis, testStores, type RedisServer } from '../support/redis.js';
import { assertConfigError } from '../support/node-run.js';

const setCookies = (headers: Record<string, unknown>): string[] =>
  (headers['set-cookie'] as string[] | undefined) ?? [];
const cookieValue = (header: string): string => header.slice(header.indexOf('=') + 1, header.indexOf(';'));

describe('sessions: sealing', () => {
  test('sessions: a sealed token opens with the same secret and context only', () => {
    const sealer = new Sealer('s');
    const token = sealer.seal('{"a":1}', 'ctx');
    assert.equal(sealer.open(token, 'ctx'), '{"a":1}');
    assert.equal(new Sealer('s').open(token, 'ctx'), '{"a":1}', 'another instance with the same secret');
    assert.equal(new Sealer('other').open(token, 'ctx'), undefined);
    assert.equal(sealer.open(token, 'other-ctx'), undefined);
  });

  test('sessions: tampered, truncated and malformed tokens do not open', () => {
    const sealer = new Sealer('x'.repeat(1000));
    const token = sealer.seal('payload', 'c');
    const raw = Buffer.from(token, 'base64url');
    raw[raw.length - 20] = (raw[raw.length - 20] ?? 0) ^ 1;
    assert.equal(sealer.open(raw.toString('base64url'), 'c'), undefined);
    assert.equal(sealer.open(token.slice(0, -4), 'c'), undefined);
    assert.equal(sealer.open(token.slice(0, 10), 'c'), undefined);
    assert.equal(sealer.open('not a token at all', 'c'), undefined);
    assert.equal(sealer.open('', 'c'), undefined);
  });
});

describe('sessions: settings', () => {
  let stores: StoreSet;
  before(() => {
    stores = testStores({ main: 'redis://127.0.0.1:6399' });
  });
  after(() => stores.release());
  const resolve = (config: SessionConfig) =>
    resolveSessionSettings(config, pluginEnv({ stores }), 'cas_session');

  test('sessions: no secret means stateless', () => {
    assert.equal(resolve({}), undefined);
  });

  test('sessions: defaults are cookie storage, cookie cas_session, path /, lifetime 3600', () => {
    const s = resolve({ session: { secret: 'k' } });
    assert.equal(s?.storage, 'cookie');
    assert.deepEqual(s?.cookie, { name: 'cas_session', path: '/', lifetime: 3600 });
  });

  test('sessions: flat aliases and the redis spelling resolve like the nested keys', () => {
    const s = resolve({
      session_secret: 'k',
      session_storage: 'redis',
      session_store: 'main',
      session_cookie_name: 'sid',
      session_cookie_path: '/app',
      session_cookie_lifetime: 60,
    });
    assert.equal(s?.storage, 'kvstore');
    assert.equal(s?.store?.name, 'main');
    assert.deepEqual(s?.cookie, { name: 'sid', path: '/app', lifetime: 60 });
  });

  test('sessions: kvstore needs a known store; an empty secret and conflicting aliases are rejected', () => {
    assertConfigError(() => resolve({ session: { secret: 'k', storage: 'kvstore' } }), 'session.store');
    assertConfigError(
      () => resolve({ session: { secret: 'k', storage: 'kvstore', store: 'nope' } }),
      'session.store',
      /unknown store 'nope'/,
    );
    assertConfigError(
      () => resolve({ session_secret: 'k', session_storage: 'kvstore', session_store: 'nope' }),
      'session_store',
    );
    assertConfigError(() => resolve({ session: { secret: '' } }), 'session.secret');
    assertConfigError(
      () => resolve({ session: { secret: 'a' }, session_secret: 'b' }),
      'session.secret',
      /conflicts/,
    );
    assertConfigError(
      () => resolve({ session: { secret: 'a', cookie: { name: 'bad name' } } }),
      'session.cookie.name',
    );
    assertConfigError(
      () => resolve({ session: { secret: 'a', cookie: { path: 'app' } } }),
      'session.cookie.path',
    );
  });
});

describe('sessions: cookie storage', () => {
  const sessions = new Sessions(
    {
      secret: 'secret',
      storage: 'cookie',
      store: undefined,
      cookie: { name: 'sid', path: '/app', lifetime: 120 },
    },
    'test-plugin',
  );

  test('sessions: the cookie carries exactly Path, Max-Age, HttpOnly and SameSite=Lax; Secure only over https', async () => {
    const ctx = requestContext();
    await sessions.establish(ctx, 'alice');
    const [header = ''] = setCookies(ctx.response.headers);
    assert.match(header, /^sid=[A-Za-z0-9_-]+; Path=\/app; Max-Age=120; HttpOnly; SameSite=Lax$/);
    const secure = requestContext({ scheme: 'https' });
    await sessions.establish(secure, 'alice');
    assert.match(setCookies(secure.response.headers)[0] ?? '', /; SameSite=Lax; Secure$/);
  });

  test('sessions: the sealed cookie opens to its subject; foreign, truncated and expired ones do not', async () => {
    const ctx = requestContext();
    await sessions.establish(ctx, 'alice', { roles: ['x'] });
    const value = cookieValue(setCookies(ctx.response.headers)[0] ?? '');
    const open = (cookie: string) =>
      sessions.open(requestContext({ headers: { host: 'h', cookie: `sid=${cookie}` } }));
    const session = open(value);
    assert.ok(!(session instanceof Promise));
    assert.equal(session?.subject, 'alice');
    assert.deepEqual(session?.data, { roles: ['x'] });
    assert.equal(open(value.slice(0, -3)), undefined);
    const foreign = new Sealer('other secret').seal(
      '{"sub":"mallory","iat":0,"exp":9999999999}',
      'test-plugin|cookie',
    );
    assert.equal(open(foreign), undefined);
    const expired = new Sealer('secret').seal('{"sub":"alice","iat":0,"exp":1}', 'test-plugin|cookie');
    assert.equal(open(expired), undefined);
    const otherPlugin = new Sealer('secret').seal('{"sub":"alice","iat":0,"exp":9999999999}', 'other|cookie');
    assert.equal(open(otherPlugin), undefined);
  });

  test('sessions: end expires the cookie with the same attributes', async () => {
    const ctx = requestContext();
    await sessions.end(ctx);
    assert.deepEqual(setCookies(ctx.response.headers), [
      'sid=; Path=/app; Max-Age=0; HttpOnly; SameSite=Lax',
    ]);
  });
});

describe('sessions: kvstore storage', { skip: skipWithoutRedis() }, () => {
  let redis: RedisServer;
  let raw: Redis;
  let stores: StoreSet;
  let sessions: Sessions;
  const settings = (name: string) => ({
    secret: 'secret',
    storage: 'kvstore' as const,
    store: stores.get(name),
    cookie: { name: 'sid', path: '/', lifetime: 300 },
  });

  before(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url);
    stores = testStores({ main: redis.url, down: `redis://127.0.0.1:${await freePort()}` });
    sessions = new Sessions(settings('main'), 'test-plugin');
  });
  after(async () => {
    stores.release();
    raw.disconnect();
    await redis.stop();
  });

  const login = async (subject: string, route = 'r'): Promise<string> => {
    const ctx = requestContext();
    ctx.route = route;
    ctx.policy = 'p';
    await sessions.establish(ctx, subject);
    return cookieValue(setCookies(ctx.response.headers)[0] ?? '');
  };
  const openWith = async (id: string) =>
    sessions.open(requestContext({ headers: { host: 'h', cookie: `sid=${id}` } }));

  test('sessions: the cookie is a 32-hex id; the sealed payload and metadata live in the store', async () => {
    const id = await login('alice');
    assert.match(id, /^[0-9a-f]{32}$/);
    const sealed = await raw.get(`sy:sess:{${id}}`);
    assert.ok(sealed !== null && !sealed.includes('alice'), 'payload is sealed at rest');
    const ttl = await raw.ttl(`sy:sess:{${id}}`);
    assert.ok(ttl > 290 && ttl <= 300);
    const meta = JSON.parse((await raw.get(`sy:sess:{${id}}:meta`)) ?? '{}') as Record<string, unknown>;
    assert.deepEqual(Object.keys(meta).sort(), [
      'created_at',
      'expires_at',
      'plugin',
      'policy',
      'route',
      'subject',
    ]);
    assert.equal((await openWith(id))?.subject, 'alice');
  });

  test('sessions: an unknown, malformed or foreign-sealed id is no session', async () => {
    assert.equal(await openWith('0'.repeat(32)), undefined);
    assert.equal(await openWith('not-an-id'), undefined);
    const id = await login('carol');
    const other = new Sessions({ ...settings('main'), secret: 'another secret' }, 'test-plugin');
    assert.equal(
      await other.open(requestContext({ headers: { host: 'h', cookie: `sid=${id}` } })),
      undefined,
    );
  });

  test('sessions: list filters by subject and plugin; revoke one and revoke by subject', async () => {
    const a1 = await login('dave', 'r1');
    const a2 = await login('dave', 'r2');
    const b = await login('erin');
    const all = await listSessions(stores.get('main')!, { limit: 1000 });
    assert.ok([a1, a2, b].every((id) => all.sessions.some((s) => s.id === id)));
    const dave = await listSessions(stores.get('main')!, { subject: 'dave', limit: 10 });
    assert.deepEqual(dave.sessions.map((s) => s.id).sort(), [a1, a2].sort());
    assert.deepEqual(dave.sessions.map((s) => s.route).sort(), ['r1', 'r2']);
    assert.equal(
      (await listSessions(stores.get('main')!, { plugin: 'nope', limit: 1000 })).sessions.length,
      0,
    );
    assert.equal(await deleteSession(stores.get('main')!, b), true);
    assert.equal(await openWith(b), undefined);
    assert.equal(await deleteSubjectSessions(stores.get('main')!, 'dave'), 2);
    assert.equal(await openWith(a1), undefined);
    assert.equal(
      (await listSessions(stores.get('main')!, { subject: 'dave', limit: 10 })).sessions.length,
      0,
    );
  });

  test('sessions: pages of a subject listing follow next_cursor', async () => {
    for (let i = 0; i < 5; i++) await login('frank');
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listSessions(stores.get('main')!, { subject: 'frank', limit: 2, cursor });
      assert.ok(page.sessions.length <= 2);
      seen.push(...page.sessions.map((s) => s.id));
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
    assert.equal(new Set(seen).size, 5);
  });

  test('sessions: end deletes the stored session and expires the cookie', async () => {
    const id = await login('gina');
    const ctx = requestContext({ headers: { host: 'h', cookie: `sid=${id}` } });
    await sessions.end(ctx);
    assert.equal(await raw.exists(`sy:sess:{${id}}`), 0);
    assert.match(setCookies(ctx.response.headers)[0] ?? '', /^sid=; Path=\/; Max-Age=0;/);
  });

  test('sessions: a failing store is SESSION_STORE_ERROR 503 on open, establish and end', async () => {
    const down = new Sessions(settings('down'), 'test-plugin');
    const ctx = requestContext({ headers: { host: 'h', cookie: `sid=${'a'.repeat(32)}` } });
    const ops: (() => unknown)[] = [
      () => down.open(ctx),
      () => down.establish(ctx, 'x'),
      () => down.end(ctx),
    ];
    for (const op of ops) {
      await assert.rejects(Promise.resolve().then(op), (err: unknown) => {
        assert.ok(err instanceof NodeError);
        assert.equal(err.code, 'SESSION_STORE_ERROR');
        assert.equal(err.status, 503);
        return true;
      });
    }
  });
});
