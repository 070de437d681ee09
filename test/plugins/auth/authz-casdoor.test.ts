import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import { authzCasdoor } from '../../../src/plugins/auth/authz-casdoor.js';
import type { NodeInstance } from '../../../src/core/plugin.js';
import type { StoreSet } from '../../../src/stores/index.js';
import { startCasdoorServer, type CasdoorServer } from '../../support/casdoor-server.js';
import { request, type SimpleResponse } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { deadPort, echo, startOrigin, type Origin } from '../../support/origins.js';
import { instantiate, pluginEnv, requestContext } from '../../support/plugin-env.js';
import { skipWithoutRedis, startRedis, testStores, type RedisServer } from '../../support/redis.js';
import { responseJson, runNode } from './helpers.js';
import { assertConfigError, assertSchemaRejects, failsWith } from '../../support/node-run.js';

const APP = 'http://app.test';
const SECRET = 'casdoor session secret';
let casdoor: CasdoorServer;
let backend: Origin;
let gateway: RunningGateway;
const nodes: NodeInstance<string>[] = [];

/** The app's policy: authz-casdoor in front of an echo showing what it attached. */
const appPolicy = (name: string, config: Record<string, unknown>) => `
  - name: ${name}
    nodes:
      - { id: in, type: listener }
      - { id: casdoor, type: authz-casdoor, config: ${JSON.stringify(config)} }
      - { id: show, type: echo, config: { body: '{{message.user}}|{{message.user_id}}|{{message.consumer.name}}' } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: casdoor.in }
      - { from: casdoor.success, to: show.in }
      - { from: casdoor.denied, to: out.in }
      - { from: casdoor.redirect, to: out.in }
      - { from: casdoor.error, to: out.in }
      - { from: show.success, to: out.in }`;

before(async () => {
  casdoor = await startCasdoorServer({
    clients: {
      'e2e-client': { secret: 'e2e-secret', redirectUris: [`${APP}/callback`] },
      'other-app': { secret: 'other-secret', redirectUris: [`${APP}/other/callback`] },
    },
  });
  backend = await startOrigin(echo('backend'));
  const client = { endpoint_addr: casdoor.url, client_id: 'e2e-client', client_secret: 'e2e-secret' };
  gateway = await startGateway(`
routes:
  - { name: api, match: { path: /casdoor/* }, policy: api-policy }
  - { name: app, match: { path: /app/* }, policy: app-policy }
  - { name: callback, match: { path: /callback }, policy: app-policy }
  - { name: logout, match: { path: /logout }, policy: app-policy }
  - { name: other, match: { path: /other/* }, policy: other-policy }
policies:
  - name: api-policy
    nodes:
      - { id: listener, type: listener }
      - { id: casdoor, type: authz-casdoor, config: ${JSON.stringify(client)} }
      - { id: strip, type: proxy-rewrite, config: { phase: request, strip_path_prefix: /casdoor } }
      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${backend.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: casdoor.in }
      - { from: casdoor.success, to: strip.in }
      - { from: strip.success, to: backend.in }
      - { from: backend.success, to: client.in }
      - { from: casdoor.denied, to: client.in }
      - { from: casdoor.redirect, to: client.in }
      - { from: casdoor.error, to: client.in }
${appPolicy('app-policy', { ...client, callback_url: `${APP}/callback`, session_secret: SECRET, logout_path: '/logout' })}
${appPolicy('other-policy', {
  endpoint_addr: casdoor.url,
  client_id: 'other-app',
  client_secret: 'other-secret',
  callback_url: `${APP}/other/callback`,
  session: { secret: SECRET },
})}
`);
});

after(async () => {
  for (const node of nodes) await node.close?.();
  await gateway.stop();
  await Promise.all([casdoor.close(), backend.close()]);
  await closeAllPools();
});

/** Just enough of a browser: one cookie jar for app.test, requests sent to the gateway. */
class Jar {
  readonly cookies = new Map<string, string>();

