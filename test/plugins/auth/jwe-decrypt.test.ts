import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { CompactEncrypt } from 'jose';
import { jweDecrypt } from '../../../src/plugins/auth/jwe-decrypt.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, envWith, responseJson, runNode } from './helpers.js';

const key = randomBytes(32);
const keyB64 = key.toString('base64');

function encrypt(
  plaintext: string,
  k: Uint8Array = key,
  header: Record<string, string> = {},
): Promise<string> {
  return new CompactEncrypt(new TextEncoder().encode(plaintext))
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', ...header })
    .encrypt(k);
}

const withToken = (token: string, header = 'authorization') =>
  requestContext({ headers: { [header]: token } });

test('jwe-decrypt: a valid token is decrypted into forward_header and leaves by success', async () => {
  const node = instantiate(jweDecrypt, { key: keyB64, forward_header: 'x-plain' });
  const ctx = withToken(`Bearer ${await encrypt('user=alice')}`);
  assert.equal(await runNode(node, ctx), 'success');
  assert.equal(ctx.request.headers['x-plain'], 'user=alice');
  assert.equal(ctx.response.status, 0);
});

test('jwe-decrypt: the default forward header replaces Authorization with the plaintext', async () => {
  const node = instantiate(jweDecrypt, { key: keyB64 });
  const ctx = withToken(await encrypt('Bearer inner-token'));
  assert.equal(await runNode(node, ctx), 'success');
  assert.equal(ctx.request.headers['authorization'], 'Bearer inner-token');
});

test('jwe-decrypt: a missing token → 401 on denied when strict, success when not', async () => {
  const strict = instantiate(jweDecrypt, { key: keyB64 });
  const ctx = requestContext();
  assert.equal(await runNode(strict, ctx), 'denied');
  assert.equal(ctx.response.status, 401);
  assert.deepEqual(responseJson(ctx), { error: 'unauthorized', message: 'missing JWE token in request' });
  assert.equal(ctx.errors.length, 0);
  const lax = instantiate(jweDecrypt, { key: keyB64, strict: false });
  assert.equal(await runNode(lax, requestContext()), 'success');
});

test('jwe-decrypt: wrong key, tampering, malformed tokens and other algorithms are denied with 401', async () => {
  const node = instantiate(jweDecrypt, { key: keyB64 });
  const wrongKey = withToken(await encrypt('x', randomBytes(32)));
  assert.equal(await runNode(node, wrongKey), 'denied');
  assert.equal((responseJson(wrongKey) as { message: string }).message, 'JWE decryption failed');
  const token = await encrypt('payload');
  const parts = token.split('.');
  parts[3] = Buffer.from('tampered!').toString('base64url');
  assert.equal(await runNode(node, withToken(parts.join('.'))), 'denied');
  assert.equal(await runNode(node, withToken('a.b.c')), 'denied');
  const a128 = await new CompactEncrypt(new TextEncoder().encode('x'))
    .setProtectedHeader({ alg: 'dir', enc: 'A128GCM' })
    .encrypt(randomBytes(16));
  const other = withToken(a128);
  assert.equal(await runNode(node, other), 'denied');
  assert.equal(other.response.status, 401);
});

test('jwe-decrypt: a plaintext that cannot be a header value is denied', async () => {
  const node = instantiate(jweDecrypt, { key: keyB64 });
  assert.equal(await runNode(node, withToken(await encrypt('line\nbreak'))), 'denied');
});

test('jwe-decrypt: use_consumers picks the key by kid and attaches the consumer', async () => {
  const raw = 'k'.repeat(32);
  const env = envWith([
    { name: 'alice', credentials: { 'jwe-decrypt': { key: 'alice-kid', secret: raw } } },
    {
      name: 'bob',
      credentials: { 'jwe-decrypt': { key: 'bob-kid', secret: keyB64, is_base64_encoded: true } },
    },
  ]);
  const node = instantiate(jweDecrypt, { use_consumers: true }, env);
  const alice = withToken(await encrypt('a', Buffer.from(raw), { kid: 'alice-kid' }));
  assert.equal(await runNode(node, alice), 'success');
  assert.equal(alice.message['consumer.name'], 'alice');
  assert.equal(await runNode(node, withToken(await encrypt('b', key, { kid: 'bob-kid' }))), 'success');
  const unknown = withToken(await encrypt('c', key, { kid: 'carol-kid' }));
  assert.equal(await runNode(node, unknown), 'denied');
  assert.equal((responseJson(unknown) as { message: string }).message, 'invalid kid in JWE token');
  const noKid = withToken(await encrypt('d'));
  assert.equal(await runNode(node, noKid), 'denied');
  assert.equal((responseJson(noKid) as { message: string }).message, 'missing kid in JWE token');
});

test('jwe-decrypt: config rejections', () => {
  assertConfigError(() => instantiate(jweDecrypt, {}), '', /requires 'key' or 'use_consumers: true'/);
  assertConfigError(
    () => instantiate(jweDecrypt, { key: randomBytes(16).toString('base64') }),
    'key',
    /32 bytes/,
  );
  assertConfigError(
    () =>
      instantiate(
        jweDecrypt,
        { use_consumers: true },
        envWith([{ name: 'x', credentials: { 'jwe-decrypt': { key: 'kid', secret: 'short' } } }]),
      ),
    'use_consumers',
    /consumer 'x'/,
  );
  assertSchemaRejects(() => instantiate(jweDecrypt, { key: keyB64, alg: 'RSA-OAEP' }), 'alg');
  assertSchemaRejects(() => instantiate(jweDecrypt, { key: keyB64, enc: 'A128GCM' }), 'enc');
  assertSchemaRejects(() => instantiate(jweDecrypt, { key: keyB64, secret: 'x' }), 'secret');
});
