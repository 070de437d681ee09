import assert from 'node:assert/strict';
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Sealer } from '../../src/sessions/sealer.js';
import { resolveSessionSettings } from '../../src/sessions/index.js';
import { startCasServer, type CasServer } from '../support/cas-server.js';
import { request, type SimpleResponse } from '../support/http.js';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { pluginEnv } from '../support/plugin-env.js';
import { tempDir } from '../support/temp-dir.js';
import { assertConfigError } from '../support/node-run.js';

/** The previous release's sealing, written out here: version 1, key = SHA-256(secret), context as AAD. */
function sealLikePreviousRelease(secret: string, plaintext: string, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', createHash('sha256').update(secret).digest(), iv);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.from([1]), iv, body, cipher.getAuthTag()]).toString('base64url');
}

const payload = (sub: string): string =>
  JSON.stringify({ sub, iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 600 });

describe('session secret rotation: sealing', () => {
  test('rotation: the first secret seals; every secret in the list opens', () => {
    const rotated = new Sealer(['new', 'old'], 'session');
    const fromOld = new Sealer('old', 'session').seal('{"a":1}', 'c');
    assert.equal(rotated.open(fromOld, 'c'), '{"a":1}', 'a token of the old secret still opens');
    const fresh = rotated.seal('{"b":2}', 'c');
    assert.equal(new Sealer('new', 'session').open(fresh, 'c'), '{"b":2}', 'sealed with the first secret');
    assert.equal(new Sealer('old', 'session').open(fresh, 'c'), undefined, 'not with the second');
    assert.equal(new Sealer(['newer', 'new'], 'session').open(fromOld, 'c'), undefined, 'a removed secret');
  });

  test('rotation: tokens sealed by the previous release (SHA-256 key) still open; new ones use HKDF', () => {
    const legacy = sealLikePreviousRelease('secret', 'hello', 'cas-auth|cookie');
    const sealer = new Sealer('secret', 'session');
    assert.equal(sealer.open(legacy, 'cas-auth|cookie'), 'hello');
    assert.equal(sealer.open(legacy, 'other|cookie'), undefined, 'still bound to its context');
    assert.equal(new Sealer(['next', 'secret'], 'session').open(legacy, 'cas-auth|cookie'), 'hello');
    const fresh = sealer.seal('hello', 'cas-auth|cookie');
    assert.equal(Buffer.from(fresh, 'base64url')[0], 2, 'version byte of the HKDF derivation');
    // A new token does not open under the old derivation of the same secret.
    const raw = Buffer.from(fresh, 'base64url');
    raw[0] = 1;
    assert.equal(sealer.open(raw.toString('base64url'), 'cas-auth|cookie'), undefined);
  });

  test('rotation: each purpose derives its own key (a session never opens as a login flow)', () => {
    const token = new Sealer('s', 'session').seal('x', 'ctx');
    assert.equal(new Sealer('s', 'login-flow').open(token, 'ctx'), undefined);
    assert.equal(new Sealer('s', 'session').open(token, 'ctx'), 'x');
  });

  test('rotation: session.secret takes a list; an empty entry is refused with its index', () => {
    const env = pluginEnv();
    assert.deepEqual(resolveSessionSettings({ session: { secret: ['a', 'b'] } }, env, 'c')?.secret, [
      'a',
      'b',
    ]);
    assert.deepEqual(resolveSessionSettings({ session_secret: 'a' }, env, 'c')?.secret, ['a']);
    assertConfigError(
      () => resolveSessionSettings({ session: { secret: ['a', ''] } }, env, 'c'),
      'session.secret[1]',
    );
    assertConfigError(
      () => resolveSessionSettings({ session: { secret: ['a'] }, session_secret: ['b'] }, env, 'c'),
      'session.secret',
      /conflicts/,
    );
  });
});

describe('session secret rotation: a running gateway reloads a new secret list', () => {
  let cas: CasServer;
  let dir: { path: string; remove(): void };
  let gw: RunningGateway;
  let file: string;

  const config = (secret: string[]): string => `
routes:
  - { name: app, match: { path: /app/* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - id: cas
        type: cas-auth
        config: ${JSON.stringify({ idp_uri: cas.url, session: { secret } })}
      - { id: show, type: echo, config: { body: 'user={{message.user}}' } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: cas.in }
      - { from: cas.success, to: show.in }
      - { from: cas.denied, to: out.in }
      - { from: cas.redirect, to: out.in }
      - { from: cas.error, to: out.in }
      - { from: show.success, to: out.in }
`;

  const sessionCookie = (res: SimpleResponse): string => {
    const header = (res.headers['set-cookie'] ?? []).find((c) => c.startsWith('cas_session='));
    assert.ok(header !== undefined, `a session cookie is set: ${String(res.headers['set-cookie'])}`);
    return header.slice('cas_session='.length, header.indexOf(';'));
  };
  /** A CAS login: the ticket is validated and a session sealed into the cookie. */
  const login = async (base: string, user: string): Promise<string> => {
    const ticket = cas.issueTicket(user, `${base}/app/page`);
    const res = await request(`${base}/app/page?ticket=${ticket}`);
    assert.equal(res.status, 302, res.body);
    return sessionCookie(res);
  };
  const withSession = (base: string, cookie: string) =>
    request(`${base}/app/page`, { headers: { cookie: `cas_session=${cookie}` } });
  const reloadWith = async (secret: string[]): Promise<void> => {
    writeFileSync(file, config(secret));
    await gw.gateway.reloadFromFile('signal');
  };

  before(async () => {
    cas = await startCasServer();
    dir = tempDir('rotation-');
    file = join(dir.path, 'gateway.yaml');
    writeFileSync(file, config(['first secret']));
    gw = await startGateway('', { gatewayPath: file });
  });
  after(async () => {
    await gw?.stop();
    await cas?.close();
    dir?.remove();
  });

  test('rotation: after a reload to [new, old] an old session opens and a new one is sealed with new', async () => {
    const old = await login(gw.url, 'alice');
    assert.equal((await withSession(gw.url, old)).body, 'user=alice');
    // A cookie the previous release sealed with the same secret.
    const upgraded = sealLikePreviousRelease('first secret', payload('carol'), 'cas-auth|cookie');
    assert.equal((await withSession(gw.url, upgraded)).body, 'user=carol');

    await reloadWith(['second secret', 'first secret']);
    const stillOpen = await withSession(gw.url, old);
    assert.equal(stillOpen.status, 200);
    assert.equal(stillOpen.body, 'user=alice', 'the session of the old secret survives the rotation');
    assert.equal((await withSession(gw.url, upgraded)).body, 'user=carol');

    const fresh = await login(gw.url, 'bob');
    assert.equal((await withSession(gw.url, fresh)).body, 'user=bob');
    // An instance that holds only the new secret opens the new session, and not the old one.
    const onlyNew = await startGateway(config(['second secret']));
    try {
      assert.equal((await withSession(onlyNew.url, fresh)).body, 'user=bob');
      const refused = await withSession(onlyNew.url, old);
      assert.equal(refused.status, 302, 'no session: back to the CAS login');
      assert.match(String(refused.headers.location), /\/cas\/login\?service=/);
    } finally {
      await onlyNew.stop();
    }

    await reloadWith(['second secret']);
    const removed = await withSession(gw.url, old);
    assert.equal(removed.status, 302, 'a session sealed with a removed secret is refused');
    assert.match(String(removed.headers.location), /\/cas\/login\?service=/);
    assert.equal((await withSession(gw.url, upgraded)).status, 302);
    assert.equal((await withSession(gw.url, fresh)).body, 'user=bob');
  });
});
