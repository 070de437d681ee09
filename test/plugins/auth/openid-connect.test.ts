import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigRejected } from '../../../src/config/schema-validate.js';
import { openidConnect } from '../../../src/plugins/auth/openid-connect/index.js';
import { Browser } from '../../support/browser.js';
import { freePort } from '../../support/free-port.js';
import { request, type SimpleResponse } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { startIdp, type TestIdp } from '../../support/oidc-idp.js';
import { deadPort } from '../../support/origins.js';
import { instantiate, pluginEnv, requestContext } from '../../support/plugin-env.js';
import { skipWithoutRedis, startRedis, type RedisServer } from '../../support/redis.js';
import { assertConfigError, assertSchemaRejects, bodyText, failsWith } from '../../support/node-run.js';

const CLIENT = { clientId: 'gateway', clientSecret: 'gateway-secret' };
const SECRET = 'oidc session secret for tests';

/** What the echo node shows of the identity: x-userinfo | user_id | x-access-token | authorization | consumer. */
const SHOW =
  '{{request.headers.x-userinfo}}|{{message.user_id}}|{{request.headers.x-access-token}}|{{request.headers.authorization}}|{{message.consumer.name}}';

function policy(name: string, config: Record<string, unknown>): string {
  return `
  - name: ${name}
    nodes:
      - { id: in, type: listener }
      - { id: oidc, type: openid-connect, config: ${JSON.stringify(config)} }
      - { id: show, type: echo, config: { body: '${SHOW}' } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: oidc.in }
      - { from: oidc.success, to: show.in }
      - { from: oidc.denied, to: out.in }
      - { from: oidc.redirect, to: out.in }
      - { from: oidc.error, to: out.in }
      - { from: show.success, to: out.in }`;
}

const json = (res: SimpleResponse): Record<string, unknown> =>
  JSON.parse(res.body) as Record<string, unknown>;
const shown = (res: SimpleResponse) => {
  const [userinfo = '', userId, accessToken, authorization, consumer] = res.body.split('|');
  return {
    claims:
      userinfo === ''
        ? undefined
        : (JSON.parse(Buffer.from(userinfo, 'base64').toString('utf8')) as Record<string, unknown>),
    userId,
    accessToken,
    authorization,
    consumer,
  };
};

