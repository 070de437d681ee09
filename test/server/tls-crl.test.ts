import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { copyFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseSystemConfig, type StreamListenerConfig } from '../../src/config/system.js';
import { describeStartupError, tlsFileIssues } from '../../src/config/startup-errors.js';
import { startTcpStream } from '../../src/stream/tcp.js';
import { silentLogger } from '../../src/core/logger.js';
import { startGateway } from '../support/in-process.js';
import {
  caDatabase,
  createAuthority,
  type Authority,
  type CaDatabase,
  type CertPair,
} from '../support/certs.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const dir = tempDir('switchyard-crl-');
let ca: Authority;
let db: CaDatabase;
let server: CertPair;
let alice: CertPair;
let bob: CertPair;
let crlFile: string;

before(() => {
  ca = createAuthority(dir.path, 'ca');
  db = caDatabase(dir.path, ca);
  server = ca.issue('server', { dns: ['localhost'], ips: ['127.0.0.1'] });
  alice = ca.issue('alice', { cn: 'alice', client: true });
  bob = ca.issue('bob', { cn: 'bob', client: true });
  db.revoke(alice.cert);
  crlFile = db.crl(join(dir.path, 'revoked.crl'));
});

after(() => dir.remove());

const gatewayYaml = `
routes:
  - { name: who, match: { path: /whoami }, policy: who }
policies:
  - name: who
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { content_type: text/plain, response_example: "cn={{message.__client_cert_subject_cn}}" } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`;

type Outcome = { status: number; body: string } | { refused: string };

/** One HTTPS request with a client certificate: the response, or how the connection was refused. */
function httpsGet(port: number, cert: CertPair, maxVersion: 'TLSv1.2' | 'TLSv1.3'): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path: '/whoami',
        ca: ca.certPem,
        cert: cert.certPem,
        key: cert.keyPem,
        agent: false,
        maxVersion,
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ refused: err.code ?? err.message }));
    req.end();
  });
}

/** The connection was cut: no HTTP response at all (not a 4xx from the gateway). */
function assertRefused(outcome: Outcome): void {
  assert.ok('refused' in outcome, `expected the connection to be refused, got ${JSON.stringify(outcome)}`);
}

function systemYaml(crlPath: string): string {
  return [
    'listener: { bind: 127.0.0.1, port: 0 }',
    'timeouts: { shutdown_timeout_seconds: 2 }',
    'tls:',
    `  cert_path: ${server.cert}`,
    `  key_path: ${server.key}`,
    `  client_ca_path: ${ca.cert}`,
    `  crl_path: ${crlPath}`,
    '',
  ].join('\n');
}

test('mTLS with tls.crl_path: a revoked client certificate is refused at the handshake, an unrevoked one is served', async () => {
  const live = join(dir.path, 'live-1.crl');
  copyFileSync(crlFile, live);
  const gw = await startGateway(gatewayYaml, { systemYaml: systemYaml(live) });
  try {
    // The listener drops the connection when verification fails, before reading a request.
    assertRefused(await httpsGet(gw.port, alice, 'TLSv1.2'));
    assertRefused(await httpsGet(gw.port, alice, 'TLSv1.3'));
    assert.deepEqual(await httpsGet(gw.port, bob, 'TLSv1.3'), { status: 200, body: 'cn=bob' });
    assert.deepEqual(await httpsGet(gw.port, bob, 'TLSv1.2'), { status: 200, body: 'cn=bob' });
  } finally {
    await gw.stop();
  }
});

