import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ldapAuth } from '../../../src/plugins/auth/ldap-auth.js';
import { escapeDnValue } from '../../../src/plugins/auth/ldap-bind.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { request } from '../../support/http.js';
import { deadPort } from '../../support/origins.js';
import { instantiate, pluginEnv, requestContext } from '../../support/plugin-env.js';
import { skipWithoutSlapd, SLAPD_PEOPLE, startSlapd, type SlapdServer } from '../../support/slapd.js';
import { waitFor } from '../../support/wait.js';
import { assertConfigError, assertSchemaRejects, bodyText, failsWith } from '../../support/node-run.js';

const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

const withAuth = (authorization?: string) =>
  requestContext(authorization === undefined ? {} : { headers: { authorization } });

describe('ldap-auth: configuration', () => {
  const build = (config: Record<string, unknown>) => instantiate(ldapAuth, config);

  test('ldap-auth: base_dn and ldap_uri are required; blank or non-LDAP values are rejected', () => {
    assertSchemaRejects(() => build({ ldap_uri: 'ldap://127.0.0.1' }), 'base_dn');
    assertSchemaRejects(() => build({ base_dn: 'dc=x' }), 'ldap_uri');
    assertConfigError(() => build({ base_dn: '  ', ldap_uri: 'ldap://127.0.0.1' }), 'base_dn', /blank/);
    assertConfigError(() => build({ base_dn: 'dc=x', ldap_uri: '' }), 'ldap_uri', /blank/);
    assertConfigError(() => build({ base_dn: 'dc=x', ldap_uri: 'http://127.0.0.1' }), 'ldap_uri');
    assertConfigError(() => build({ base_dn: 'dc=x', ldap_uri: 'not a uri' }), 'ldap_uri');
  });

  test('ldap-auth: uid must be an attribute name; unknown keys are rejected', () => {
    assertConfigError(() => build({ base_dn: 'dc=x', ldap_uri: 'ldap://h', uid: 'cn,ou=x' }), 'uid');
    assertSchemaRejects(() => build({ base_dn: 'dc=x', ldap_uri: 'ldap://h', bind_dn: 'x' }), 'bind_dn');
    assert.ok(build({ base_dn: 'dc=x', ldap_uri: 'ldap://h', uid: '0.9.2342.19200300.100.1.1' }));
  });

  test('ldap-auth: use_tls on an ldaps:// URI is a load warning, not an error', () => {
    const env = pluginEnv();
    instantiate(ldapAuth, { base_dn: 'dc=x', ldap_uri: 'ldaps://h', use_tls: true }, env);
    assert.deepEqual(
      env.warnings.map((w) => w.key),
      ['use_tls'],
    );
  });

  test('ldap-auth: usernames are escaped so they cannot add RDNs to the bind DN', () => {
    assert.equal(escapeDnValue('alice'), 'alice');
    assert.equal(escapeDnValue('a,ou=admins'), 'a\\,ou\\=admins');
    assert.equal(escapeDnValue(' #x '), '\\ #x\\ ');
    assert.equal(escapeDnValue('a"b\\c+d<e>f;'), 'a\\"b\\\\c\\+d\\<e\\>f\\;');
  });
});

describe('ldap-auth: denials that need no directory', () => {
  let port: number;
  before(async () => {
    port = await deadPort();
  });
  const node = () => instantiate(ldapAuth, { base_dn: SLAPD_PEOPLE, ldap_uri: `ldap://127.0.0.1:${port}` });

  test('E2E-LDAP-04: no credentials → denied 401 with the Basic challenge', () => {
    const ctx = withAuth();
    assert.equal(node().run(ctx), 'denied');
    assert.equal(ctx.response.status, 401);
    assert.equal(ctx.response.headers['www-authenticate'], 'Basic realm="ldap"');
    assert.equal((JSON.parse(bodyText(ctx)) as { error: string }).error, 'unauthorized');
  });

  test('ldap-auth: malformed Basic credentials and an empty password are denied before any bind', () => {
    for (const header of ['Bearer x', 'Basic !!!', basic('alice', ''), basic('', 'pw')]) {
      const ctx = withAuth(header);
      assert.equal(node().run(ctx), 'denied', header);
      assert.equal(ctx.response.status, 401);
    }
  });
});