  async get(path: string): Promise<SimpleResponse> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await request(`${gateway.url}${path}`, {
      headers: { host: 'app.test', ...(cookie === '' ? {} : { cookie }) },
    });
    for (const line of res.headers['set-cookie'] ?? []) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      if (/Max-Age=0(;|$)/.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, pair.slice(eq + 1));
    }
    return res;
  }
}

/** Signs in at the fake Casdoor's form and returns the callback path (with code and state). */
async function signIn(authorizeUrl: string, user = 'alice', password = 'alice-pw'): Promise<string> {
  const posted = await request(authorizeUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username: user, password }).toString(),
  });
  assert.equal(posted.status, 302, posted.body);
  const back = new URL(String(posted.headers.location));
  assert.equal(back.origin, APP);
  return `${back.pathname}${back.search}`;
}

/** The whole browser login; returns the response of the callback. */
async function login(jar: Jar, start = '/app/page?x=1'): Promise<SimpleResponse> {
  const first = await jar.get(start);
  assert.equal(first.status, 302);
  return jar.get(await signIn(String(first.headers.location)));
}

function create(config: Record<string, unknown>, env = pluginEnv()): NodeInstance<string> {
  const node = instantiate(
    authzCasdoor,
    { endpoint_addr: casdoor.url, client_id: 'e2e-client', client_secret: 'e2e-secret', ...config },
    env,
  );
  nodes.push(node);
  return node;
}

const bearer = (token: string) =>
  requestContext({ headers: { host: 'gw.test', authorization: `Bearer ${token}` } });