describe('openid-connect: configuration', () => {
  const build = (config: Record<string, unknown>, env = pluginEnv()) =>
    instantiate(openidConnect, config, env);
  const interactive = {
    bearer_only: false,
    discovery: 'http://idp.test/.well-known/openid-configuration',
    client_id: 'c',
    client_secret: 's',
    redirect_uri: 'https://app.test/cb',
    session_secret: 'x',
  };

  test('openid-connect: a JWKS source or an introspection endpoint is required', () => {
    assertConfigError(() => build({}), '', /JWKS source/);
    assertConfigError(() => build({ discovery: 'not a url' }), 'discovery');
    assertConfigError(() => build({ jwks_uri: 'ftp://idp.test/jwks' }), 'jwks_uri');
    assert.ok(build({ jwks_uri: 'http://idp.test/jwks' }));
  });

  test('openid-connect: introspection needs client credentials', () => {
    assertConfigError(() => build({ introspection_endpoint: 'http://idp.test/i' }), 'client_id');
    assertConfigError(
      () => build({ introspection_endpoint: 'http://idp.test/i', client_id: 'c' }),
      'client_secret',
    );
    assert.ok(build({ introspection_endpoint: 'http://idp.test/i', client_id: 'c', client_secret: 's' }));
  });

  test('openid-connect: only asymmetric algorithms; audience matching needs client_id', () => {
    const jwks = { jwks_uri: 'http://idp.test/jwks' };
    assertConfigError(
      () => build({ ...jwks, token_signing_alg_values_expected: 'HS256' }),
      'token_signing_alg_values_expected',
    );
    assertConfigError(
      () => build({ ...jwks, token_signing_alg_values_expected: ['none'] }),
      'token_signing_alg_values_expected',
    );
    assert.ok(build({ ...jwks, token_signing_alg_values_expected: 'RS256, ES256' }));
    assertConfigError(
      () => build({ ...jwks, claim_validator: { audience: { match_with_client_id: true } } }),
      'claim_validator.audience.match_with_client_id',
    );
    assertSchemaRejects(
      () => build({ ...jwks, claim_validator: { audience: { aud: 'x' } } }),
      'claim_validator.audience.aud',
    );
    assertSchemaRejects(() => build({ ...jwks, unknown_key: 1 }), 'unknown_key');
  });

  test('openid-connect: interactive mode needs a session secret, client credentials and redirect_uri', () => {
    assert.ok(build(interactive));
    const without = (key: string) =>
      Object.fromEntries(Object.entries(interactive).filter(([k]) => k !== key));
    assertConfigError(() => build(without('session_secret')), 'session.secret');
    assertConfigError(() => build({ ...interactive, session_secret: '' }), 'session_secret');
    assertConfigError(() => build(without('client_secret')), 'client_secret');
    assertConfigError(() => build(without('client_id')), 'client_id');
    assertConfigError(() => build(without('redirect_uri')), 'redirect_uri');
    assertConfigError(() => build({ ...interactive, redirect_uri: '//evil.test/cb' }), 'redirect_uri');
    assertConfigError(
      () => build({ ...without('discovery'), jwks_uri: 'http://idp.test/jwks' }),
      'authorization_endpoint',
    );
    assert.ok(
      build({
        ...without('discovery'),
        jwks_uri: 'http://idp.test/jwks',
        authorization_endpoint: 'http://idp.test/auth',
        token_endpoint: 'http://idp.test/token',
      }),
    );
  });

  test('openid-connect: the session cookie path must cover the redirect_uri path', () => {
    assertConfigError(
      () => build({ ...interactive, session: { secret: 'x', cookie: { path: '/app' } } }),
      'session.cookie.path',
      /login would loop/,
    );
    assert.ok(build({ ...interactive, redirect_uri: '/app/cb', session_cookie_path: '/app' }));
  });

  test('openid-connect: kvstore sessions need a declared store', () => {
    assertConfigError(() => build({ ...interactive, session_storage: 'redis' }), 'session.store');
    assertConfigError(
      () => build({ ...interactive, session: { secret: 'x', storage: 'kvstore', store: 'ghost' } }),
      'session.store',
      /unknown store/,
    );
  });

  test('openid-connect: a secret left as an unresolved ${VAR} is a load warning', () => {
    const env = pluginEnv();
    build({ ...interactive, client_secret: '${CLIENT_SECRET}', session_secret: '${SESSION_SECRET}' }, env);
    assert.deepEqual(env.warnings.map((w) => w.key).sort(), ['client_secret', 'session.secret']);
  });

  test('openid-connect: session keys in bearer mode and refresh with cookie storage are load warnings', () => {
    const bearerEnv = pluginEnv();
    build({ jwks_uri: 'http://idp.test/jwks', session_secret: 'x', logout_path: '/logout' }, bearerEnv);
    assert.deepEqual(bearerEnv.warnings.map((w) => w.key).sort(), ['logout_path', 'session']);
    const cookieEnv = pluginEnv();
    build({ ...interactive, session_refresh: true }, cookieEnv);
    assert.deepEqual(
      cookieEnv.warnings.map((w) => w.key),
      ['session.refresh'],
    );
  });
});

