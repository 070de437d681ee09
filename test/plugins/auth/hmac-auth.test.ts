import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import { hmacAuth } from '../../../src/plugins/auth/hmac-auth.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, envWith, responseJson } from './helpers.js';

interface SignOptions {
  accessKey?: string;
  secret?: string;
  digest?: string;
  signed?: string[];
  date?: string;
  method?: string;
  url?: string;
  headers?: Record<string, string>;
  style?: 'authorization' | 'x-hmac';
}

/** Signs a request the way a client does: access key, then `name: value` per signed header. */
function signed(options: SignOptions = {}) {
  const {
    accessKey = 'ak',
    secret = 'sk',
    digest = 'sha256',
    signed: names = ['date', '@request-target'],
    date = new Date().toUTCString(),
    method = 'GET',
    url = '/orders?b=2&a=1',
    style = 'authorization',
  } = options;
  const headers: Record<string, string> = { date, ...options.headers };
  const path = url.split('?')[0]!;
  const query = new URLSearchParams(url.split('?')[1] ?? '');
  const sorted = [...query].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${v}`);
  const target = sorted.length === 0 ? path : `${path}?${sorted.join('&')}`;
  const lines = [accessKey];
  for (const name of names)
    lines.push(name === '@request-target' ? `${method} ${target}` : `${name}: ${headers[name]}`);
  const signature = createHmac(digest, secret)
    .update(`${lines.join('\n')}\n`)
    .digest('base64');
  if (style === 'authorization') {
    headers['authorization'] =
      `Signature keyId="${accessKey}",algorithm="hmac-${digest}",headers="${names.join(' ')}",signature="${signature}"`;
  } else {
    headers['x-hmac-access-key'] = accessKey;
    headers['x-hmac-algorithm'] = `hmac-${digest}`;
    headers['x-hmac-signed-headers'] = names.join(' ');
    headers['x-hmac-signature'] = signature;
  }
  return requestContext({ method, url, headers });
}

const inline = { access_key: 'ak', secret_key: 'sk' };

test('hmac-auth: a correctly signed request (Authorization: Signature) leaves by success', () => {
  const node = instantiate(hmacAuth, inline);
  const ctx = signed();
  assert.equal(node.run(ctx), 'success');
  assert.equal(ctx.response.status, 0);
  assert.ok(ctx.request.headers['authorization'], 'kept unless hide_credentials');
});

test('hmac-auth: X-HMAC-* headers work too and are stripped unless keep_headers', () => {
  const node = instantiate(hmacAuth, inline);
  const ctx = signed({ style: 'x-hmac' });
  assert.equal(node.run(ctx), 'success');
  assert.equal(ctx.request.headers['x-hmac-signature'], undefined);
  const keep = instantiate(hmacAuth, { ...inline, keep_headers: true, hide_credentials: true });
  const kept = signed({ style: 'x-hmac' });
  assert.equal(keep.run(kept), 'success');
  assert.ok(kept.request.headers['x-hmac-signature']);
  const hidden = signed();
  assert.equal(keep.run(hidden), 'success');
  assert.equal(hidden.request.headers['authorization'], undefined);
});

test('hmac-auth: a bad signature → 401 with the hmac challenge on denied', () => {
  const node = instantiate(hmacAuth, { ...inline, realm: 'orders' });
  const ctx = signed({ secret: 'wrong' });
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 401);
  assert.equal(ctx.response.headers['www-authenticate'], 'hmac realm="orders"');
  assert.deepEqual(responseJson(ctx), { error: 'unauthorized', message: 'Invalid signature' });
  assert.equal(ctx.errors.length, 0);
});

test('hmac-auth: a changed request target invalidates the signature', () => {
  const node = instantiate(hmacAuth, inline);
  const ctx = signed();
  ctx.request.path = '/admin';
  assert.equal(node.run(ctx), 'denied');
});

test('hmac-auth: stale or missing Date, unknown key, wrong algorithm and missing signed headers are denied', () => {
  const node = instantiate(hmacAuth, { ...inline, signed_headers: ['x-tenant'] });
  const reason = (ctx: ReturnType<typeof signed>) => {
    assert.equal(node.run(ctx), 'denied');
    assert.equal(ctx.response.status, 401);
    return (responseJson(ctx) as { message: string }).message;
  };
  const tenant = { headers: { 'x-tenant': 't1' }, signed: ['date', 'x-tenant'] };
  assert.equal(node.run(signed(tenant)), 'success');
  assert.equal(
    reason(signed({ ...tenant, date: new Date(Date.now() - 600_000).toUTCString() })),
    'Clock skew exceeded',
  );
  assert.equal(reason(signed({ ...tenant, date: 'yesterday' })), 'Invalid GMT format time');
  assert.equal(reason(signed({ ...tenant, accessKey: 'other' })), 'Invalid access key');
  assert.equal(reason(signed({ ...tenant, digest: 'sha512' })), 'Invalid algorithm');
  assert.equal(reason(signed()), 'expected header "x-tenant" missing in signing');
  assert.equal(reason(requestContext()), "client request can't be validated");
  const noDate = requestContext({ headers: { authorization: 'Signature keyId="ak",signature="AA=="' } });
  assert.equal(reason(noDate), 'Date header missing, failed to validate clock skew');
});

test('hmac-auth: clock_skew 0 disables the Date check; hmac-sha1 and hmac-sha512 are supported', () => {
  const node = instantiate(hmacAuth, { ...inline, clock_skew: 0, algorithm: 'hmac-sha512' });
  assert.equal(
    node.run(signed({ digest: 'sha512', signed: ['@request-target'], date: 'not a date' })),
    'success',
  );
  const sha1 = instantiate(hmacAuth, { ...inline, algorithm: 'hmac-sha1' });
  assert.equal(sha1.run(signed({ digest: 'sha1' })), 'success');
});

test('hmac-auth: use_consumers verifies with the consumer secret and attaches it; anonymous fallback', () => {
  const env = envWith([
    {
      name: 'alice',
      group: 'gold',
      credentials: { 'hmac-auth': { access_key: 'alice-ak', secret_key: 'alice-sk' } },
    },
    { name: 'guest' },
  ]);
  const node = instantiate(hmacAuth, { use_consumers: true }, env);
  const ctx = signed({ accessKey: 'alice-ak', secret: 'alice-sk' });
  assert.equal(node.run(ctx), 'success');
  assert.deepEqual(ctx.consumer, { name: 'alice', group: 'gold' });
  assert.equal(ctx.message['consumer.auth_type'], 'hmac-auth');
  assert.equal(node.run(signed({ accessKey: 'alice-ak', secret: 'sk' })), 'denied');
  const open = instantiate(hmacAuth, { use_consumers: true, anonymous_consumer: 'guest' }, env);
  const anon = requestContext();
  assert.equal(open.run(anon), 'success');
  assert.equal(anon.message['consumer.name'], 'guest');
});

test('hmac-auth: config rejections', () => {
  assertConfigError(
    () => instantiate(hmacAuth, {}),
    '',
    /requires 'access_key'\+'secret_key' or 'use_consumers: true'/,
  );
  assertConfigError(() => instantiate(hmacAuth, { access_key: 'ak' }), 'secret_key');
  assertConfigError(() => instantiate(hmacAuth, { use_consumers: true, secret_key: 'sk' }), 'access_key');
  assertConfigError(
    () => instantiate(hmacAuth, { use_consumers: true, anonymous_consumer: 'nobody' }),
    'anonymous_consumer',
  );
  assertSchemaRejects(() => instantiate(hmacAuth, { ...inline, algorithm: 'hmac-md5' }), 'algorithm');
  assertSchemaRejects(() => instantiate(hmacAuth, { ...inline, clock_skew: -1 }), 'clock_skew');
  assertSchemaRejects(
    () => instantiate(hmacAuth, { ...inline, allowed_algorithms: [] }),
    'allowed_algorithms',
  );
});
