import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { keyAuth } from '../../../src/plugins/auth/key-auth.js';
import { request } from '../../support/http.js';
import { startGateway } from '../../support/in-process.js';
import { echo, startOrigin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, envWith, responseJson } from './helpers.js';

const withKey = (key: string, header = 'x-api-key') => requestContext({ headers: { [header]: key } });

const consumers = [
  {
    name: 'alice',
    group: 'gold',
    labels: { custom_id: '42' },
    credentials: { 'key-auth': { key: 'alice-key' } },
  },
  { name: 'guest' },
];

test('key-auth: a listed key leaves by success without naming a consumer', () => {
  const node = instantiate(keyAuth, { keys: ['k1', 'k2'] });
  const ctx = withKey('k2');
  assert.equal(node.run(ctx), 'success');
  assert.equal(ctx.response.status, 0);
  assert.equal(ctx.consumer, undefined);
  assert.equal(ctx.request.headers['x-api-key'], 'k2', 'kept unless hide_credentials');
});

test('key-auth: no key → 401 unauthorized on denied (E2E-DP-05 shape)', () => {
  const node = instantiate(keyAuth, { keys: ['k1'] });
  const ctx = requestContext();
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 401);
  assert.equal(ctx.response.headers['content-type'], 'application/json');
  assert.deepEqual(responseJson(ctx), { error: 'unauthorized', message: 'Invalid or missing API key' });
  assert.equal(ctx.response.headers['www-authenticate'], undefined);
  assert.equal(ctx.errors.length, 0, 'an outcome exit records no error');
});

test('key-auth: a wrong key is denied with 401', () => {
  const node = instantiate(keyAuth, { keys: ['k1'] });
  const ctx = withKey('k3');
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 401);
});

test('key-auth: header_name is case-insensitive and query_param is the fallback', () => {
  const node = instantiate(keyAuth, { keys: ['k1'], header_name: 'X-Key', query_param: 'api_key' });
  assert.equal(node.run(withKey('k1', 'x-key')), 'success');
  assert.equal(node.run(requestContext({ url: '/p?api_key=k1' })), 'success');
  assert.equal(node.run(requestContext({ url: '/p?other=k1' })), 'denied');
});

test('key-auth: use_consumers attaches the consumer to message.consumer.* and X-Consumer-* headers', () => {
  const node = instantiate(keyAuth, { use_consumers: true }, envWith(consumers));
  const ctx = withKey('alice-key');
  assert.equal(node.run(ctx), 'success');
  assert.deepEqual(ctx.consumer, { name: 'alice', group: 'gold' });
  assert.equal(ctx.message['consumer.name'], 'alice');
  assert.equal(ctx.message['consumer.group'], 'gold');
  assert.equal(ctx.message['consumer.auth_type'], 'key-auth');
  assert.deepEqual(ctx.message['consumer.labels'], { custom_id: '42' });
  assert.equal(ctx.request.headers['x-consumer-username'], 'alice');
  assert.equal(ctx.request.headers['x-consumer-custom-id'], '42');
  assert.equal(node.run(withKey('bob-key')), 'denied');
});

test('key-auth: hide_credentials strips the header and the query parameter', () => {
  const node = instantiate(keyAuth, { keys: ['k1'], query_param: 'api_key', hide_credentials: true });
  const fromHeader = withKey('k1');
  assert.equal(node.run(fromHeader), 'success');
  assert.equal(fromHeader.request.headers['x-api-key'], undefined);
  const fromQuery = requestContext({ url: '/p?a=1&api_key=k1' });
  assert.equal(node.run(fromQuery), 'success');
  assert.equal(fromQuery.request.url, '/p?a=1');
});

test('key-auth: anonymous_consumer lets a keyless request through as that consumer', () => {
  const node = instantiate(keyAuth, { use_consumers: true, anonymous_consumer: 'guest' }, envWith(consumers));
  const ctx = requestContext();
  assert.equal(node.run(ctx), 'success');
  assert.equal(ctx.message['consumer.name'], 'guest');
});

test('key-auth: run stays synchronous (no promise on the hot path)', () => {
  const node = instantiate(keyAuth, { keys: ['k1'] });
  assert.equal(typeof node.run(withKey('k1')), 'string');
  assert.equal(typeof node.run(requestContext()), 'string');
});

test('key-auth: config rejections — no keys nor consumers, unknown anonymous consumer, bad types', () => {
  assertConfigError(() => instantiate(keyAuth, {}), '', /requires 'keys' or 'use_consumers: true'/);
  assertConfigError(() => instantiate(keyAuth, { keys: [] }), '');
  assertConfigError(
    () => instantiate(keyAuth, { keys: ['k'], anonymous_consumer: 'nobody' }, envWith(consumers)),
    'anonymous_consumer',
  );
  assertSchemaRejects(() => instantiate(keyAuth, { keys: 'k1' }), 'keys');
  assertSchemaRejects(() => instantiate(keyAuth, { keys: [''] }), 'keys[0]');
  assertSchemaRejects(() => instantiate(keyAuth, { keys: ['k'], header: 'apikey' }), 'header');
});

const origins: { close(): Promise<void> }[] = [];
after(() => Promise.all(origins.map((o) => o.close())));

test('key-auth: E2E-DP-05/06 — /secure without a key is 401, with a valid key reaches the upstream', async () => {
  const origin = await startOrigin(echo('backend'));
  origins.push(origin);
  const gw = await startGateway(`
routes:
  - { name: secure, match: { path: /secure/* }, policy: secure }
policies:
  - name: secure
    nodes:
      - { id: listener, type: listener }
      - { id: api-key, type: key-auth, config: { keys: [e2e-secret], header_name: x-api-key } }
      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: api-key.in }
      - { from: api-key.success, to: backend.in }
      - { from: api-key.denied, to: client.in }
      - { from: backend.success, to: client.in }
`);
  origins.push({ close: () => gw.stop() });
  const denied = await request(`${gw.url}/secure/thing`);
  assert.equal(denied.status, 401);
  assert.equal((JSON.parse(denied.body) as { error: string }).error, 'unauthorized');
  assert.equal(origin.requests.length, 0);
  const ok = await request(`${gw.url}/secure/thing`, { headers: { 'x-api-key': 'e2e-secret' } });
  assert.equal(ok.status, 200);
  assert.equal(origin.requests.length, 1);
});
