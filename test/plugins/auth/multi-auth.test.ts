import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SignJWT } from 'jose';
import { multiAuth } from '../../../src/plugins/auth/multi-auth.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, basic, envWith, responseJson, runNode } from './helpers.js';

const secret = 'multi-auth-test-secret-0123456789';
const env = () =>
  envWith([
    { name: 'alice', credentials: { 'key-auth': { key: 'alice-key' } } },
    { name: 'bob', group: 'ops', credentials: { 'basic-auth': { username: 'bob', password: 'pw' } } },
  ]);
const config = {
  auth_plugins: [
    { 'key-auth': { use_consumers: true } },
    { 'basic-auth': { use_consumers: true, realm: 'api' } },
    { 'hmac-auth': { access_key: 'ak', secret_key: 'sk' } },
  ],
};

test('multi-auth: the first plugin that succeeds wins and its consumer is attached', () => {
  const node = instantiate(multiAuth, config, env());
  const byKey = requestContext({ headers: { 'x-api-key': 'alice-key' } });
  assert.equal(node.run(byKey), 'success');
  assert.equal(byKey.message['consumer.name'], 'alice');
  const byBasic = requestContext({ headers: { authorization: basic('bob', 'pw') } });
  assert.equal(node.run(byBasic), 'success');
  assert.equal(byBasic.message['consumer.group'], 'ops');
  assert.equal(byBasic.response.status, 0, "the losing attempt's 401 is undone");
  assert.equal(byBasic.response.body, null);
  assert.equal(byBasic.response.headers['www-authenticate'], undefined);
});

test('multi-auth: when all fail → 401 "Authorization Failed" on denied with every challenge offered', () => {
  const node = instantiate(multiAuth, config, env());
  const ctx = requestContext({ headers: { authorization: basic('bob', 'wrong') } });
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 401);
  assert.deepEqual(responseJson(ctx), { error: 'unauthorized', message: 'Authorization Failed' });
  assert.deepEqual(ctx.response.headers['www-authenticate'], ['Basic realm="api"', 'hmac realm="hmac"']);
  assert.equal(ctx.errors.length, 0);
  assert.equal(ctx.message['consumer.name'], undefined);
});

test('multi-auth: async attempts (jwt-auth) are awaited in order', async () => {
  const node = instantiate(
    multiAuth,
    { auth_plugins: [{ 'jwt-auth': { secret } }, { 'key-auth': { keys: ['k1'] } }] },
    env(),
  );
  const token = await new SignJWT({ exp: Math.floor(Date.now() / 1000) + 60, sub: 'u' })
    .setProtectedHeader({ alg: 'HS256' })
    .sign(new TextEncoder().encode(secret));
  const jwt = requestContext({ headers: { authorization: `Bearer ${token}` } });
  assert.equal(await runNode(node, jwt), 'success');
  assert.equal(jwt.message['user_id'], 'u');
  const key = requestContext({ headers: { 'x-api-key': 'k1' } });
  assert.equal(await runNode(node, key), 'success');
  assert.equal(key.response.status, 0);
  const none = requestContext();
  assert.equal(await runNode(node, none), 'denied');
  assert.equal(none.response.status, 401);
  assert.equal(none.response.headers['www-authenticate'], 'Bearer realm="jwt"');
});

test('multi-auth: config rejections point into the failing entry', () => {
  assertSchemaRejects(() => instantiate(multiAuth, {}), 'auth_plugins');
  assertSchemaRejects(() => instantiate(multiAuth, { auth_plugins: [] }), 'auth_plugins');
  assertSchemaRejects(
    () => instantiate(multiAuth, { auth_plugins: [{ 'key-auth': {}, 'basic-auth': {} }] }),
    'auth_plugins[0]',
  );
  assertConfigError(
    () => instantiate(multiAuth, { auth_plugins: [{ 'forward-auth': { uri: 'http://x' } }] }),
    'auth_plugins[0]',
    /cannot be used here/,
  );
  assertConfigError(
    () => instantiate(multiAuth, { auth_plugins: [{ 'key-auth': {} }] }),
    'auth_plugins[0].key-auth',
  );
  assertConfigError(
    () =>
      instantiate(multiAuth, {
        auth_plugins: [{ 'key-auth': { keys: ['k'] } }, { 'basic-auth': { realm: 'r', x: 1 } }],
      }),
    'auth_plugins[1].basic-auth.x',
  );
  assertConfigError(
    () => instantiate(multiAuth, { auth_plugins: [{ 'jwt-auth': { secret, algorithm: 'RS256' } }] }),
    'auth_plugins[0].jwt-auth.secret',
  );
});
