import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import { feishuAuth } from '../../../src/plugins/auth/feishu-auth.js';
import type { NodeInstance } from '../../../src/core/plugin.js';
import { startFeishuServer, type FeishuServer } from '../../support/feishu-server.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { deadPort, echo, startOrigin, type Origin } from '../../support/origins.js';
import { instantiate, pluginEnv, requestContext } from '../../support/plugin-env.js';
import { responseJson, runNode } from './helpers.js';
import { assertConfigError, assertSchemaRejects, failsWith } from '../../support/node-run.js';

const REDIRECT = 'http://127.0.0.1:18081/feishu/callback';
let fs: FeishuServer;
let backend: Origin;
let gateway: RunningGateway;
const alice = { name: 'Alice', open_id: 'ou_alice', union_id: 'on_alice', user_id: 'u-alice' };
const nodes: NodeInstance<string>[] = [];

before(async () => {
  fs = await startFeishuServer({ 'e2e-id': 'e2e-secret' });
  fs.issueCode(alice, REDIRECT, 'good-code');
  fs.issueCode({ name: 'Bob', open_id: 'ou_bob', union_id: 'on_bob' }, REDIRECT, 'bob-code');
  fs.barred.add('barred-code');
  backend = await startOrigin(echo('backend'));
  gateway = await startGateway(`
routes:
  - { name: feishu-api, match: { path: /feishu/* }, policy: feishu-policy }
policies:
  - name: feishu-policy
    nodes:
      - { id: listener, type: listener }
      - id: feishu
        type: feishu-auth
        config:
          app_id: e2e-id
          app_secret: e2e-secret
          auth_redirect_uri: ${REDIRECT}
          access_token_url: ${fs.accessTokenUrl}
          userinfo_url: ${fs.userinfoUrl}
      - { id: strip, type: proxy-rewrite, config: { phase: request, strip_path_prefix: /feishu } }
      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${backend.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: feishu.in }
      - { from: feishu.success, to: strip.in }
      - { from: strip.success, to: backend.in }
      - { from: backend.success, to: client.in }
      - { from: feishu.denied, to: client.in }
      - { from: feishu.redirect, to: client.in }
      - { from: feishu.error, to: client.in }
`);
});

after(async () => {
  for (const node of nodes) await node.close?.();
  await gateway.stop();
  await Promise.all([fs.close(), backend.close()]);
  await closeAllPools();
});

function create(config: Record<string, unknown> = {}, env = pluginEnv()): NodeInstance<string> {
  const node = instantiate(
    feishuAuth,
    {
      app_id: 'e2e-id',
      app_secret: 'e2e-secret',
      auth_redirect_uri: REDIRECT,
      access_token_url: fs.accessTokenUrl,
      userinfo_url: fs.userinfoUrl,
      ...config,
    },
    env,
  );
  nodes.push(node);
  return node;
}

const withCode = (code: string) => requestContext({ url: `/thing?code=${code}` });

