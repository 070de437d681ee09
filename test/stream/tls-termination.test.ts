import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect as connectTcp, createServer, type AddressInfo, type Server } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { parseSystemConfig, type StreamListenerConfig } from '../../src/config/system.js';
import { silentLogger } from '../../src/core/logger.js';
import type { StreamListener } from '../../src/stream/listener.js';
import { startTcpStream } from '../../src/stream/tcp.js';
import { createAuthority, type Authority } from '../support/certs.js';
import { tempDir } from '../support/temp-dir.js';

/** A plain TCP origin that records what it read and echoes it after `<name>:`. */
async function plainOrigin(name: string): Promise<{ port: number; server: Server; seen: () => string }> {
  let seen = '';
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.write(`${name}:`);
    socket.on('data', (d: Buffer) => (seen += d.toString('latin1')));
    socket.pipe(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, server, seen: () => seen };
}

const pool = (port: number) => ({
  targets: [{ host: '127.0.0.1', port, weight: 1 }],
  load_balancing: 'round_robin' as const,
});

/** A TLS round trip: the reply, and the CN of the certificate the listener presented. */
async function tlsExchange(
  port: number,
  ca: Authority,
  servername: string,
  text: string,
): Promise<{ reply: string; subject: string }> {
  const socket = connectTls({ host: '127.0.0.1', port, servername, ca: ca.certPem });
  await once(socket, 'secureConnect');
  const subject = String(socket.getPeerCertificate().subject.CN);
  let reply = '';
  socket.on('data', (d: Buffer) => (reply += d.toString()));
  socket.end(text);
  await once(socket, 'close');
  return { reply, subject };
}

function setup() {
  const dir = tempDir();
  const ca = createAuthority(dir.path);
  const main = ca.issue('db', { dns: ['db.example.test'] });
  const other = ca.issue('reports', { dns: ['reports.example.test'] });
  return { dir, ca, main, other };
}

test('stream tls: the listener terminates TLS and the upstream reads plain bytes; the SNI name picks the certificate and the pool', async () => {
  const { dir, ca, main, other } = setup();
  const a = await plainOrigin('a');
  const b = await plainOrigin('b');
  const config: StreamListenerConfig = {
    protocol: 'tcp',
    bind: '127.0.0.1',
    port: 0,
    upstream: pool(a.port),
    sni_routes: [{ server_name: 'reports.example.test', upstream: pool(b.port) }],
    tls: {
      cert_path: main.cert,
      key_path: main.key,
      min_version: '1.2',
      client_cert_required: true,
      sni_certs: [{ server_name: 'reports.example.test', cert_path: other.cert, key_path: other.key }],
    },
  };
  const listener = await startTcpStream(config, { logger: silentLogger, connectTimeoutMs: 5000 });
  try {
    const first = await tlsExchange(listener.address.port, ca, 'db.example.test', 'SELECT 1;');
    assert.deepEqual(first, { reply: 'a:SELECT 1;', subject: 'db' });
    assert.equal(a.seen(), 'SELECT 1;', 'the origin reads the plain bytes, not TLS records');
    const second = await tlsExchange(listener.address.port, ca, 'reports.example.test', 'report');
    assert.deepEqual(second, { reply: 'b:report', subject: 'reports' });
  } finally {
    await listener.close(0);
    a.server.close();
    b.server.close();
    dir.remove();
  }
});

test('stream tls: a client that does not speak TLS is dropped and counted; the listener keeps serving', async () => {
  const { dir, ca, main } = setup();
  const a = await plainOrigin('a');
  const listener: StreamListener = await startTcpStream(
    {
      protocol: 'tcp',
      bind: '127.0.0.1',
      port: 0,
      upstream: pool(a.port),
      sni_routes: [],
      tls: {
        cert_path: main.cert,
        key_path: main.key,
        min_version: '1.2',
        client_cert_required: true,
        sni_certs: [],
      },
    },
    { logger: silentLogger, connectTimeoutMs: 5000 },
  );
  try {
    const plain = connectTcp({ host: '127.0.0.1', port: listener.address.port });
    plain.on('error', () => undefined);
    plain.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await once(plain, 'close');
    assert.equal(a.seen(), '', 'nothing reached the origin');
    assert.equal(listener.counts.failures, 1);
    const { reply } = await tlsExchange(listener.address.port, ca, 'db.example.test', 'after');
    assert.equal(reply, 'a:after');
  } finally {
    await listener.close(0);
    a.server.close();
    dir.remove();
  }
});

function rejection(yaml: string): string[] {
  try {
    parseSystemConfig(yaml);
  } catch (err) {
    if (err instanceof ConfigRejected) return err.issues.map((i) => `${i.path}: ${i.message}`);
    throw err;
  }
  return [];
}

test('stream tls: config errors name the key — TLS on UDP, ACME on a stream listener, a certificate without its key', () => {
  const base = `stream:\n  - port: 9000\n    upstream: { targets: [{ host: 127.0.0.1, port: 9001 }] }\n`;
  assert.ok(
    rejection(`${base}    protocol: udp\n    tls: { cert_path: a.crt, key_path: a.key }\n`).some((l) =>
      l.startsWith('stream[0].tls: TLS termination is TCP only'),
    ),
  );
  assert.ok(
    rejection(`${base}    tls: { acme: { domains: [db.example.test] } }\n`).some((l) =>
      l.includes('stream[0].tls: acme is not supported here'),
    ),
  );
  assert.ok(
    rejection(`${base}    tls: { cert_path: a.crt }\n`).some((l) =>
      l.includes('cert_path and key_path must be set together'),
    ),
  );
  assert.deepEqual(rejection(`${base}    tls: { cert_path: a.crt, key_path: a.key }\n`), []);
});
