import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import type { TLSSocket } from 'node:tls';
import { after, before, test } from 'node:test';
import { ConfigError } from '../../../src/core/plugin.js';
import {
  createTestPki,
  echo,
  startOrigin,
  type Origin,
  type OriginHandler,
  type TestPki,
} from '../../support/origins.js';
import { requestContext } from '../../support/plugin-env.js';
import { answeredBy, closeAll, createUpstream, echoed } from './helpers.js';
import { failsWith, runOk } from '../../support/node-run.js';

let pki: TestPki;
const origins: Origin[] = [];
before(() => {
  pki = createTestPki();
});
after(async () => {
  await closeAll();
  await Promise.all(origins.map((o) => o.close()));
  pki.remove();
});

async function httpsOrigin(
  name: string,
  extra: { requestCert?: boolean } = {},
  handler?: OriginHandler,
): Promise<Origin> {
  const origin = await startOrigin(handler ?? echo(name), {
    name,
    https: {
      key: readFileSync(pki.serverKey),
      cert: readFileSync(pki.serverCert),
      ...(extra.requestCert === true
        ? { requestCert: true, rejectUnauthorized: true, ca: readFileSync(pki.caCert) }
        : {}),
    },
  });
  origins.push(origin);
  return origin;
}

test('upstream https: ssl_verify with ca_cert_path trusts a self-signed CA', async () => {
  const origin = await httpsOrigin('tls');
  const { node } = createUpstream({ targets: [origin.target], tls: true, ca_cert_path: pki.caCert });
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(answeredBy(ctx), 'tls');
});

test('upstream https: scheme https is the same as tls: true', async () => {
  const origin = await httpsOrigin('tls');
  const { node } = createUpstream({ targets: [origin.target], scheme: 'https', ca_cert_path: pki.caCert });
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(answeredBy(ctx), 'tls');
});

test('upstream https: an untrusted certificate with ssl_verify on → 502 UPSTREAM_CONNECTION_ERROR', async () => {
  const origin = await httpsOrigin('tls');
  const { node } = createUpstream({ targets: [origin.target], tls: true });
  const err = await failsWith(node, requestContext(), 'UPSTREAM_CONNECTION_ERROR', 502);
  assert.match(err.message, /TLS|certificate/i);
});

test('upstream https: ssl_verify false accepts any certificate', async () => {
  const origin = await httpsOrigin('tls');
  const { node } = createUpstream({ targets: [origin.target], tls: true, ssl_verify: false });
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(answeredBy(ctx), 'tls');
});

test('upstream https: the TLS name checked is the target host when pass_host is node', async () => {
  // The certificate names localhost and 127.0.0.1; a target named localhost verifies by DNS name.
  const origin = await httpsOrigin('tls');
  const { node } = createUpstream({
    targets: [{ host: 'localhost', port: origin.port }],
    tls: true,
    ca_cert_path: pki.caCert,
  });
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(echoed(ctx).headers.host, `localhost:${origin.port}`);
});

test('upstream mTLS: the client certificate is presented to an origin that requires one', async () => {
  const origin = await httpsOrigin('mtls', { requestCert: true }, (req, res) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    res.writeHead(200, { 'x-origin': 'mtls', 'x-client-cn': String(peer.subject?.CN ?? '') });
    res.end();
  });
  const { node } = createUpstream({
    targets: [origin.target],
    tls: true,
    ca_cert_path: pki.caCert,
    client_cert_path: pki.clientCert,
    client_key_path: pki.clientKey,
  });
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(ctx.response.headers['x-client-cn'], 'switchyard-client');
});

test('upstream mTLS: without a client certificate the origin refuses → 502 UPSTREAM_CONNECTION_ERROR', async () => {
  const origin = await httpsOrigin('mtls', { requestCert: true });
  const { node } = createUpstream({ targets: [origin.target], tls: true, ca_cert_path: pki.caCert });
  await failsWith(node, requestContext(), 'UPSTREAM_CONNECTION_ERROR', 502);
});

test('upstream https: h2 is offered through ALPN and used when the target supports it', async () => {
  const origin = await startOrigin(
    (req, res) => {
      res.writeHead(200, { 'x-origin': 'h2', 'x-http-version': req.httpVersion });
      res.end('over h2');
    },
    { name: 'h2', http2: { key: readFileSync(pki.serverKey), cert: readFileSync(pki.serverCert) } },
  );
  origins.push(origin);
  const { node } = createUpstream({ targets: [origin.target], tls: true, ca_cert_path: pki.caCert });
  const ctx = requestContext({
    method: 'POST',
    body: Buffer.from('x'),
    headers: { host: 'gw', connection: 'keep-alive' },
  });
  await runOk(node, ctx);
  assert.equal(ctx.response.headers['x-http-version'], '2.0');
  assert.equal(ctx.response.body?.toString(), 'over h2');
});

test('upstream mTLS: a key that does not match the certificate is a load error on client_key_path', () => {
  assert.throws(
    () =>
      createUpstream({
        targets: [{ host: '127.0.0.1', port: 443 }],
        tls: true,
        client_cert_path: pki.clientCert,
        client_key_path: pki.serverKey,
      }),
    (err: unknown) => err instanceof ConfigError && err.path === 'client_key_path',
  );
});

test('upstream https: a CA file that is not PEM is a load error on ca_cert_path', () => {
  const notPem = `${pki.dir}/not-pem.txt`;
  writeFileSync(notPem, 'hello');
  assert.throws(
    () => createUpstream({ targets: [{ host: '127.0.0.1', port: 443 }], tls: true, ca_cert_path: notPem }),
    (err: unknown) => err instanceof ConfigError && err.path === 'ca_cert_path',
  );
});