describe('feishu-auth: code exchange (stateless)', () => {
  test('feishu-auth: a valid code leaves by success with the Feishu user attached', async () => {
    const ctx = requestContext({
      url: '/thing?code=good-code',
      headers: { host: 'gw.test', 'x-userinfo': 'forged' },
    });
    assert.equal(await runNode(create(), ctx), 'success');
    assert.equal(ctx.message['user_id'], 'u-alice');
    assert.equal(ctx.consumer?.name, 'u-alice');
    assert.equal(ctx.message['consumer.auth_type'], 'feishu-auth');
    assert.equal((ctx.message['feishu_userinfo'] as Record<string, unknown>)['open_id'], 'ou_alice');
    const info = JSON.parse(
      Buffer.from(String(ctx.request.headers['x-userinfo']), 'base64').toString(),
    ) as Record<string, unknown>;
    assert.equal(info['union_id'], 'on_alice');
    const [token, userinfo] = fs.calls.slice(-2);
    assert.deepEqual(token!.json, {
      grant_type: 'authorization_code',
      client_id: 'e2e-id',
      client_secret: 'e2e-secret',
      code: 'good-code',
      redirect_uri: REDIRECT,
    });
    assert.equal(userinfo!.method, 'GET');
    assert.match(String(userinfo!.headers.authorization), /^Bearer u-[0-9a-f]+$/);
  });

  test('feishu-auth: the user id falls back to open_id; the code header wins over the query', async () => {
    const ctx = requestContext({
      url: '/t?code=bad',
      headers: { host: 'gw.test', 'x-feishu-code': 'bob-code' },
    });
    assert.equal(await runNode(create({ set_userinfo_header: false }), ctx), 'success');
    assert.equal(ctx.message['user_id'], 'ou_bob');
    assert.equal(ctx.request.headers['x-userinfo'], undefined);
  });

  test('feishu-auth: a code Feishu refuses (invalid_grant, 20010) leaves by denied with 401', async () => {
    const bad = withCode('bad-code');
    assert.equal(await runNode(create(), bad), 'denied');
    assert.equal(bad.response.status, 401);
    assert.deepEqual(responseJson(bad), {
      error: 'unauthorized',
      message: 'Feishu rejected the code (20003: The authorization code is not found.)',
    });
    const barred = withCode('barred-code');
    assert.equal(await runNode(create(), barred), 'denied');
    const otherRedirect = create({ auth_redirect_uri: 'https://elsewhere.test/cb' });
    assert.equal(await runNode(otherRedirect, withCode('good-code')), 'denied', 'redirect_uri mismatch');
    const calls = fs.calls.length;
    const none = requestContext({ url: '/thing' });
    assert.equal(await runNode(create(), none), 'denied');
    assert.deepEqual(responseJson(none), {
      error: 'unauthorized',
      message: 'Missing Feishu authorization code',
    });
    assert.equal(fs.calls.length, calls, 'no code: no callout');
  });

  test('feishu-auth: any non-zero code in a 200 answer is a refused code (401), not a provider error', async () => {
    fs.refusedInBody.set('odd-code', 20037);
    const ctx = withCode('odd-code');
    assert.equal(await runNode(create(), ctx), 'denied');
    assert.equal(ctx.response.status, 401);
    assert.match(
      String((responseJson(ctx) as Record<string, unknown>)['message']),
      /Feishu rejected the code \(20037/,
    );
  });

  test('feishu-auth: a code taken from the query is removed (with state) from what goes upstream', async () => {
    const code = fs.issueCode({ name: 'Q', open_id: 'ou_q', union_id: 'on_q', user_id: 'q' }, REDIRECT);
    const ctx = requestContext({ url: `/t?a=1&code=${code}&state=s1&b=%20x` });
    assert.equal(await runNode(create(), ctx), 'success');
    assert.equal(ctx.request.url, '/t?a=1&b=%20x');
  });

  test('feishu-auth: Feishu refusing the app, failing or silent → 502 FEISHU_UPSTREAM_ERROR', async () => {
    const wrong = await failsWith(
      create({ app_secret: 'nope' }),
      withCode('good-code'),
      'FEISHU_UPSTREAM_ERROR',
      502,
    );
    assert.equal(wrong.error, 'provider_error');
    assert.match(wrong.message, /answered 400 \(20002: The client secret is invalid\.\)/);
    assert.deepEqual(wrong.metadata, { endpoint: fs.accessTokenUrl });
    try {
      fs.fault = 'status-500';
      fs.faultPath = '/open-apis/authen/v1/user_info';
      const info = await failsWith(create(), withCode('good-code'), 'FEISHU_UPSTREAM_ERROR', 502);
      assert.match(info.message, /user info answered 500/);
      fs.fault = 'garbage';
      fs.faultPath = '/open-apis/authen/v2/oauth/token';
      await failsWith(create(), withCode('good-code'), 'FEISHU_UPSTREAM_ERROR', 502);
      fs.faultPath = undefined;
      fs.fault = 'hang';
      const slow = await failsWith(
        create({ timeout: 100 }),
        withCode('good-code'),
        'FEISHU_UPSTREAM_ERROR',
        502,
      );
      assert.match(slow.message, /no answer within 100 ms/);
    } finally {
      fs.fault = 'none';
      fs.faultPath = undefined;
    }
    const port = await deadPort();
    await failsWith(
      create({ access_token_url: `http://127.0.0.1:${port}/token` }),
      withCode('good-code'),
      'FEISHU_UPSTREAM_ERROR',
      502,
    );
  });

  test('feishu-auth: E2E-FEISHU-01 valid code 200; E2E-FEISHU-02 bad code 401', async () => {
    const ok = await request(`${gateway.url}/feishu/thing?code=good-code`);
    assert.equal(ok.status, 200);
    assert.equal((JSON.parse(ok.body) as { url: string }).url, '/thing', 'the spent code is not forwarded');
    assert.equal((await request(`${gateway.url}/feishu/thing?code=bad-code`)).status, 401);
    fs.fault = 'reset';
    try {
      const down = await request(`${gateway.url}/feishu/thing?code=good-code`);
      assert.equal(down.status, 502);
      assert.equal((JSON.parse(down.body) as { error: string }).error, 'provider_error');
    } finally {
      fs.fault = 'none';
    }
  });
});

describe('feishu-auth: session mode', () => {
  const sessionConfig = {
    session_secret: 'feishu secret',
    session_cookie_name: 'lark',
    session_cookie_lifetime: 600,
    redirect_uri: 'https://login.test/feishu',
  };

  test('feishu-auth: no session and no code → 302 to redirect_uri; a code → session and back without it', async () => {
    const node = create(sessionConfig);
    const start = requestContext({ url: '/app' });
    assert.equal(await runNode(node, start), 'redirect');
    assert.equal(start.response.headers['location'], 'https://login.test/feishu');

    const login = requestContext({ url: '/app?code=good-code' });
    assert.equal(await runNode(node, login), 'redirect');
    assert.equal(login.response.headers['location'], '/app');
    const cookie = (login.response.headers['set-cookie'] as string[])[0] ?? '';
    assert.match(cookie, /^lark=[^;]+; Path=\/; Max-Age=600; HttpOnly; SameSite=Lax$/);

    const calls = fs.calls.length;
    const page = requestContext({ url: '/app', headers: { host: 'gw.test', cookie: cookie.split(';')[0]! } });
    assert.equal(await runNode(node, page), 'success');
    assert.equal(page.message['user_id'], 'u-alice');
    assert.equal(fs.calls.length, calls, 'no callout with a session');
  });

  test('feishu-auth: in session mode a refused code is still a 401', async () => {
    const bad = withCode('bad-code');
    assert.equal(await runNode(create(sessionConfig), bad), 'denied');
    assert.equal(bad.response.status, 401);
  });
});

test('feishu-auth: config rejections', () => {
  const base = { app_id: 'i', app_secret: 's', auth_redirect_uri: 'https://app.test/cb' };
  assertSchemaRejects(
    () => instantiate(feishuAuth, { app_secret: 's', auth_redirect_uri: 'https://a/cb' }),
    'app_id',
  );
  assertSchemaRejects(
    () => instantiate(feishuAuth, { app_id: 'i', auth_redirect_uri: 'https://a/cb' }),
    'app_secret',
  );
  assertSchemaRejects(() => instantiate(feishuAuth, { app_id: 'i', app_secret: 's' }), 'auth_redirect_uri');
  assertConfigError(
    () => instantiate(feishuAuth, { ...base, auth_redirect_uri: '/cb' }),
    'auth_redirect_uri',
  );
  assertConfigError(
    () => instantiate(feishuAuth, { ...base, access_token_url: 'open.feishu.cn/token' }),
    'access_token_url',
  );
  assertConfigError(() => instantiate(feishuAuth, { ...base, userinfo_url: 'ws://feishu' }), 'userinfo_url');
  assertSchemaRejects(() => instantiate(feishuAuth, { ...base, timeout: 0 }), 'timeout');
  assertSchemaRejects(() => instantiate(feishuAuth, { ...base, cookie_expires_in: 60 }), 'cookie_expires_in');
  assertConfigError(
    () => instantiate(feishuAuth, { ...base, session: { secret: 'x' } }),
    'redirect_uri',
    /required/,
  );
  assertConfigError(
    () =>
      instantiate(feishuAuth, {
        ...base,
        session_secret: 'x',
        session_storage: 'kvstore',
        redirect_uri: 'https://l',
      }),
    'session.store',
  );
  const env = pluginEnv();
  void instantiate(feishuAuth, { ...base, redirect_uri: 'https://login.test' }, env).close?.();
  assert.match(env.warnings[0]?.message ?? '', /no effect without a session secret/);
});