describe('openid-connect: against a real OpenID provider', () => {
  let idp: TestIdp;
  let gw: RunningGateway;
  let base: string;
  let deadJwks: string;

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    idp = await startIdp({
      ...CLIENT,
      redirectUris: [`${base}/app/callback`, `${base}/scoped/callback`],
    });
    deadJwks = `http://127.0.0.1:${await deadPort()}/jwks`;
    const bearer = {
      discovery: idp.discovery,
      client_id: CLIENT.clientId,
      claim_validator: {
        issuer: { valid_issuers: [idp.issuer] },
        audience: { required: true, match_with_client_id: true },
      },
    };
    gw = await startGateway(
      `
routes:
  - { name: bearer, match: { path: /bearer/* }, policy: bearer }
  - { name: introspect, match: { path: /introspect/* }, policy: introspect }
  - { name: dead, match: { path: /dead/* }, policy: dead }
  - { name: app, match: { path: /app/* }, policy: app }
  - { name: scoped, match: { path: /scoped/* }, policy: scoped }
policies:
${policy('bearer', bearer)}
${policy('introspect', {
  jwks_uri: idp.jwksUri,
  introspection_endpoint: `${idp.issuer}/token/introspection`,
  client_id: CLIENT.clientId,
  client_secret: CLIENT.clientSecret,
  access_token_in_authorization_header: true,
})}
${policy('dead', { jwks_uri: deadJwks, timeout: 1 })}
${policy('app', {
  bearer_only: false,
  discovery: idp.discovery,
  client_id: CLIENT.clientId,
  client_secret: CLIENT.clientSecret,
  redirect_uri: '/app/callback',
  scope: 'openid email profile',
  logout_path: '/app/logout',
  post_logout_redirect_uri: '/app/bye',
  session: { secret: SECRET },
})}
${policy('scoped', {
  bearer_only: false,
  discovery: idp.discovery,
  client_id: CLIENT.clientId,
  client_secret: CLIENT.clientSecret,
  redirect_uri: `${base}/scoped/callback`,
  set_userinfo_header: false,
  session: { secret: SECRET, cookie: { name: 'scoped_session', path: '/scoped' } },
})}
`,
      {
        systemYaml: `listener: { bind: 127.0.0.1, port: ${port} }\ntimeouts: { shutdown_timeout_seconds: 5 }\n`,
      },
    );
  });
  after(async () => {
    await gw?.stop();
    await idp?.close();
  });

  const bearerGet = (path: string, token?: string) =>
    request(`${base}${path}`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });

  /** The whole browser login: gateway → provider → callback → back where it started. */
  async function login(browser: Browser, url: string): Promise<SimpleResponse[]> {
    const first = await browser.get(url);
    assert.equal(first.status, 302, first.body);
    return browser.follow(url, first);
  }

  test('E2E-OIDC-01: no bearer token → denied 401 with the Bearer challenge', async () => {
    const res = await bearerGet('/bearer/data');
    assert.equal(res.status, 401);
    assert.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"');
    assert.deepEqual(json(res), {
      error: 'unauthorized',
      message:
        'No bearer token found in request (bearer_only is true; set bearer_only: false for interactive login)',
    });
  });

  test('E2E-OIDC-02: a valid token passes; claims reach the upstream in x-userinfo', async () => {
    const token = await idp.mint({ sub: 'alice', email: 'alice@example.com' });
    const res = await bearerGet('/bearer/data', token);
    assert.equal(res.status, 200, res.body);
    const seen = shown(res);
    assert.equal(seen.claims?.['sub'], 'alice');
    assert.equal(seen.claims?.['email'], 'alice@example.com');
    assert.equal(seen.userId, 'alice');
    assert.equal(seen.accessToken, token);
    assert.equal(seen.consumer, 'alice');
  });

  test('openid-connect: a client-supplied x-userinfo never reaches the upstream', async () => {
    const forged = Buffer.from('{"sub":"root"}').toString('base64');
    const res = await request(`${base}/bearer/data`, { headers: { 'x-userinfo': forged } });
    assert.equal(res.status, 401);
    const token = await idp.mint({ sub: 'bob' });
    const ok = await request(`${base}/bearer/data`, {
      headers: { 'x-userinfo': forged, authorization: `Bearer ${token}` },
    });
    assert.equal(shown(ok).claims?.['sub'], 'bob');
  });

  test('E2E-OIDC-03: a token signed by a key outside the JWKS → 401', async () => {
    const res = await bearerGet('/bearer/data', await idp.mint({}, { wrongKey: true }));
    assert.equal(res.status, 401);
    assert.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"');
  });

  test('E2E-OIDC-04: an expired token → 401', async () => {
    const res = await bearerGet('/bearer/data', await idp.mint({}, { expired: true }));
    assert.equal(res.status, 401);
    assert.match(String(json(res)['message']), /expired/);
  });

  test('E2E-OIDC-05: a token for another audience → 401', async () => {
    const res = await bearerGet('/bearer/data', await idp.mint({ aud: 'someone-else' }));
    assert.equal(res.status, 401);
    assert.match(String(json(res)['message']), /audience/);
    const missing = await bearerGet('/bearer/data', await idp.mint({}, { withoutAudience: true }));
    assert.equal(missing.status, 401);
  });

  test('E2E-OIDC-06: a malformed bearer value → 401 without asking the provider', async () => {
    idp.resetCounts();
    const res = await bearerGet('/bearer/data', 'not-a-jwt-at-all');
    assert.equal(res.status, 401);
    assert.equal(idp.hits.get('/jwks') ?? 0, 0);
  });

  test('openid-connect: a wrong issuer → 401; the JWKS is fetched once and cached', async () => {
    idp.resetCounts();
    const res = await bearerGet('/bearer/data', await idp.mint({ iss: 'https://elsewhere.test' }));
    assert.equal(res.status, 401);
    for (let i = 0; i < 3; i++) assert.equal((await bearerGet('/bearer/data', await idp.mint())).status, 200);
    assert.equal(idp.hits.get('/jwks') ?? 0, 0, 'JWKS already cached by earlier tests');
  });

  test('openid-connect: an opaque token is checked by introspection; inactive → 401', async () => {
    const token = await idp.clientCredentialsToken();
    const res = await bearerGet('/introspect/x', token);
    assert.equal(res.status, 200, res.body);
    const seen = shown(res);
    assert.equal(seen.claims?.['active'], true);
    assert.equal(seen.claims?.['client_id'], CLIENT.clientId);
    assert.equal(seen.authorization, `Bearer ${token}`);
    const inactive = await bearerGet('/introspect/x', 'opaque-but-unknown');
    assert.equal(inactive.status, 401);
    assert.match(String(json(inactive)['message']), /not active/);
    // A JWT still goes to the JWKS.
    assert.equal((await bearerGet('/introspect/x', await idp.mint())).status, 200);
  });

  test('openid-connect: an unreachable JWKS → 502 provider_error, no challenge', async () => {
    const res = await bearerGet('/dead/x', await idp.mint());
    assert.equal(res.status, 502);
    assert.equal(json(res)['error'], 'provider_error');
    assert.equal(res.headers['www-authenticate'], undefined);
  });

  test('E2E-OIDC-07: no session → 302 to the provider with PKCE S256 and state', async () => {
    const res = await request(`${base}/app/home`);
    assert.equal(res.status, 302);
    const location = new URL(String(res.headers.location));
    assert.equal(`${location.origin}${location.pathname}`, `${idp.issuer}/auth`);
    const q = location.searchParams;
    assert.equal(q.get('client_id'), CLIENT.clientId);
    assert.equal(q.get('response_type'), 'code');
    assert.equal(q.get('redirect_uri'), `${base}/app/callback`);
    assert.equal(q.get('code_challenge_method'), 'S256');
    assert.match(q.get('code_challenge') ?? '', /^[\w-]{43}$/);
    assert.ok((q.get('state') ?? '').length >= 16);
    assert.ok((q.get('nonce') ?? '').length >= 16);
    const cookies = res.headers['set-cookie'] ?? [];
    assert.ok(
      cookies.some((c) => c.startsWith('oidc_session_flow=') && c.includes('HttpOnly')),
      String(cookies),
    );
  });

  test('E2E-OIDC-08: a browser logs in, gets oidc_session and reaches the upstream', async () => {
    const browser = new Browser();
    idp.user = 'carol';
    const hops = await login(browser, `${base}/app/home?tab=1`);
    const last = hops.at(-1)!;
    assert.equal(last.status, 200, last.body);
    const callback = hops.find((h) => h.headers.location === '/app/home?tab=1');
    assert.ok(callback, 'the callback sends the browser back where it started');
    const seen = shown(last);
    assert.equal(seen.claims?.['sub'], 'carol');
    assert.equal(seen.claims?.['email'], 'carol@example.com');
    assert.equal(seen.userId, 'carol');
    assert.equal(seen.consumer, 'carol');
    assert.ok((seen.accessToken ?? '').length > 0, 'the access token is forwarded');
    const session = browser.cookie('127.0.0.1', 'oidc_session');
    assert.ok(session !== undefined && session !== '');
    assert.ok(!session.includes('carol'), 'the session is sealed, not readable');
    assert.equal(browser.cookie('127.0.0.1', 'oidc_session_flow'), undefined, 'the flow cookie is spent');
  });

  test('E2E-OIDC-09: the session is reused without another trip to the provider', async () => {
    const browser = new Browser();
    idp.user = 'dave';
    await login(browser, `${base}/app/one`);
    idp.resetCounts();
    const again = await browser.get(`${base}/app/two`);
    assert.equal(again.status, 200);
    assert.equal(shown(again).userId, 'dave');
    assert.equal(
      [...idp.hits.values()].reduce((a, b) => a + b, 0),
      0,
    );
  });

  test('E2E-OIDC-10: a forged or tampered session cookie → back to login', async () => {
    const forged = await request(`${base}/app/home`, {
      headers: { cookie: 'oidc_session=not-a-real-sealed-session' },
    });
    assert.equal(forged.status, 302);
    assert.ok(String(forged.headers.location).startsWith(`${idp.issuer}/auth`));
    const browser = new Browser();
    await login(browser, `${base}/app/home`);
    const real = browser.cookie('127.0.0.1', 'oidc_session') ?? '';
    const flipped = `${real.slice(0, 20)}${real[20] === 'A' ? 'B' : 'A'}${real.slice(21)}`;
    const res = await request(`${base}/app/home`, { headers: { cookie: `oidc_session=${flipped}` } });
    assert.equal(res.status, 302);
  });

  test('E2E-OIDC-11: a login redirect is an outcome: no node error is counted', async () => {
    const metric = async (): Promise<string> =>
      (await gw.gateway.metrics.registry.getSingleMetricAsString('gateway_node_errors_total'))
        .split('\n')
        .filter((l) => l.includes('policy="app"'))
        .join('\n');
    const before = await metric();
    for (let i = 0; i < 3; i++) assert.equal((await request(`${base}/app/x`)).status, 302);
    assert.equal(await metric(), before);
  });

  test('openid-connect: the callback refuses a mismatched state, a missing flow and a refused login', async () => {
    const browser = new Browser();
    const first = await browser.get(`${base}/app/home`);
    const state = new URL(String(first.headers.location)).searchParams.get('state');
    const wrong = await browser.get(`${base}/app/callback?code=abc&state=${state}x`);
    assert.equal(wrong.status, 401);
    assert.match(String(json(wrong)['message']), /state/);
    const noFlow = await request(`${base}/app/callback?code=abc&state=${state}`);
    assert.equal(noFlow.status, 401);
    assert.match(String(json(noFlow)['message']), /flow/);
    idp.refuseLogin = true;
    try {
      const hops = await login(new Browser(), `${base}/app/home`);
      const last = hops.at(-1)!;
      assert.equal(last.status, 401);
      assert.match(String(json(last)['message']), /access_denied/);
    } finally {
      idp.refuseLogin = false;
    }
  });

  test('openid-connect: a cookie path scopes the session; set_userinfo_header off keeps claims out', async () => {
    const browser = new Browser();
    idp.user = 'erin';
    const hops = await login(browser, `${base}/scoped/page`);
    const last = hops.at(-1)!;
    assert.equal(last.status, 200);
    assert.equal(shown(last).claims, undefined);
    assert.equal(shown(last).userId, 'erin');
    assert.ok(browser.cookie('127.0.0.1', 'scoped_session', '/scoped'));
    assert.equal(browser.cookie('127.0.0.1', 'oidc_session'), undefined);
  });

  test('openid-connect: logout clears the session and redirects to post_logout_redirect_uri', async () => {
    const browser = new Browser();
    await login(browser, `${base}/app/home`);
    const out = await browser.get(`${base}/app/logout`);
    assert.equal(out.status, 302);
    assert.equal(out.headers.location, '/app/bye');
    assert.equal(browser.cookie('127.0.0.1', 'oidc_session'), undefined);
    assert.equal((await browser.get(`${base}/app/home`)).status, 302);
  });

  test('openid-connect: a token endpoint failure during the callback → 502 provider_error', async () => {
    const browser = new Browser();
    let url = `${base}/app/home`;
    let res = await browser.get(url);
    // Walk the login up to the provider's redirect back to the callback, and stop there.
    for (let hop = 0; hop < 10 && !String(res.headers.location ?? '').includes('/app/callback?'); hop++) {
      url = new URL(String(res.headers.location), url).toString();
      res = await browser.get(url);
    }
    const callback = new URL(String(res.headers.location), url).toString();
    assert.ok(callback.includes('/app/callback?code='), callback);
    idp.fault = { path: '/token', status: 500 };
    try {
      const failed = await browser.get(callback);
      assert.equal(failed.status, 502);
      assert.equal(json(failed)['error'], 'provider_error');
    } finally {
      idp.fault = undefined;
    }
  });
});

