import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import { SignJWT, type JWTPayload } from 'jose';
import { jwtAuth } from '../../../src/plugins/auth/jwt-auth.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, envWith, responseJson, runNode } from './helpers.js';

const now = () => Math.floor(Date.now() / 1000);
const secret = 'a-shared-secret-of-enough-length!';
const hmacKey = new TextEncoder().encode(secret);

function sign(claims: JWTPayload, alg: string, key: Parameters<SignJWT['sign']>[0]): Promise<string> {
  return new SignJWT({ exp: now() + 60, ...claims }).setProtectedHeader({ alg }).sign(key);
}

const bearer = (token: string) => requestContext({ headers: { authorization: `Bearer ${token}` } });

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ed = generateKeyPairSync('ed25519');
const pem = (k: { publicKey: { export(o: { type: 'spki'; format: 'pem' }): string | Buffer } }) =>
  String(k.publicKey.export({ type: 'spki', format: 'pem' }));

test('jwt-auth: a valid HS256 token leaves by success with its claims in message', async () => {
  const node = instantiate(jwtAuth, { secret });
  const ctx = bearer(await sign({ sub: 'u1', role: 'admin' }, 'HS256', hmacKey));
  assert.equal(await runNode(node, ctx), 'success');
  assert.equal(ctx.message['user_id'], 'u1');
  assert.equal((ctx.message['jwt_claims'] as JWTPayload)['role'], 'admin');
  assert.equal(ctx.response.status, 0);
});

test('jwt-auth: RS256, PS256, ES256 and EdDSA tokens verify against a PEM public_key', async () => {
  const cases = [
    { alg: 'RS256', pair: rsa },
    { alg: 'PS256', pair: rsa },
    { alg: 'ES256', pair: ec },
    { alg: 'EdDSA', pair: ed },
  ];
  for (const { alg, pair } of cases) {
    const node = instantiate(jwtAuth, { public_key: pem(pair), algorithm: alg });
    assert.equal(await runNode(node, bearer(await sign({ sub: alg }, alg, pair.privateKey))), 'success', alg);
  }
  // Without `algorithm` the key type decides: EC P-256 → ES256.
  const inferred = instantiate(jwtAuth, { public_key: pem(ec) });
  assert.equal(await runNode(inferred, bearer(await sign({}, 'ES256', ec.privateKey))), 'success');
});

test('jwt-auth: a bad signature → 401 with a Bearer challenge on denied', async () => {
  const node = instantiate(jwtAuth, { secret });
  const ctx = bearer(await sign({}, 'HS256', new TextEncoder().encode('another-secret-entirely-0123456')));
  assert.equal(await runNode(node, ctx), 'denied');
  assert.equal(ctx.response.status, 401);
  assert.equal(ctx.response.headers['www-authenticate'], 'Bearer realm="jwt"');
  const body = responseJson(ctx) as { error: string; message: string };
  assert.equal(body.error, 'unauthorized');
  assert.match(body.message, /^Invalid JWT/);
  assert.equal(ctx.errors.length, 0);
});

test('jwt-auth: expired, not-yet-valid and exp-less tokens are denied; the grace period widens the window', async () => {
  const node = instantiate(jwtAuth, { secret });
  const expired = bearer(await sign({ exp: now() - 30 }, 'HS256', hmacKey));
  assert.equal(await runNode(node, expired), 'denied');
  assert.equal((responseJson(expired) as { message: string }).message, 'Invalid JWT: token has expired');
  assert.equal(await runNode(node, bearer(await sign({ nbf: now() + 300 }, 'HS256', hmacKey))), 'denied');
  const noExp = await new SignJWT({ sub: 'x' }).setProtectedHeader({ alg: 'HS256' }).sign(hmacKey);
  assert.equal(await runNode(node, bearer(noExp)), 'denied');
  const lenient = instantiate(jwtAuth, { secret, lifetime_grace_period: 120 });
  assert.equal(await runNode(lenient, bearer(await sign({ exp: now() - 30 }, 'HS256', hmacKey))), 'success');
});

test('jwt-auth: the algorithm is pinned — an HS256 token is refused by an RS256 node (no alg confusion)', async () => {
  const node = instantiate(jwtAuth, { public_key: pem(rsa), algorithm: 'RS256' });
  const forged = await sign({}, 'HS256', new TextEncoder().encode(pem(rsa)));
  assert.equal(await runNode(node, bearer(forged)), 'denied');
  const hs512 = instantiate(jwtAuth, { secret, algorithm: 'HS512' });
  assert.equal(await runNode(hs512, bearer(await sign({}, 'HS256', hmacKey))), 'denied');
});

