/**
 * gRPC over TLS on both legs (docs/grpc.md): a client negotiates h2 by ALPN
 * with the gateway's TLS listener, and the upstream node reaches a TLS gRPC
 * server with `scheme: grpcs`, verifying it against `ca_cert_path`. Also: an
 * upstream slower than `timeout_ms` is DEADLINE_EXCEEDED.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { createAuthority } from '../support/certs.js';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { tempDir } from '../support/temp-dir.js';
import { loadDemo, SLOW, startEchoServer, type EchoReply, type EchoRequest } from './echo-server.js';

type Echo = grpc.Client & {
  Unary(req: EchoRequest, md: grpc.Metadata, cb: grpc.requestCallback<EchoReply>): grpc.ClientUnaryCall;
  Bidi(md: grpc.Metadata): grpc.ClientDuplexStream<EchoRequest, EchoReply>;
};

const dir = tempDir('switchyard-grpc-tls-');
const ca = createAuthority(dir.path);
const leaf = ca.issue('grpc', { dns: ['localhost'], ips: ['127.0.0.1'] });
let origin: Awaited<ReturnType<typeof startEchoServer>>;
let gw: RunningGateway;
let echo: Echo;

before(async () => {
  origin = await startEchoServer(
    grpc.ServerCredentials.createSsl(null, [
      { private_key: Buffer.from(leaf.keyPem), cert_chain: Buffer.from(leaf.certPem) },
    ]),
  );
  gw = await startGateway(
    `
routes:
  - { name: echo, match: { path: /demo.Echo/* }, policy: echo }
policies:
  - name: echo
    nodes:
      - { id: in, type: listener }
      - id: up
        type: upstream
        config:
          scheme: grpcs
          ca_cert_path: ${ca.cert}
          timeout_ms: 500
          targets: [{ host: 127.0.0.1, port: ${origin.port} }]
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
      - { from: up.error, to: out.in }
`,
    {
      systemYaml:
        'listener: { bind: 127.0.0.1, port: 0 }\ntimeouts: { shutdown_timeout_seconds: 2 }\n' +
        `tls:\n  cert_path: ${leaf.cert}\n  key_path: ${leaf.key}\n`,
    },
  );
  const { Echo } = loadDemo();
  echo = new Echo(
    `127.0.0.1:${gw.port}`,
    grpc.credentials.createSsl(Buffer.from(ca.certPem)),
  ) as unknown as Echo;
});

after(async () => {
  echo?.close();
  await gw?.stop();
  await origin?.stop();
  dir.remove();
});

function unary(
  req: EchoRequest,
): Promise<{ err: grpc.ServiceError | null; value?: EchoReply; trailers?: grpc.Metadata }> {
  return new Promise((resolve) => {
    const md = new grpc.Metadata();
    md.set('x-trace', 'tls');
    let result: { err: grpc.ServiceError | null; value?: EchoReply } | undefined;
    let trailers: grpc.Metadata | undefined;
    const call = echo.Unary(req, md, (err, value) => {
      result = { err, ...(value === undefined ? {} : { value }) };
      if (trailers !== undefined) resolve({ ...result, trailers });
    });
    call.on('status', (s: grpc.StatusObject) => {
      trailers = s.metadata;
      if (result !== undefined) resolve({ ...result, trailers });
    });
  });
}

test('grpcs: a unary call over TLS on both legs keeps its reply and trailers', async () => {
  const res = await unary({ message: 'secure hello' });
  assert.equal(res.err, null);
  assert.equal(res.value?.message, 'secure hello');
  assert.deepEqual(res.trailers?.get('x-trailer'), ['done-tls']);
});

test('grpcs: a bidirectional stream over TLS on both legs', async () => {
  const md = new grpc.Metadata();
  md.set('x-trace', 'bidi');
  const call = echo.Bidi(md);
  const got: string[] = [];
  call.on('data', (m: EchoReply) => got.push(m.message));
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  for (const m of ['a', 'b', 'c']) call.write({ message: m });
  call.end();
  const s = await status;
  assert.equal(s.code, grpc.status.OK);
  assert.deepEqual(got, ['echo:a', 'echo:b', 'echo:c']);
  assert.deepEqual(s.metadata.get('x-trailer'), ['done-bidi']);
});

test('grpc: an upstream that does not answer within timeout_ms is DEADLINE_EXCEEDED', async () => {
  const started = Date.now();
  const res = await unary({ message: SLOW });
  assert.equal(res.err?.code, grpc.status.DEADLINE_EXCEEDED, res.err?.details);
  // timeout_ms is 500; the server would answer after 3000.
  assert.ok(Date.now() - started < 2500, `answered after ${Date.now() - started} ms`);
});

test('grpcs: an upstream certificate the CA did not sign is UNAVAILABLE, not a plaintext fallback', async () => {
  const other = createAuthority(dir.path, 'other');
  const gw2 = await startGateway(`
routes:
  - { name: echo, match: { path: /demo.Echo/* }, policy: echo }
policies:
  - name: echo
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { scheme: grpcs, ca_cert_path: ${join(dir.path, 'other.crt')}, targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
      - { from: up.error, to: out.in }
`);
  assert.ok(other.cert.endsWith('other.crt'));
  const { Echo } = loadDemo();
  const plain = new Echo(`127.0.0.1:${gw2.port}`, grpc.credentials.createInsecure()) as unknown as Echo;
  try {
    const err = await new Promise<grpc.ServiceError | null>((resolve) =>
      plain.Unary({ message: 'x' }, new grpc.Metadata(), (e) => resolve(e)),
    );
    assert.equal(err?.code, grpc.status.UNAVAILABLE);
    assert.match(err?.details ?? '', /TLS|certificate/i);
  } finally {
    plain.close();
    await gw2.stop();
  }
});