describe('openid-connect: provider failures at the node', () => {
  test('openid-connect: an unreachable discovery → OIDC_PROVIDER_ERROR 502 when a login must start', async () => {
    const port = await deadPort();
    const node = instantiate(openidConnect, {
      bearer_only: false,
      discovery: `http://127.0.0.1:${port}/.well-known/openid-configuration`,
      client_id: 'c',
      client_secret: 's',
      redirect_uri: '/cb',
      session_secret: SECRET,
    });
    const ctx = requestContext({ url: '/page' });
    const err = await failsWith(node, ctx, 'OIDC_PROVIDER_ERROR', 502);
    assert.equal(err.error, 'provider_error');
    assert.equal(ctx.response.headers['www-authenticate'], undefined);
    void node.close?.();
  });

  test('openid-connect: a hung JWKS fails within timeout', async () => {
    const idp = await startIdp({ ...CLIENT, redirectUris: ['http://127.0.0.1/cb'] });
    try {
      idp.fault = { path: '/jwks', hang: true };
      const node = instantiate(openidConnect, { jwks_uri: idp.jwksUri, timeout: 0.2 });
      const ctx = requestContext({ headers: { authorization: `Bearer ${await idp.mint()}` } });
      const started = Date.now();
      const err = await failsWith(node, ctx, 'OIDC_PROVIDER_ERROR', 502);
      assert.match(err.message, /200 ms/);
      assert.ok(Date.now() - started < 2000);
      void node.close?.();
    } finally {
      await idp.close();
    }
  });

  test('openid-connect: a JWKS answering 500 or garbage is a provider error, not a denial', async () => {
    const idp = await startIdp({ ...CLIENT, redirectUris: ['http://127.0.0.1/cb'] });
    try {
      idp.fault = { path: '/jwks', status: 500 };
      const node = instantiate(openidConnect, { jwks_uri: idp.jwksUri });
      const ctx = requestContext({ headers: { authorization: `Bearer ${await idp.mint()}` } });
      const err = await failsWith(node, ctx, 'OIDC_PROVIDER_ERROR', 502);
      assert.match(err.message, /JWKS answered 500/);
      assert.equal(bodyText(ctx), '');
      void node.close?.();
    } finally {
      await idp.close();
    }
  });
});

