import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Context } from '../../../src/core/context.js';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import { dingtalkAuth } from '../../../src/plugins/auth/dingtalk-auth.js';
import type { NodeInstance } from '../../../src/core/plugin.js';
import { startDingtalkServer, type DingtalkServer } from '../../support/dingtalk-server.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { deadPort, echo, startOrigin, type Origin } from '../../support/origins.js';
import { instantiate, pluginEnv, requestContext } from '../../support/plugin-env.js';
import { responseJson, runNode } from './helpers.js';
import { assertConfigError, assertSchemaRejects, failsWith } from '../../support/node-run.js';

let dt: DingtalkServer;
let backend: Origin;
let gateway: RunningGateway;
const alice = { userid: 'u-alice', unionid: 'union-alice', name: 'Alice' };
const nodes: NodeInstance<string>[] = [];

before(async () => {
  dt = await startDingtalkServer({ 'e2e-key': 'e2e-secret', 'other-key': 'other-secret' });
  dt.issueCode(alice, 'good-code');
  backend = await startOrigin(echo('backend'));
  // The reference e2e policy, redirect port wired as the corpus does.
  gateway = await startGateway(`
routes:
  - { name: dingtalk-api, match: { path: /dingtalk/* }, policy: dingtalk-policy }
policies:
  - name: dingtalk-policy
    nodes:
      - { id: listener, type: listener }
      - id: dingtalk
        type: dingtalk-auth
        config:
          app_key: e2e-key
          app_secret: e2e-secret
          access_token_url: ${dt.accessTokenUrl}
          userinfo_url: ${dt.userinfoUrl}
      - { id: strip, type: proxy-rewrite, config: { phase: request, strip_path_prefix: /dingtalk } }
      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${backend.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: dingtalk.in }
      - { from: dingtalk.success, to: strip.in }
      - { from: strip.success, to: backend.in }
      - { from: backend.success, to: client.in }
      - { from: dingtalk.denied, to: client.in }
      - { from: dingtalk.redirect, to: client.in }
      - { from: dingtalk.error, to: client.in }
`);
});

after(async () => {
  for (const node of nodes) await node.close?.();
  await gateway.stop();
  await Promise.all([dt.close(), backend.close()]);
  await closeAllPools();
});

function create(config: Record<string, unknown> = {}, env = pluginEnv()): NodeInstance<string> {
  const node = instantiate(
    dingtalkAuth,
    {
      app_key: 'e2e-key',
      app_secret: 'e2e-secret',
      access_token_url: dt.accessTokenUrl,
      userinfo_url: dt.userinfoUrl,
      ...config,
    },
    env,
  );
  nodes.push(node);
  return node;
}

const userinfoHeader = (ctx: Context): unknown =>
  JSON.parse(Buffer.from(String(ctx.request.headers['x-userinfo']), 'base64').toString('utf8'));

