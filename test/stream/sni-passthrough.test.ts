import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect as connectTcp, createServer as createTcpServer, type AddressInfo } from 'node:net';
import { connect as connectTls, createServer as createTlsServer, type Server } from 'node:tls';
import type { StreamUpstreamConfig } from '../../src/config/system.js';
import { silentLogger } from '../../src/core/logger.js';
import { startTcpStream } from '../../src/stream/tcp.js';
import type { StreamListener } from '../../src/stream/listener.js';
import { createAuthority, type Authority } from '../support/certs.js';
import { tempDir } from '../support/temp-dir.js';

const dir = tempDir();
after(() => dir.remove());
const ca: Authority = createAuthority(dir.path);

/** A TLS origin holding a certificate for `names`; it answers `<label>` to every connection and closes. */
async function tlsOrigin(label: string, names: string[]): Promise<{ port: number; server: Server }> {
  const leaf = ca.issue(label, { dns: names });
  const server = createTlsServer({ cert: leaf.certPem, key: leaf.keyPem }, (socket) => socket.end(label));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, server };
}

function pool(port: number): StreamUpstreamConfig {
  return { targets: [{ host: '127.0.0.1', port, weight: 1 }], load_balancing: 'round_robin' };
}

/** A TLS client through the listener, verifying the origin certificate against the test CA. */
async function tlsThrough(listener: StreamListener, servername: string): Promise<string> {
  const socket = connectTls({ host: '127.0.0.1', port: listener.address.port, servername, ca: ca.certPem });
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString()));
  await new Promise<void>((resolve, reject) => {
    socket.once('end', resolve);
    socket.once('error', reject);
  });
  socket.destroy();
  return received;
}

test('stream tcp SNI: TLS passes through to the pool its server name routes to, exact before wildcard', async () => {
  const api = await tlsOrigin('api', ['api.example.com']);
  const wild = await tlsOrigin('wild', ['*.example.com']);
  const fallback = await tlsOrigin('default', ['other.test']);
  const listener = await startTcpStream(
    {
      protocol: 'tcp',
      bind: '127.0.0.1',
      port: 0,
      upstream: pool(fallback.port),
      sni_routes: [
        { server_name: '*.example.com', upstream: pool(wild.port) },
        { server_name: 'API.example.com', upstream: pool(api.port) },
      ],
    },
    { logger: silentLogger, connectTimeoutMs: 2000 },
  );
  try {
    assert.equal(await tlsThrough(listener, 'api.example.com'), 'api');
    assert.equal(await tlsThrough(listener, 'shop.example.com'), 'wild');
    assert.equal(await tlsThrough(listener, 'other.test'), 'default');
  } finally {
    await listener.close(0);
    for (const o of [api, wild, fallback]) o.server.close();
  }
});

test('stream tcp SNI: bytes that are not a ClientHello go to the listener upstream, replayed intact', async () => {
  const echo = createTcpServer({ allowHalfOpen: true }, (socket) => {
    socket.write('echo:');
    socket.pipe(socket);
  });
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
  const listener = await startTcpStream(
    {
      protocol: 'tcp',
      bind: '127.0.0.1',
      port: 0,
      upstream: pool((echo.address() as AddressInfo).port),
      sni_routes: [{ server_name: 'api.example.com', upstream: pool(1) }],
    },
    { logger: silentLogger, connectTimeoutMs: 2000 },
  );
  try {
    const plain = connectTcp({ host: '127.0.0.1', port: listener.address.port, allowHalfOpen: true });
    let received = '';
    plain.on('data', (d: Buffer) => (received += d.toString()));
    plain.end('GET / HTTP/1.1\r\n\r\n');
    await new Promise((resolve) => plain.once('close', resolve));
    assert.equal(received, 'echo:GET / HTTP/1.1\r\n\r\n');
  } finally {
    await listener.close(0);
    echo.close();
  }
});
