import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { basicAuth } from '../../../src/plugins/auth/basic-auth.js';
import { request } from '../../support/http.js';
import { startGateway } from '../../support/in-process.js';
import { echo, startOrigin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, basic, envWith, responseJson } from './helpers.js';

const withAuth = (authorization: string) => requestContext({ headers: { authorization } });
const consumers = [
  { name: 'carol', group: 'staff', credentials: { 'basic-auth': { username: 'carol', password: 'c-pw' } } },
  { name: 'guest' },
];

test('basic-auth: array-shaped users — valid credentials leave by success with message.user', () => {
  const node = instantiate(basicAuth, { users: [{ username: 'alice', password: 'secret' }] });
  const ctx = withAuth(basic('alice', 'secret'));
  assert.equal(node.run(ctx), 'success');
  assert.equal(ctx.message['user'], 'alice');
  assert.equal(ctx.response.status, 0);
  assert.equal(ctx.request.headers['authorization'], basic('alice', 'secret'));
});

test('basic-auth: map-shaped users work too; a password may contain colons', () => {
  const node = instantiate(basicAuth, { users: { alice: 's3:cr:et', bob: 'hunter2' } });
  assert.equal(node.run(withAuth(basic('alice', 's3:cr:et'))), 'success');
  assert.equal(node.run(withAuth(basic('bob', 'hunter2'))), 'success');
});

test('basic-auth: a wrong password → 401 with the Basic challenge on denied', () => {
  const node = instantiate(basicAuth, { users: [{ username: 'alice', password: 'secret' }], realm: 'rt' });
  const ctx = withAuth(basic('alice', 'nope'));
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 401);
  assert.equal(ctx.response.headers['www-authenticate'], 'Basic realm="rt"');
  assert.deepEqual(responseJson(ctx), { error: 'unauthorized', message: 'Invalid credentials' });
  assert.equal(ctx.errors.length, 0);
});

test('basic-auth: no, malformed or non-Basic credentials are challenged with the default realm', () => {
  const node = instantiate(basicAuth, { users: { alice: 'secret' } });
  for (const ctx of [
    requestContext(),
    withAuth('Basic !!!'),
    withAuth('Bearer abc'),
    withAuth(basic('eve', 'x')),
  ]) {
    assert.equal(node.run(ctx), 'denied');
    assert.equal(ctx.response.status, 401);
    assert.equal(ctx.response.headers['www-authenticate'], 'Basic realm="gateway"');
  }
});

test('basic-auth: use_consumers checks the consumer password and attaches the consumer', () => {
  const node = instantiate(basicAuth, { use_consumers: true }, envWith(consumers));
  const ctx = withAuth(basic('carol', 'c-pw'));
  assert.equal(node.run(ctx), 'success');
  assert.deepEqual(ctx.consumer, { name: 'carol', group: 'staff' });
  assert.equal(ctx.message['consumer.auth_type'], 'basic-auth');
  assert.equal(ctx.message['user'], 'carol');
  assert.equal(node.run(withAuth(basic('carol', 'wrong'))), 'denied');
});

test('basic-auth: hide_credentials strips Authorization; anonymous_consumer admits the unauthenticated', () => {
  const hidden = instantiate(basicAuth, { users: { alice: 'pw' }, hide_credentials: true });
  const ctx = withAuth(basic('alice', 'pw'));
  assert.equal(hidden.run(ctx), 'success');
  assert.equal(ctx.request.headers['authorization'], undefined);

  const open = instantiate(
    basicAuth,
    { use_consumers: true, anonymous_consumer: 'guest' },
    envWith(consumers),
  );
  const anon = requestContext();
  assert.equal(open.run(anon), 'success');
  assert.equal(anon.message['consumer.name'], 'guest');
});

test('basic-auth: blank editor rows are skipped; config rejections', () => {
  const node = instantiate(basicAuth, {
    users: [
      { username: 'alice', password: 'pw' },
      { username: '', password: '' },
    ],
  });
  assert.equal(node.run(withAuth(basic('', ''))), 'denied');
  assertConfigError(() => instantiate(basicAuth, {}), '', /requires 'users' or 'use_consumers: true'/);
  assertConfigError(() => instantiate(basicAuth, { users: [{ username: '', password: '' }] }), '');
  assertConfigError(
    () =>
      instantiate(basicAuth, {
        users: [
          { username: 'a', password: '1' },
          { username: 'a', password: '2' },
        ],
      }),
    'users[1].username',
  );
  assertConfigError(
    () => instantiate(basicAuth, { use_consumers: true, anonymous_consumer: 'nobody' }, envWith(consumers)),
    'anonymous_consumer',
  );
  assertSchemaRejects(() => instantiate(basicAuth, { users: 'alice:pw' }), 'users');
  assertSchemaRejects(() => instantiate(basicAuth, { users: [{ user: 'a' }] }), 'users');
});

const stops: (() => Promise<void>)[] = [];
after(() => Promise.all(stops.map((stop) => stop())));

test('basic-auth: E2E-BASIC-01..03 — valid, wrong password, no credentials + challenge', async () => {
  const origin = await startOrigin(echo('backend'));
  stops.push(() => origin.close());
  const gw = await startGateway(`
routes:
  - { name: basicauth-api, match: { path: /basicauth/* }, policy: basicauth-policy }
policies:
  - name: basicauth-policy
    nodes:
      - { id: listener, type: listener }
      - id: auth
        type: basic-auth
        config:
          realm: rt
          users:
            - username: alice
              password: secret
      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: auth.in }
      - { from: auth.success, to: backend.in }
      - { from: auth.denied, to: client.in }
      - { from: backend.success, to: client.in }
`);
  stops.push(() => gw.stop());
  const ok = await request(`${gw.url}/basicauth/thing`, {
    headers: { authorization: basic('alice', 'secret') },
  });
  assert.equal(ok.status, 200);
  const wrong = await request(`${gw.url}/basicauth/thing`, {
    headers: { authorization: basic('alice', 'nope') },
  });
  assert.equal(wrong.status, 401);
  const none = await request(`${gw.url}/basicauth/thing`);
  assert.equal(none.status, 401);
  assert.match(String(none.headers['www-authenticate']), /^Basic realm="rt"$/);
  assert.equal(origin.requests.length, 1);
});