describe('openid-connect: kvstore sessions and refresh', { skip: skipWithoutRedis() }, () => {
  let redis: RedisServer;
  let idp: TestIdp;
  let gw: RunningGateway;
  let base: string;

  before(async () => {
    redis = await startRedis();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    idp = await startIdp({ ...CLIENT, redirectUris: [`${base}/kv/callback`] });
    gw = await startGateway(
      `
stores:
  - { name: main, type: redis, url: '${redis.url}' }
routes:
  - { name: kv, match: { path: /kv/* }, policy: kv }
policies:
${policy('kv', {
  bearer_only: false,
  discovery: idp.discovery,
  client_id: CLIENT.clientId,
  client_secret: CLIENT.clientSecret,
  redirect_uri: '/kv/callback',
  logout_path: '/kv/logout',
  session: { secret: SECRET, storage: 'redis', store: 'main' },
})}
`,
      {
        systemYaml: `listener: { bind: 127.0.0.1, port: ${port} }\ntimeouts: { shutdown_timeout_seconds: 5 }\n`,
      },
    );
  });
  after(async () => {
    await gw?.stop();
    await idp?.close();
    await redis?.stop();
  });

  test('E2E-SESS-01: a kvstore session cookie is 32 hex characters', async () => {
    const browser = new Browser();
    const hops = await browser.follow(`${base}/kv/a`, await browser.get(`${base}/kv/a`));
    assert.equal(hops.at(-1)!.status, 200);
    assert.match(browser.cookie('127.0.0.1', 'oidc_session') ?? '', /^[0-9a-f]{32}$/);
  });

  test('openid-connect: an expired access token is refreshed into a new session', async () => {
    idp.accessTokenTtl = 1;
    try {
      const browser = new Browser();
      idp.user = 'frank';
      const hops = await browser.follow(`${base}/kv/a`, await browser.get(`${base}/kv/a`));
      const firstToken = shown(hops.at(-1)!).accessToken;
      const firstId = browser.cookie('127.0.0.1', 'oidc_session');
      idp.resetCounts();
      // expires_in 1 s is inside the refresh skew: the next request refreshes.
      const next = await browser.get(`${base}/kv/b`);
      assert.equal(next.status, 200, next.body);
      assert.equal(idp.hits.get('/token'), 1);
      assert.notEqual(shown(next).accessToken, firstToken);
      assert.equal(shown(next).userId, 'frank');
      const renewedId = browser.cookie('127.0.0.1', 'oidc_session');
      assert.match(renewedId ?? '', /^[0-9a-f]{32}$/);
      assert.notEqual(renewedId, firstId);
      // The old session id no longer opens.
      const stale = await request(`${base}/kv/c`, { headers: { cookie: `oidc_session=${firstId}` } });
      assert.equal(stale.status, 302);
    } finally {
      idp.accessTokenTtl = 3600;
    }
  });

  test('openid-connect: a store outage is SESSION_STORE_ERROR 503, never a login loop', async () => {
    const browser = new Browser();
    await browser.follow(`${base}/kv/a`, await browser.get(`${base}/kv/a`));
    await redis.stop();
    try {
      const res = await browser.get(`${base}/kv/a`);
      assert.equal(res.status, 503);
    } finally {
      await redis.start();
    }
  });
});

test('openid-connect: an unknown store fails compilation with the node path', async () => {
  await assert.rejects(
    startGateway(`
routes:
  - { name: app, match: { path: /app/* }, policy: p }
policies:
${policy('p', {
  bearer_only: false,
  discovery: 'http://idp.test/.well-known/openid-configuration',
  client_id: 'c',
  client_secret: 's',
  redirect_uri: '/app/cb',
  session: { secret: 'x', storage: 'kvstore', store: 'ghost' },
})}
`),
    (err: unknown) => {
      assert.ok(err instanceof ConfigRejected);
      assert.ok(
        err.issues.some((i) => i.path === 'policies[0].nodes[1].config.session.store'),
        JSON.stringify(err.issues),
      );
      return true;
    },
  );
});

test('openid-connect: the denial body is JSON with the unauthorized shape', () => {
  const node = instantiate(openidConnect, { jwks_uri: 'http://idp.test/jwks' });
  const ctx = requestContext();
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 401);
  assert.equal(ctx.response.headers['content-type'], 'application/json');
  assert.equal((JSON.parse(bodyText(ctx)) as { error: string }).error, 'unauthorized');
});