describe('authz-casdoor: bearer tokens (no session secret)', () => {
  test('authz-casdoor: an active token leaves by success with the Casdoor user attached', async () => {
    const token = casdoor.issueToken('alice');
    const ctx = bearer(token);
    assert.equal(await runNode(create({}), ctx), 'success');
    assert.equal(ctx.message['user'], 'alice');
    assert.equal(typeof ctx.message['user_id'], 'string');
    assert.equal(ctx.consumer?.name, 'alice');
    assert.equal(ctx.message['consumer.auth_type'], 'authz-casdoor');
    const call = casdoor.calls.at(-1)!;
    assert.equal(call.path, '/api/login/oauth/introspect');
    assert.equal(
      call.headers.authorization,
      `Basic ${Buffer.from('e2e-client:e2e-secret').toString('base64')}`,
    );
    assert.equal(call.form.get('token'), token);
    assert.equal(call.form.get('token_type_hint'), 'access_token');
  });

  test('authz-casdoor: no token, or an inactive one, leaves by denied with 403 access_denied', async () => {
    const calls = casdoor.calls.length;
    const none = requestContext();
    assert.equal(await runNode(create({}), none), 'denied');
    assert.equal(none.response.status, 403);
    assert.deepEqual(responseJson(none), { error: 'access_denied' });
    assert.equal(casdoor.calls.length, calls, 'no token: no callout');
    const token = casdoor.issueToken('bob');
    casdoor.revoke(token);
    const inactive = bearer(token);
    assert.equal(await runNode(create({}), inactive), 'denied');
    assert.equal(inactive.response.status, 403);
    assert.equal(inactive.consumer, undefined);
  });

  test('authz-casdoor: Casdoor refusing the client, failing or silent → 502 AUTHZ_CASDOOR_ERROR', async () => {
    const token = casdoor.issueToken('alice');
    const wrongSecret = await failsWith(
      create({ client_secret: 'nope' }),
      bearer(token),
      'AUTHZ_CASDOOR_ERROR',
      502,
    );
    assert.equal(wrongSecret.error, 'provider_error');
    assert.match(wrongSecret.message, /answered 401 \(invalid_client\)/);
    assert.deepEqual(wrongSecret.metadata, { endpoint: `${casdoor.url}/api/login/oauth/introspect` });
    try {
      for (const fault of ['status-500', 'garbage', 'reset'] as const) {
        casdoor.fault = fault;
        await failsWith(create({}), bearer(token), 'AUTHZ_CASDOOR_ERROR', 502);
      }
      casdoor.fault = 'hang';
      const slow = await failsWith(create({ timeout: 100 }), bearer(token), 'AUTHZ_CASDOOR_ERROR', 502);
      assert.match(slow.message, /no answer within 100 ms/);
    } finally {
      casdoor.fault = 'none';
    }
    const port = await deadPort();
    await failsWith(
      create({ endpoint_addr: `http://127.0.0.1:${port}` }),
      bearer(token),
      'AUTHZ_CASDOOR_ERROR',
      502,
    );
  });

  test('authz-casdoor: E2E-CASDOOR-01 no token 403; E2E-CASDOOR-02 active 200; E2E-CASDOOR-03 inactive 403', async () => {
    assert.equal((await request(`${gateway.url}/casdoor/thing`)).status, 403);
    const token = casdoor.issueToken('alice');
    const active = await request(`${gateway.url}/casdoor/thing`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(active.status, 200);
    assert.equal((JSON.parse(active.body) as { url: string }).url, '/thing');
    const inactive = await request(`${gateway.url}/casdoor/thing`, {
      headers: { authorization: 'Bearer expired-or-revoked' },
    });
    assert.equal(inactive.status, 403);
    casdoor.fault = 'status-500';
    try {
      const down = await request(`${gateway.url}/casdoor/thing`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(down.status, 502);
      assert.equal((JSON.parse(down.body) as { error: string }).error, 'provider_error');
      assert.equal(down.headers['www-authenticate'], undefined);
    } finally {
      casdoor.fault = 'none';
    }
  });
});

describe('authz-casdoor: browser login (session secret set)', () => {
  test('authz-casdoor: no session → 302 to Casdoor authorize with state, and a sealed flow cookie', async () => {
    const jar = new Jar();
    const res = await jar.get('/app/page?x=1');
    assert.equal(res.status, 302);
    assert.equal(res.headers['cache-control'], 'no-store');
    const location = new URL(String(res.headers.location));
    assert.equal(`${location.origin}${location.pathname}`, `${casdoor.url}/login/oauth/authorize`);
    assert.equal(location.searchParams.get('client_id'), 'e2e-client');
    assert.equal(location.searchParams.get('response_type'), 'code');
    assert.equal(location.searchParams.get('redirect_uri'), `${APP}/callback`);
    assert.equal(location.searchParams.get('scope'), 'read');
    assert.match(location.searchParams.get('state') ?? '', /^[0-9a-f]{32}$/);
    const flow = (res.headers['set-cookie'] ?? []).find((c) => c.startsWith('casdoor_session_flow='));
    assert.ok(flow !== undefined);
    assert.match(flow, /Path=\/; Max-Age=300; HttpOnly; SameSite=Lax/);
    assert.ok(!flow.includes(location.searchParams.get('state') ?? '-'), 'the state is sealed, not readable');
  });

  test('authz-casdoor: the callback exchanges the code, sets the session and returns to the page', async () => {
    const jar = new Jar();
    const back = await login(jar);
    assert.equal(back.status, 302);
    assert.equal(back.headers.location, '/app/page?x=1');
    const setCookies = back.headers['set-cookie'] ?? [];
    assert.ok(
      setCookies.some((c) => /^casdoor_session_flow=; .*Max-Age=0/.test(c)),
      'the flow cookie is cleared',
    );
    const session = setCookies.find((c) => c.startsWith('casdoor_session='));
    assert.match(session ?? '', /Path=\/; Max-Age=3600; HttpOnly; SameSite=Lax/);
    const exchange = casdoor.calls.filter((c) => c.path === '/api/login/oauth/access_token').at(-1)!;
    assert.equal(exchange.form.get('grant_type'), 'authorization_code');
    assert.equal(exchange.form.get('client_id'), 'e2e-client');
    assert.equal(exchange.form.get('client_secret'), 'e2e-secret');
    assert.equal(exchange.form.get('redirect_uri'), `${APP}/callback`);

    const calls = casdoor.calls.length;
    const page = await jar.get('/app/page?x=1');
    assert.equal(page.status, 200);
    const [user, userId, consumer] = page.body.split('|');
    assert.equal(user, 'alice');
    assert.match(userId ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(consumer, 'alice');
    assert.equal(casdoor.calls.length, calls, 'a session needs no callout');
  });

  test('authz-casdoor: an opaque access token is named through introspection', async () => {
    casdoor.opaqueTokens = true;
    try {
      const jar = new Jar();
      assert.equal((await login(jar)).status, 302);
      assert.equal(casdoor.calls.at(-1)!.path, '/api/login/oauth/introspect');
      assert.equal((await jar.get('/app/page')).body.split('|')[0], 'alice');
    } finally {
      casdoor.opaqueTokens = false;
    }
  });

  test('authz-casdoor: logout_path ends the session and redirects to /', async () => {
    const jar = new Jar();
    await login(jar);
    const out = await jar.get('/logout');
    assert.equal(out.status, 302);
    assert.equal(out.headers.location, '/');
    assert.ok((out.headers['set-cookie'] ?? []).some((c) => /^casdoor_session=; .*Max-Age=0/.test(c)));
    assert.equal((await jar.get('/app/page')).status, 302, 'back to login');
  });

  test('authz-casdoor: a callback with a wrong state, no flow cookie, a refusal or a spent code is a 403', async () => {
    const jar = new Jar();
    const first = await jar.get('/app/page');
    const callback = await signIn(String(first.headers.location));
    const forged = callback.replace(/state=[0-9a-f]+/, `state=${'0'.repeat(32)}`);
    const wrongState = await jar.get(forged);
    assert.equal(wrongState.status, 403);
    assert.deepEqual(JSON.parse(wrongState.body), { error: 'access_denied' });

    const noFlow = await new Jar().get(callback);
    assert.equal(noFlow.status, 403);

    const refusing = new Jar();
    const start = await refusing.get('/app/page');
    const state = new URL(String(start.headers.location)).searchParams.get('state') ?? '';
    assert.equal((await refusing.get(`/callback?error=access_denied&state=${state}`)).status, 403);

    const replay = new Jar();
    const replayStart = await replay.get('/app/page');
    const replayCallback = await signIn(String(replayStart.headers.location));
    assert.equal((await replay.get(replayCallback)).status, 302);
    const again = new Jar();
    const againStart = await again.get('/app/page');
    const againState = new URL(String(againStart.headers.location)).searchParams.get('state') ?? '';
    const spent = replayCallback.replace(/state=[0-9a-f]+/, `state=${againState}`);
    assert.equal((await again.get(spent)).status, 403, 'a code is single use');
  });

  test('authz-casdoor: a session of another app, or a tampered cookie, is no session', async () => {
    const jar = new Jar();
    await login(jar);
    const foreign = await jar.get('/other/page');
    assert.equal(foreign.status, 302, 'same cookie name and secret, other client_id');
    assert.match(String(foreign.headers.location), /client_id=other-app/);
    const tampered = new Jar();
    tampered.cookies.set('casdoor_session', `${jar.cookies.get('casdoor_session') ?? ''}x`);
    assert.equal((await tampered.get('/app/page')).status, 302);
  });

  test('authz-casdoor: the token endpoint failing during the callback → 502, no session', async () => {
    const jar = new Jar();
    const first = await jar.get('/app/page');
    const callback = await signIn(String(first.headers.location));
    casdoor.fault = 'status-500';
    casdoor.faultPath = '/api/login/oauth/access_token';
    try {
      const res = await jar.get(callback);
      assert.equal(res.status, 502);
      assert.equal((JSON.parse(res.body) as { error: string }).error, 'provider_error');
      assert.equal(jar.cookies.get('casdoor_session'), undefined);
    } finally {
      casdoor.fault = 'none';
      casdoor.faultPath = undefined;
    }
  });
});

describe('authz-casdoor: kvstore sessions', { skip: skipWithoutRedis() }, () => {
  let redis: RedisServer;
  let stores: StoreSet;
  before(async () => {
    redis = await startRedis();
    stores = testStores({ main: redis.url });
  });
  after(async () => {
    stores.release();
    await redis.stop();
  });

  test('authz-casdoor (kvstore): the browser holds an id; a store outage is 503 SESSION_STORE_ERROR', async () => {
    const node = create(
      { callback_url: `${APP}/callback`, session: { secret: SECRET, storage: 'kvstore', store: 'main' } },
      pluginEnv({ stores }),
    );
    const start = requestContext({ url: '/app/page' });
    assert.equal(await runNode(node, start), 'redirect');
    const flow = String((start.response.headers['set-cookie'] as string[])[0]).split(';')[0] ?? '';
    const state = new URL(String(start.response.headers['location'])).searchParams.get('state') ?? '';
    const code = casdoor.issueCode('alice', 'e2e-client', `${APP}/callback`);
    const callback = requestContext({
      url: `/callback?code=${code}&state=${state}`,
      headers: { host: 'app.test', cookie: flow },
    });
    assert.equal(await runNode(node, callback), 'redirect');
    const session = (callback.response.headers['set-cookie'] as string[]).find((c) =>
      c.startsWith('casdoor_session='),
    );
    const id = (session ?? '').split(';')[0]!.slice('casdoor_session='.length);
    assert.match(id, /^[0-9a-f]{32}$/);
    const page = requestContext({
      url: '/app/page',
      headers: { host: 'app.test', cookie: `casdoor_session=${id}` },
    });
    assert.equal(await runNode(node, page), 'success');
    assert.equal(page.message['user'], 'alice');
    await redis.stop();
    try {
      const down = requestContext({
        url: '/app/page',
        headers: { host: 'app.test', cookie: `casdoor_session=${id}` },
      });
      await failsWith(node, down, 'SESSION_STORE_ERROR', 503);
    } finally {
      await redis.start();
    }
  });
});

test('authz-casdoor: config rejections', () => {
  const base = { endpoint_addr: 'http://door.test', client_id: 'c', client_secret: 's' };
  const build = (config: Record<string, unknown>, env = pluginEnv()) =>
    instantiate(authzCasdoor, config, env);
  assertSchemaRejects(() => build({ client_id: 'c', client_secret: 's' }), 'endpoint_addr');
  assertSchemaRejects(() => build({ endpoint_addr: 'http://door.test', client_secret: 's' }), 'client_id');
  assertSchemaRejects(() => build({ endpoint_addr: 'http://door.test', client_id: 'c' }), 'client_secret');
  assertConfigError(() => build({ ...base, endpoint_addr: 'door.test' }), 'endpoint_addr', /absolute URL/);
  assertConfigError(() => build({ ...base, session_secret: 'k' }), 'callback_url', /required/);
  assertConfigError(() => build({ ...base, session_secret: 'k', callback_url: '/callback' }), 'callback_url');
  assertConfigError(
    () =>
      build({ ...base, callback_url: 'https://app/cb', session: { secret: 'k', cookie: { path: '/app' } } }),
    'session.cookie.path',
    /does not cover/,
  );
  assertConfigError(
    () =>
      build({ ...base, callback_url: 'https://app/cb', session_secret: 'k', session_cookie_path: '/app' }),
    'session_cookie_path',
  );
  assertConfigError(() => build({ ...base, logout_path: 'logout' }), 'logout_path');
  assertConfigError(
    () => build({ ...base, session_secret: '', callback_url: 'https://app/cb' }),
    'session_secret',
  );
  assertConfigError(
    () => build({ ...base, callback_url: 'https://app/cb', session: { secret: 'k', storage: 'redis' } }),
    'session.store',
  );
  assertSchemaRejects(() => build({ ...base, timeout: 0 }), 'timeout');
  assertSchemaRejects(() => build({ ...base, cookie: { secret: 'k' } }), 'cookie');
  const env = pluginEnv();
  void build({ ...base, callback_url: 'https://app/cb' }, env).close?.();
  assert.match(env.warnings[0]?.message ?? '', /no effect without a session secret/);
  void build({
    ...base,
    callback_url: 'https://app/app/cb',
    session_secret: 'k',
    session_cookie_path: '/app',
  }).close?.();
});
