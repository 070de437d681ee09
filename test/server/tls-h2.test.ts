import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';
import { connect as h2Connect, type ClientHttp2Session } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { createServer, type Server } from 'node:http';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { createAuthority, type Authority, type CertPair } from '../support/certs.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const dir = tempDir('switchyard-tls-');
let ca: Authority;
let otherCa: Authority;
let origin: Server;
let originPort: number;
const certs: Record<string, CertPair> = {};

before(async () => {
  ca = createAuthority(dir.path, 'ca');
  otherCa = createAuthority(dir.path, 'other-ca');
  certs.default = ca.issue('default', { dns: ['localhost'], ips: ['127.0.0.1'] });
  certs.api = ca.issue('api', { dns: ['api.test'] });
  certs.wild = ca.issue('wild', { cn: 'wildcard', dns: ['*.wild.test'] });
  certs.replacement = ca.issue('replacement', { dns: ['localhost'], ips: ['127.0.0.1'] });
  certs.alice = ca.issue('alice', { cn: 'alice', dns: ['alice.clients.test'], client: true });
  certs.mallory = otherCa.issue('mallory', { cn: 'mallory', client: true });
  // The listener reads these paths; tests swap their contents.
  copyFileSync(certs.default.cert, join(dir.path, 'live.crt'));
  copyFileSync(certs.default.key, join(dir.path, 'live.key'));
  origin = createServer((req, res) => res.end(`origin saw ${req.url} over http/${req.httpVersion}`));
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  originPort = (origin.address() as AddressInfo).port;
});

after(() => {
  origin.close();
  dir.remove();
});

const gatewayYaml = () => `
routes:
  - { name: proxied, match: { path: /proxy/* }, policy: proxied }
  - { name: who, match: { path: /whoami }, policy: who }
  - { name: admins, match: { path: /admins-only }, policy: by-cn }
policies:
  - name: by-cn
    nodes:
      - { id: in, type: listener }
      - { id: is-alice, type: condition, config: { conditions: [[msg___client_cert_subject_cn, "==", alice]] } }
      - { id: welcome, type: mocking, config: { response_example: welcome, content_type: text/plain } }
      - { id: refuse, type: mocking, config: { response_example: refused, content_type: text/plain, response_status: 403 } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: is-alice.in }
      - { from: is-alice.true, to: welcome.in }
      - { from: is-alice.false, to: refuse.in }
      - { from: welcome.success, to: out.in }
      - { from: refuse.success, to: out.in }
  - name: proxied
    nodes:
      - { id: in, type: listener }
      - { id: rw, type: proxy-rewrite, config: { strip_path_prefix: /proxy } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${originPort} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: rw.in }
      - { from: rw.success, to: up.in }
      - { from: up.success, to: out.in }
  - name: who
    nodes:
      - { id: in, type: listener }
      - id: m
        type: mocking
        config:
          content_type: text/plain
          response_example: "cn={{message.__client_cert_subject_cn}} fp={{message.__client_cert_fingerprint}} proto={{request.scheme}} ip={{client.ip}} via={{request.headers.host}}"
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`;

function systemYaml(tls: string): string {
  return `listener: { bind: 127.0.0.1, port: 0 }\ntimeouts: { shutdown_timeout_seconds: 2 }\ntls:\n${tls}`;
}

async function withGateway(tls: string, fn: (gw: RunningGateway) => Promise<void>): Promise<void> {
  const gw = await startGateway(gatewayYaml(), { systemYaml: systemYaml(tls) });
  try {
    await fn(gw);
  } finally {
    await gw.stop();
  }
}

/** Completes a TLS handshake and returns the server certificate (or the handshake error). */
function handshake(
  port: number,
  options: { servername?: string; maxVersion?: 'TLSv1.2' | 'TLSv1.3'; cert?: CertPair } = {},
): Promise<PeerCertificate> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port,
      ca: ca.certPem,
      rejectUnauthorized: false,
      ...(options.servername ? { servername: options.servername } : {}),
      ...(options.maxVersion ? { maxVersion: options.maxVersion } : {}),
      ...(options.cert ? { cert: options.cert.certPem, key: options.cert.keyPem } : {}),
    });
    socket.once('secureConnect', () => {
      const cert = socket.getPeerCertificate();
      socket.end();
      resolve(cert);
    });
    socket.once('error', reject);
  });
}