describe('dingtalk-auth: code exchange (stateless)', () => {
  test('dingtalk-auth: a valid code leaves by success with the DingTalk user attached', async () => {
    const ctx = requestContext({
      url: '/thing?code=good-code',
      headers: { host: 'gw.test', 'x-userinfo': 'forged' },
    });
    assert.equal(await runNode(create(), ctx), 'success');
    assert.equal(ctx.message['user_id'], 'u-alice');
    assert.equal(ctx.consumer?.name, 'u-alice');
    assert.equal(ctx.message['consumer.auth_type'], 'dingtalk-auth');
    assert.deepEqual((ctx.message['dingtalk_userinfo'] as Record<string, unknown>)['name'], 'Alice');
    assert.equal((userinfoHeader(ctx) as Record<string, unknown>)['unionid'], 'union-alice');
    const token = dt.calls.find((c) => c.path === '/v1.0/oauth2/accessToken')!;
    assert.deepEqual(token.json, { appKey: 'e2e-key', appSecret: 'e2e-secret' });
    const lookup = dt.calls.at(-1)!;
    assert.equal(lookup.path, '/topapi/v2/user/getuserinfo');
    assert.match(lookup.query.get('access_token') ?? '', /^[0-9a-f]{32}$/);
    assert.deepEqual(lookup.json, { code: 'good-code' });
    assert.equal(ctx.request.url, '/thing', 'the spent code is not forwarded');
  });

  test('dingtalk-auth: only the spent code and state leave the query; a header code leaves it alone', async () => {
    const fromQuery = requestContext({ url: '/t?x=1&code=good-code&state=abc&y=%C3%A9' });
    assert.equal(await runNode(create(), fromQuery), 'success');
    assert.equal(fromQuery.request.url, '/t?x=1&y=%C3%A9');
    const fromHeader = requestContext({
      url: '/t?code=other&state=s',
      headers: { host: 'gw.test', 'x-dingtalk-code': 'good-code' },
    });
    assert.equal(await runNode(create(), fromHeader), 'success');
    assert.equal(fromHeader.request.url, '/t?code=other&state=s');
  });

  test('dingtalk-auth: the code header wins over the query; X-Userinfo only when asked', async () => {
    const node = create({ set_userinfo_header: false });
    const ctx = requestContext({
      url: '/thing?code=bad',
      headers: { host: 'gw.test', 'x-dingtalk-code': 'good-code', 'x-userinfo': 'forged' },
    });
    assert.equal(await runNode(node, ctx), 'success');
    assert.deepEqual(dt.calls.at(-1)!.json, { code: 'good-code' });
    assert.equal(ctx.request.headers['x-userinfo'], undefined, 'a forged X-Userinfo never passes');
    const custom = create({ code_header: 'X-Code', code_query: 'c' });
    assert.equal(await runNode(custom, requestContext({ url: '/t?c=good-code' })), 'success');
  });

  test('dingtalk-auth: the app access token is cached, and fetched again once DingTalk drops it', async () => {
    const node = create();
    await runNode(node, requestContext({ url: '/t?code=good-code' }));
    const fetched = dt.count('/v1.0/oauth2/accessToken');
    await runNode(node, requestContext({ url: '/t?code=good-code' }));
    assert.equal(dt.count('/v1.0/oauth2/accessToken'), fetched, 'cached');
    dt.expireTokens();
    const ctx = requestContext({ url: '/t?code=good-code' });
    assert.equal(await runNode(node, ctx), 'success', 'errcode 40014: new token, one retry');
    assert.equal(dt.count('/v1.0/oauth2/accessToken'), fetched + 1);
  });

  test('dingtalk-auth: an unknown code leaves by denied with 401; no code is a 401 without callout', async () => {
    const bad = requestContext({ url: '/thing?code=bad-code' });
    assert.equal(await runNode(create(), bad), 'denied');
    assert.equal(bad.response.status, 401);
    assert.deepEqual(responseJson(bad), {
      error: 'unauthorized',
      message: 'DingTalk rejected the code (errcode 40078: 不存在的临时授权码)',
    });
    const calls = dt.calls.length;
    const none = requestContext({ url: '/thing' });
    assert.equal(await runNode(create(), none), 'denied');
    assert.deepEqual(responseJson(none), {
      error: 'unauthorized',
      message: 'Missing DingTalk authorization code',
    });
    assert.equal(dt.calls.length, calls);
  });

  test('dingtalk-auth: DingTalk refusing the app, failing or silent → 502 DINGTALK_UPSTREAM_ERROR', async () => {
    const wrong = await failsWith(
      create({ app_secret: 'nope' }),
      requestContext({ url: '/t?code=good-code' }),
      'DINGTALK_UPSTREAM_ERROR',
      502,
    );
    assert.equal(wrong.error, 'provider_error');
    assert.match(wrong.message, /app access token request answered 400: 无效的clientId或者clientSecret/);
    assert.deepEqual(wrong.metadata, { endpoint: dt.accessTokenUrl });
    try {
      dt.fault = 'status-500';
      dt.faultPath = '/topapi/v2/user/getuserinfo';
      await failsWith(create(), requestContext({ url: '/t?code=good-code' }), 'DINGTALK_UPSTREAM_ERROR', 502);
      dt.fault = 'garbage';
      await failsWith(create(), requestContext({ url: '/t?code=good-code' }), 'DINGTALK_UPSTREAM_ERROR', 502);
      dt.faultPath = undefined;
      dt.fault = 'hang';
      const slow = await failsWith(
        create({ timeout: 100 }),
        requestContext({ url: '/t?code=good-code' }),
        'DINGTALK_UPSTREAM_ERROR',
        502,
      );
      assert.match(slow.message, /no answer within 100 ms/);
    } finally {
      dt.fault = 'none';
      dt.faultPath = undefined;
    }
    const port = await deadPort();
    await failsWith(
      create({ access_token_url: `http://127.0.0.1:${port}/token` }),
      requestContext({ url: '/t?code=good-code' }),
      'DINGTALK_UPSTREAM_ERROR',
      502,
    );
  });

  test('dingtalk-auth: E2E-DINGTALK-01 valid 200; E2E-DINGTALK-02 bad code 401; E2E-DINGTALK-03 no code 401', async () => {
    const ok = await request(`${gateway.url}/dingtalk/thing?code=good-code`);
    assert.equal(ok.status, 200);
    const seen = JSON.parse(ok.body) as { url: string; headers: Record<string, string> };
    assert.equal(seen.url, '/thing', 'the spent code is not forwarded');
    assert.ok(seen.headers['x-userinfo'] !== undefined);
    assert.equal((await request(`${gateway.url}/dingtalk/thing?code=bad-code`)).status, 401);
    assert.equal((await request(`${gateway.url}/dingtalk/thing`)).status, 401);
  });
});