test('mTLS with tls.crl_path: a new CRL file revokes the second client without a restart; a broken one keeps the previous CRLs with a WARN naming tls.crl_path', async () => {
  const live = join(dir.path, 'live-2.crl');
  copyFileSync(crlFile, live);
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => lines.push(s) });
  const gw = await startGateway(gatewayYaml, { systemYaml: systemYaml(live), logger });
  try {
    assert.deepEqual(await httpsGet(gw.port, bob, 'TLSv1.3'), { status: 200, body: 'cn=bob' });

    // A file that is not a CRL: logged, and the CRL in force stays (alice still refused, bob served).
    writeFileSync(live, 'not a CRL\n');
    await waitFor(() => lines.some((l) => l.includes('tls.crl_path reload failed')), {
      what: 'the WARN about the broken CRL file',
    });
    const warn = JSON.parse(lines.find((l) => l.includes('tls.crl_path reload failed')) ?? '{}') as {
      level: number;
      key: string;
    };
    assert.equal(warn.level, 40);
    assert.equal(warn.key, 'tls.crl_path');
    assertRefused(await httpsGet(gw.port, alice, 'TLSv1.2'));
    assert.deepEqual(await httpsGet(gw.port, bob, 'TLSv1.2'), { status: 200, body: 'cn=bob' });

    // Revoke bob too and replace the file (written aside, renamed over).
    db.revoke(bob.cert);
    db.crl(live);
    await waitFor(
      async () => {
        const r = await httpsGet(gw.port, bob, 'TLSv1.2');
        return 'refused' in r;
      },
      { what: 'bob refused after the CRL change', intervalMs: 100 },
    );
    assert.ok(lines.some((l) => l.includes('TLS CRL reloaded')));
    assertRefused(await httpsGet(gw.port, bob, 'TLSv1.3'));
    assertRefused(await httpsGet(gw.port, alice, 'TLSv1.2'));
  } finally {
    await gw.stop();
  }
});

test('stream listener terminating TLS: stream[].tls.crl_path refuses a revoked client before any byte reaches the upstream', async () => {
  let upstreamConnections = 0;
  const origin: Server = createServer((socket) => {
    upstreamConnections++;
    socket.pipe(socket);
  });
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  const live = join(dir.path, 'live-3.crl');
  copyFileSync(crlFile, live);
  const config: StreamListenerConfig = {
    protocol: 'tcp',
    bind: '127.0.0.1',
    port: 0,
    upstream: {
      targets: [{ host: '127.0.0.1', port: (origin.address() as AddressInfo).port, weight: 1 }],
      load_balancing: 'round_robin',
    },
    sni_routes: [],
    tls: {
      cert_path: server.cert,
      key_path: server.key,
      min_version: '1.2',
      client_ca_path: ca.cert,
      client_cert_required: true,
      crl_path: live,
      sni_certs: [],
    },
  };
  const listener = await startTcpStream(config, { logger: silentLogger, connectTimeoutMs: 5000 });
  const exchange = (cert: CertPair) =>
    new Promise<string>((resolve) => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: listener.address.port,
        servername: 'localhost',
        ca: ca.certPem,
        cert: cert.certPem,
        key: cert.keyPem,
        maxVersion: 'TLSv1.2',
      });
      let reply = '';
      socket.on('data', (d: Buffer) => (reply += d.toString()));
      socket.once('secureConnect', () => socket.write('ping'));
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(`refused ${err.code ?? err.message}`));
      socket.on('data', () => {
        if (reply === 'ping') {
          socket.end();
          resolve(reply);
        }
      });
    });
  try {
    assert.equal(await exchange(bob), 'ping');
    assert.equal(upstreamConnections, 1);
    assert.match(await exchange(alice), /^refused /);
    assert.equal(upstreamConnections, 1, 'the revoked client never reached the upstream');
  } finally {
    await listener.close(1000);
    origin.close();
  }
});

test('validate: an unreadable tls.crl_path is reported at its key', () => {
  const system = parseSystemConfig(
    [
      'listener: { bind: 127.0.0.1, port: 0 }',
      'tls:',
      `  cert_path: ${server.cert}`,
      `  key_path: ${server.key}`,
      `  client_ca_path: ${ca.cert}`,
      `  crl_path: ${join(dir.path, 'missing.crl')}`,
      '',
    ].join('\n'),
  );
  assert.deepEqual(tlsFileIssues(system), [
    { path: 'tls.crl_path', message: `cannot read '${join(dir.path, 'missing.crl')}': no such file` },
  ]);
});

test('start: a crl_path that is not a CRL stops the listener with a line naming tls.crl_path', async () => {
  const bad = join(dir.path, 'bad.crl');
  writeFileSync(bad, 'not a CRL\n');
  const yaml = systemYaml(bad);
  const err = await startGateway(gatewayYaml, { systemYaml: yaml }).then(
    async (gw) => {
      await gw.stop();
      return undefined;
    },
    (e: unknown) => e,
  );
  assert.ok(err !== undefined, 'the gateway must not start');
  assert.equal(
    describeStartupError(err, 'listener', parseSystemConfig(yaml)),
    `tls.crl_path: cannot read '${bad}': not a PEM CRL file`,
  );
});