describe('ldap-auth: binds against a real slapd', { skip: skipWithoutSlapd() }, () => {
  let slapd: SlapdServer;
  before(async () => {
    slapd = await startSlapd();
  });
  after(async () => {
    await slapd?.stop();
  });

  const node = (extra: Record<string, unknown> = {}) =>
    instantiate(ldapAuth, {
      base_dn: SLAPD_PEOPLE,
      ldap_uri: slapd.url,
      uid: 'uid',
      realm: 'corp',
      ...extra,
    });

  test('E2E-LDAP-01: valid credentials → success with message.user and the consumer', async () => {
    const ctx = withAuth(basic('alice', 'alice-pw'));
    assert.equal(await node().run(ctx), 'success');
    assert.equal(ctx.message['user'], 'alice');
    assert.equal(ctx.consumer?.name, 'alice');
    assert.equal(ctx.response.status, 0);
  });

  test('ldap-auth: a password with spaces is sent as typed', async () => {
    const ctx = withAuth(basic('bob', 'bob pw with spaces'));
    assert.equal(await node().run(ctx), 'success');
  });

  test('E2E-LDAP-02: a wrong password → denied 401 with the realm in the challenge', async () => {
    const ctx = withAuth(basic('alice', 'wrong'));
    assert.equal(await node().run(ctx), 'denied');
    assert.equal(ctx.response.status, 401);
    assert.equal(ctx.response.headers['www-authenticate'], 'Basic realm="corp"');
    assert.deepEqual(JSON.parse(bodyText(ctx)), { error: 'unauthorized', message: 'Invalid credentials' });
  });

  test('E2E-LDAP-03: an unknown user → denied 401', async () => {
    const ctx = withAuth(basic('mallory', 'alice-pw'));
    assert.equal(await node().run(ctx), 'denied');
    assert.equal(ctx.response.status, 401);
  });

  test('ldap-auth: a username carrying DN syntax binds as nobody', async () => {
    const ctx = withAuth(basic(`alice,${SLAPD_PEOPLE}`, 'alice-pw'));
    assert.equal(await node().run(ctx), 'denied');
  });

  test('ldap-auth: StartTLS refused by the directory is a provider failure (502), not a denial', async () => {
    const ctx = withAuth(basic('alice', 'alice-pw'));
    await failsWith(node({ use_tls: true }), ctx, 'LDAP_AUTH_PROVIDER_ERROR', 502);
    assert.equal(ctx.response.headers['www-authenticate'], undefined);
  });
});

describe('ldap-auth: provider failures', () => {
  let silent: Server;
  let silentPort: number;
  const sockets = new Set<Socket>();
  before(async () => {
    // Accepts connections and never answers: a hung directory.
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.resume(); // read (and drop) the bind request, so the client's FIN is seen
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentPort = (silent.address() as { port: number }).port;
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  test('ldap-auth: an unreachable directory → LDAP_AUTH_PROVIDER_ERROR 502 without a challenge', async () => {
    const port = await deadPort();
    const node = instantiate(ldapAuth, { base_dn: 'dc=x', ldap_uri: `ldap://127.0.0.1:${port}` });
    const ctx = withAuth(basic('alice', 'pw'));
    const err = await failsWith(node, ctx, 'LDAP_AUTH_PROVIDER_ERROR', 502);
    assert.equal(err.error, 'provider_error');
    assert.equal(ctx.response.headers['www-authenticate'], undefined);
  });

  test('ldap-auth: a directory that never answers fails within timeout_ms', async () => {
    const node = instantiate(ldapAuth, {
      base_dn: 'dc=x',
      ldap_uri: `ldap://127.0.0.1:${silentPort}`,
      timeout_ms: 150,
    });
    const started = Date.now();
    const err = await failsWith(node, withAuth(basic('alice', 'pw')), 'LDAP_AUTH_PROVIDER_ERROR', 502);
    assert.match(err.message, /150 ms/);
    assert.ok(Date.now() - started < 2000);
    // The abandoned connection is torn down, not left to linger.
    await waitFor(() => sockets.size === 0, {
      timeoutMs: 2000,
      what: 'the abandoned LDAP connection to close',
    });
  });

  test('ldap-auth: a client that goes away abandons the bind', async () => {
    const node = instantiate(ldapAuth, { base_dn: 'dc=x', ldap_uri: `ldap://127.0.0.1:${silentPort}` });
    const abort = new AbortController();
    const ctx = requestContext({ headers: { authorization: basic('alice', 'pw') } }, abort.signal);
    const pending = failsWith(node, ctx, 'UPSTREAM_CLIENT_ABORTED', 499);
    setImmediate(() => abort.abort());
    await pending;
  });
});

describe('ldap-auth: through a gateway', { skip: skipWithoutSlapd() }, () => {
  let slapd: SlapdServer;
  let gw: RunningGateway;
  before(async () => {
    slapd = await startSlapd();
    gw = await startGateway(
      `
routes:
  - { name: ldap, match: { path: /ldap/* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - id: ldap
        type: ldap-auth
        config: { ldap_uri: '\${LDAP_URI}', base_dn: '${SLAPD_PEOPLE}', uid: uid }
      - { id: show, type: echo, config: { body: 'hello {{message.user}} / {{message.consumer.name}}' } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: ldap.in }
      - { from: ldap.success, to: show.in }
      - { from: ldap.denied, to: out.in }
      - { from: ldap.error, to: out.in }
      - { from: show.success, to: out.in }
`,
      { env: { LDAP_URI: slapd.url } },
    );
  });
  after(async () => {
    await gw?.stop();
    await slapd?.stop();
  });

  test('ldap-auth: valid, wrong and missing credentials end to end', async () => {
    const ok = await request(`${gw.url}/ldap/x`, { headers: { authorization: basic('alice', 'alice-pw') } });
    assert.deepEqual([ok.status, ok.body], [200, 'hello alice / alice']);
    const wrong = await request(`${gw.url}/ldap/x`, { headers: { authorization: basic('alice', 'nope') } });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers['www-authenticate'], 'Basic realm="ldap"');
    const none = await request(`${gw.url}/ldap/x`);
    assert.equal(none.status, 401);
    assert.equal(none.headers['www-authenticate'], 'Basic realm="ldap"');
  });

  test('ldap-auth: a stopped directory answers 502 provider_error on the error port', async () => {
    await slapd.stop();
    const res = await request(`${gw.url}/ldap/x`, { headers: { authorization: basic('alice', 'alice-pw') } });
    assert.equal(res.status, 502);
    assert.equal((JSON.parse(res.body) as { error: string }).error, 'provider_error');
    assert.equal(res.headers['www-authenticate'], undefined);
  });
});