describe('dingtalk-auth: session mode', () => {
  const sessionConfig = { session: { secret: 'dingtalk secret' }, redirect_uri: 'https://login.test/start' };

  test('dingtalk-auth: neither session nor code → 302 to redirect_uri', async () => {
    const ctx = requestContext({ url: '/app' });
    assert.equal(await runNode(create(sessionConfig), ctx), 'redirect');
    assert.equal(ctx.response.status, 302);
    assert.equal(ctx.response.headers['location'], 'https://login.test/start');
  });

  test('dingtalk-auth: a code opens a session and returns without it; the session then passes alone', async () => {
    const node = create(sessionConfig);
    const login = requestContext({ url: '/app/page?code=good-code&tab=2' });
    assert.equal(await runNode(node, login), 'redirect');
    assert.equal(login.response.headers['location'], '/app/page?tab=2');
    const cookie = (login.response.headers['set-cookie'] as string[]).find((c) =>
      c.startsWith('dingtalk_session='),
    );
    assert.match(cookie ?? '', /Path=\/; Max-Age=86400; HttpOnly; SameSite=Lax/);
    const calls = dt.calls.length;
    const page = requestContext({
      url: '/app/page?tab=2',
      headers: { host: 'gw.test', cookie: cookie!.split(';')[0]! },
    });
    assert.equal(await runNode(node, page), 'success');
    assert.equal(page.message['user_id'], 'u-alice');
    assert.equal((userinfoHeader(page) as Record<string, unknown>)['userid'], 'u-alice');
    assert.equal(dt.calls.length, calls, 'no callout with a session');

    const otherApp = create({ ...sessionConfig, app_key: 'other-key', app_secret: 'other-secret' });
    const foreign = requestContext({
      url: '/app/page',
      headers: { host: 'gw.test', cookie: cookie!.split(';')[0]! },
    });
    assert.equal(await runNode(otherApp, foreign), 'redirect', "another app's session does not open");
  });

  test('dingtalk-auth: in session mode a bad code is still a 401 and DingTalk down still a 502', async () => {
    const bad = requestContext({ url: '/app?code=bad-code' });
    assert.equal(await runNode(create(sessionConfig), bad), 'denied');
    assert.equal(bad.response.status, 401);
    assert.equal(bad.response.headers['set-cookie'], undefined);
    dt.fault = 'status-500';
    try {
      await failsWith(
        create(sessionConfig),
        requestContext({ url: '/app?code=good-code' }),
        'DINGTALK_UPSTREAM_ERROR',
        502,
      );
    } finally {
      dt.fault = 'none';
    }
  });
});

test('dingtalk-auth: config rejections', () => {
  const base = { app_key: 'k', app_secret: 's' };
  assertSchemaRejects(() => instantiate(dingtalkAuth, { app_secret: 's' }), 'app_key');
  assertSchemaRejects(() => instantiate(dingtalkAuth, { app_key: 'k' }), 'app_secret');
  assertConfigError(
    () => instantiate(dingtalkAuth, { ...base, access_token_url: 'api.dingtalk.com/token' }),
    'access_token_url',
  );
  assertConfigError(() => instantiate(dingtalkAuth, { ...base, userinfo_url: 'ftp://oapi' }), 'userinfo_url');
  assertSchemaRejects(() => instantiate(dingtalkAuth, { ...base, timeout: 0 }), 'timeout');
  assertSchemaRejects(
    () => instantiate(dingtalkAuth, { ...base, secret_fallbacks: ['x'] }),
    'secret_fallbacks',
  );
  assertConfigError(
    () => instantiate(dingtalkAuth, { ...base, session_secret: 'x' }),
    'redirect_uri',
    /required/,
  );
  assertConfigError(
    () => instantiate(dingtalkAuth, { ...base, session: { secret: '' }, redirect_uri: 'https://l' }),
    'session.secret',
  );
  const env = pluginEnv();
  void instantiate(dingtalkAuth, { ...base, redirect_uri: 'https://login.test' }, env).close?.();
  assert.match(env.warnings[0]?.message ?? '', /no effect without a session secret/);
  const defaults = instantiate(dingtalkAuth, base);
  void defaults.close?.();
});