test('jwt-auth: missing or malformed tokens are denied with 401', async () => {
  const node = instantiate(jwtAuth, { secret });
  const none = requestContext();
  assert.equal(await runNode(node, none), 'denied');
  assert.deepEqual(responseJson(none), { error: 'unauthorized', message: 'Missing authorization token' });
  assert.equal(await runNode(node, bearer('not.a.jwt')), 'denied');
  assert.equal(await runNode(node, bearer('garbage')), 'denied');
});

test('jwt-auth: the token is looked up in the header, then query_param, then cookie_name', async () => {
  const token = await sign({}, 'HS256', hmacKey);
  const node = instantiate(jwtAuth, {
    secret,
    query_param: 'jwt',
    cookie_name: 'jwt',
    hide_credentials: true,
  });
  const raw = requestContext({ headers: { authorization: token } });
  assert.equal(await runNode(node, raw), 'success', 'the Bearer prefix is optional');
  assert.equal(raw.request.headers['authorization'], undefined, 'hide_credentials strips the header');
  const fromQuery = requestContext({ url: `/p?jwt=${token}&x=1` });
  assert.equal(await runNode(node, fromQuery), 'success');
  assert.equal(fromQuery.request.url, '/p?x=1');
  const fromCookie = requestContext({ headers: { cookie: `a=b; jwt=${token}` } });
  assert.equal(await runNode(node, fromCookie), 'success');
});

test('jwt-auth: use_consumers picks the consumer by the key claim and verifies with its own key', async () => {
  const env = envWith([
    { name: 'alice', group: 'gold', credentials: { 'jwt-auth': { key: 'alice-key', secret } } },
    { name: 'bob', credentials: { 'jwt-auth': { key: 'bob-key', public_key: pem(ed), algorithm: 'EdDSA' } } },
  ]);
  const node = instantiate(jwtAuth, { use_consumers: true }, env);
  const alice = bearer(await sign({ key: 'alice-key' }, 'HS256', hmacKey));
  assert.equal(await runNode(node, alice), 'success');
  assert.deepEqual(alice.consumer, { name: 'alice', group: 'gold' });
  assert.equal(alice.message['consumer.auth_type'], 'jwt-auth');
  const bob = bearer(await sign({ key: 'bob-key' }, 'EdDSA', ed.privateKey));
  assert.equal(await runNode(node, bob), 'success');
  assert.equal(bob.message['consumer.name'], 'bob');
  // Alice's claim with a token signed by someone else's key.
  assert.equal(
    await runNode(node, bearer(await sign({ key: 'alice-key' }, 'EdDSA', ed.privateKey))),
    'denied',
  );
  const unknown = bearer(await sign({ key: 'carol-key' }, 'HS256', hmacKey));
  assert.equal(await runNode(node, unknown), 'denied');
  assert.equal((responseJson(unknown) as { message: string }).message, 'Unknown JWT key');
  const noClaim = bearer(await sign({}, 'HS256', hmacKey));
  assert.equal(await runNode(node, noClaim), 'denied');
  assert.equal((responseJson(noClaim) as { message: string }).message, "JWT missing 'key' claim");
});

test('jwt-auth: config rejections', () => {
  assertConfigError(
    () => instantiate(jwtAuth, {}),
    '',
    /requires 'secret', 'public_key' or 'use_consumers: true'/,
  );
  assertConfigError(() => instantiate(jwtAuth, { secret, public_key: pem(rsa) }), 'public_key', /not both/);
  assertConfigError(
    () => instantiate(jwtAuth, { secret, algorithm: 'RS256' }),
    'secret',
    /needs 'public_key'/,
  );
  assertConfigError(() => instantiate(jwtAuth, { public_key: pem(rsa), algorithm: 'HS256' }), 'public_key');
  assertConfigError(() => instantiate(jwtAuth, { public_key: 'not a pem' }), 'public_key', /not a PEM/);
  assertConfigError(() => instantiate(jwtAuth, { public_key: pem(rsa), algorithm: 'ES256' }), 'public_key');
  assertConfigError(() => instantiate(jwtAuth, { use_consumers: true, algorithm: 'HS256' }), 'algorithm');
  assertConfigError(
    () =>
      instantiate(
        jwtAuth,
        { use_consumers: true },
        envWith([{ name: 'x', credentials: { 'jwt-auth': { key: 'k', public_key: 'junk' } } }]),
      ),
    'use_consumers',
    /consumer 'x'/,
  );
  assertSchemaRejects(() => instantiate(jwtAuth, { secret, algorithm: 'none' }), 'algorithm');
  assertSchemaRejects(() => instantiate(jwtAuth, { secret, header: 'authorization' }), 'header');
  assertSchemaRejects(
    () => instantiate(jwtAuth, { secret, lifetime_grace_period: -1 }),
    'lifetime_grace_period',
  );
});