function httpsGet(port: number, path: string, cert?: CertPair): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        ca: ca.certPem,
        agent: false,
        ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function h2Get(session: ClientHttp2Session, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path });
    let status = 0;
    let body = '';
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (d: Buffer) => (body += d.toString()));
    stream.on('end', () => resolve({ status, body }));
    stream.on('error', reject);
  });
}

const basicTls = () =>
  `  cert_path: ${join(dir.path, 'live.crt')}\n  key_path: ${join(dir.path, 'live.key')}\n`;

test('tls: min_version 1.3 rejects a TLS 1.2-only client and accepts 1.3', async () => {
  await withGateway(basicTls() + '  min_version: "1.3"\n', async (gw) => {
    await assert.rejects(handshake(gw.port, { maxVersion: 'TLSv1.2' }));
    const cert = await handshake(gw.port, { maxVersion: 'TLSv1.3' });
    assert.equal(cert.subject.CN, 'default');
  });
});

test('tls: SNI picks the exact, then the wildcard certificate; no match or no SNI gets the default', async () => {
  const sni = `  sni_certs:\n    - { server_name: API.test, cert_path: ${certs.api?.cert}, key_path: ${certs.api?.key} }\n    - { server_name: "*.wild.test", cert_path: ${certs.wild?.cert}, key_path: ${certs.wild?.key} }\n`;
  await withGateway(basicTls() + sni, async (gw) => {
    assert.equal((await handshake(gw.port, { servername: 'api.test' })).subject.CN, 'api');
    assert.equal((await handshake(gw.port, { servername: 'x.wild.test' })).subject.CN, 'wildcard');
    assert.equal((await handshake(gw.port, { servername: 'a.b.wild.test' })).subject.CN, 'default');
    assert.equal((await handshake(gw.port, { servername: 'other.test' })).subject.CN, 'default');
    assert.equal((await handshake(gw.port)).subject.CN, 'default');
  });
});

test('tls: a replaced certificate file is served to the next connection; a broken one keeps the old', async () => {
  copyFileSync(certs.default!.cert, join(dir.path, 'live.crt'));
  copyFileSync(certs.default!.key, join(dir.path, 'live.key'));
  await withGateway(basicTls(), async (gw) => {
    assert.equal((await handshake(gw.port)).subject.CN, 'default');
    copyFileSync(certs.replacement!.key, join(dir.path, 'live.key'));
    copyFileSync(certs.replacement!.cert, join(dir.path, 'live.crt'));
    await waitFor(async () => (await handshake(gw.port)).subject.CN === 'replacement', {
      what: 'the replaced certificate',
    });
    // A key that does not match its certificate is refused: the replacement stays.
    copyFileSync(certs.api!.key, join(dir.path, 'live.key'));
    const res = await httpsGet(gw.port, '/whoami');
    assert.equal(res.status, 200);
    assert.equal((await handshake(gw.port)).subject.CN, 'replacement');
  });
  copyFileSync(certs.default!.cert, join(dir.path, 'live.crt'));
  copyFileSync(certs.default!.key, join(dir.path, 'live.key'));
});

test('mtls: required rejects no certificate and one from another CA; accepts ours with its identity', async () => {
  await withGateway(basicTls() + `  client_ca_path: ${ca.cert}\n`, async (gw) => {
    await assert.rejects(httpsGet(gw.port, '/whoami'));
    await assert.rejects(httpsGet(gw.port, '/whoami', certs.mallory));
    const ok = await httpsGet(gw.port, '/whoami', certs.alice);
    assert.equal(ok.status, 200);
    assert.match(ok.body, /^cn=alice fp=[0-9a-f]{64} proto=https ip=127\.0\.0\.1 via=127\.0\.0\.1:\d+$/);
  });
});

