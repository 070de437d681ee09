/**
 * jwt-auth on a gRPC route (docs/grpc.md): the token travels as
 * `authorization: Bearer …` metadata; a missing, badly signed or expired
 * token is UNAUTHENTICATED for the gRPC client, a good one reaches the server.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { SignJWT } from 'jose';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { loadDemo, startEchoServer, type EchoReply, type EchoRequest } from './echo-server.js';

type Echo = grpc.Client & {
  Unary(req: EchoRequest, md: grpc.Metadata, cb: grpc.requestCallback<EchoReply>): grpc.ClientUnaryCall;
};

const SECRET = 'grpc-jwt-secret-for-tests-only';
let origin: Awaited<ReturnType<typeof startEchoServer>>;
let gw: RunningGateway;
let echo: Echo;

before(async () => {
  origin = await startEchoServer();
  gw = await startGateway(`
consumers:
  - name: alice
    credentials:
      jwt-auth: { key: alice, secret: ${SECRET}, algorithm: HS256 }
routes:
  - { name: echo, match: { path: /demo.Echo/* }, policy: echo }
policies:
  - name: echo
    nodes:
      - { id: in, type: listener }
      - { id: jwt, type: jwt-auth, config: { use_consumers: true } }
      - { id: up, type: upstream, config: { scheme: grpc, targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: jwt.in }
      - { from: jwt.success, to: up.in }
      - { from: jwt.denied, to: out.in }
      - { from: up.success, to: out.in }
`);
  echo = new (loadDemo().Echo)(`127.0.0.1:${gw.port}`, grpc.credentials.createInsecure()) as unknown as Echo;
});

after(async () => {
  echo?.close();
  await gw?.stop();
  await origin?.stop();
});

function token(secret: string, expires: string | number): Promise<string> {
  return new SignJWT({ key: 'alice' })
    .setProtectedHeader({ alg: 'HS256' })
    .setExpirationTime(expires)
    .sign(new TextEncoder().encode(secret));
}

function call(bearer?: string): Promise<{ err: grpc.ServiceError | null; value?: EchoReply }> {
  const md = new grpc.Metadata();
  if (bearer !== undefined) md.set('authorization', `Bearer ${bearer}`);
  return new Promise((resolve) =>
    echo.Unary({ message: 'jwt' }, md, (err, value) =>
      resolve({ err, ...(value === undefined ? {} : { value }) }),
    ),
  );
}

test('grpc jwt-auth: a call without a token is UNAUTHENTICATED', async () => {
  const res = await call();
  assert.equal(res.err?.code, grpc.status.UNAUTHENTICATED);
  assert.ok((res.err?.details ?? '').length > 0, 'the refusal says why');
});

test('grpc jwt-auth: a token signed with another secret is UNAUTHENTICATED', async () => {
  const res = await call(await token('not-the-secret-of-alice', '1h'));
  assert.equal(res.err?.code, grpc.status.UNAUTHENTICATED);
});

test('grpc jwt-auth: an expired token is UNAUTHENTICATED', async () => {
  const res = await call(await token(SECRET, Math.floor(Date.now() / 1000) - 3600));
  assert.equal(res.err?.code, grpc.status.UNAUTHENTICATED);
});

test('grpc jwt-auth: a valid token reaches the server and the reply comes back', async () => {
  const res = await call(await token(SECRET, '1h'));
  assert.equal(res.err, null, res.err?.details);
  assert.equal(res.value?.message, 'jwt');
});