test('mtls: optional accepts both, exposes identity only when sent, still verifies a sent certificate', async () => {
  await withGateway(
    basicTls() + `  client_ca_path: ${ca.cert}\n  client_cert_required: false\n`,
    async (gw) => {
      const anonymous = await httpsGet(gw.port, '/whoami');
      assert.match(anonymous.body, /^cn= fp= proto=https ip=127\.0\.0\.1/);
      const alice = await httpsGet(gw.port, '/whoami', certs.alice);
      assert.match(alice.body, /^cn=alice fp=[0-9a-f]{64}/);
      await assert.rejects(httpsGet(gw.port, '/whoami', certs.mallory));
    },
  );
});

test('mtls: a policy routes on the client certificate CN', async () => {
  const bob = ca.issue('bob', { cn: 'bob', client: true });
  await withGateway(
    basicTls() + `  client_ca_path: ${ca.cert}\n  client_cert_required: false\n`,
    async (gw) => {
      assert.deepEqual(await httpsGet(gw.port, '/admins-only', certs.alice), {
        status: 200,
        body: 'welcome',
      });
      assert.deepEqual(await httpsGet(gw.port, '/admins-only', bob), { status: 403, body: 'refused' });
      assert.deepEqual(await httpsGet(gw.port, '/admins-only'), { status: 403, body: 'refused' });
    },
  );
});

test('h2: HTTP/2 over TLS (ALPN) and HTTP/1.1 on the same port are both proxied', async () => {
  await withGateway(basicTls(), async (gw) => {
    const session = h2Connect(`https://127.0.0.1:${gw.port}`, { ca: ca.certPem });
    try {
      const res = await h2Get(session, '/proxy/x');
      assert.equal(res.status, 200);
      assert.equal(res.body, 'origin saw /x over http/1.1');
    } finally {
      session.close();
    }
    const h1 = await httpsGet(gw.port, '/proxy/y');
    assert.equal(h1.body, 'origin saw /y over http/1.1');
  });
});

test('h2c: prior-knowledge HTTP/2 and HTTP/1.1 share the cleartext port', async () => {
  const gw = await startGateway(gatewayYaml());
  try {
    const session = h2Connect(gw.url);
    try {
      const res = await h2Get(session, '/proxy/clear');
      assert.equal(res.status, 200);
      assert.equal(res.body, 'origin saw /clear over http/1.1');
      const who = await h2Get(session, '/whoami');
      assert.match(who.body, /^cn= fp= proto=http ip=127\.0\.0\.1 via=127\.0\.0\.1:\d+$/);
    } finally {
      session.close();
    }
    const h1 = await fetch(`${gw.url}/proxy/h1`);
    assert.equal(await h1.text(), 'origin saw /h1 over http/1.1');
  } finally {
    await gw.stop();
  }
});

test('h2: http2.enabled false serves only HTTP/1.1 over TLS', async () => {
  const gw = await startGateway(gatewayYaml(), {
    systemYaml: systemYaml(basicTls()) + 'http2: { enabled: false }\n',
  });
  try {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port: gw.port,
      ca: ca.certPem,
      ALPNProtocols: ['h2', 'http/1.1'],
    });
    await once(socket, 'secureConnect');
    assert.equal(socket.alpnProtocol, 'http/1.1');
    socket.end();
  } finally {
    await gw.stop();
  }
});

test('h2: the outbound client offers h2 to TLS upstreams (ALPN) and falls back to HTTP/1.1', async () => {
  const { createSecureServer } = await import('node:http2');
  const pair = ca.issue('h2-origin', { dns: ['localhost'], ips: ['127.0.0.1'] });
  const h2origin = createSecureServer(
    { cert: pair.certPem, key: pair.keyPem, allowHTTP1: true },
    (req, res) => {
      res.end(`origin http/${req.httpVersion}`);
    },
  );
  h2origin.listen(0, '127.0.0.1');
  await once(h2origin, 'listening');
  const port = (h2origin.address() as AddressInfo).port;
  const gw = await startGateway(`
routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }], tls: true, ca_cert_path: ${ca.cert} } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`);
  try {
    const res = await fetch(`${gw.url}/x`);
    assert.equal(await res.text(), 'origin http/2.0');
  } finally {
    await gw.stop();
    h2origin.close();
  }
});
