import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { StreamListenerConfig, StreamUpstreamConfig } from '../../src/config/system.js';
import { silentLogger } from '../../src/core/logger.js';
import { startTcpStream } from '../../src/stream/tcp.js';
import type { StreamListener } from '../../src/stream/listener.js';
import { freePort } from '../support/free-port.js';
import { waitFor } from '../support/wait.js';

/** A TCP origin that answers every connection with `<name>:` and then echoes what it reads until the client ends. */
async function echoOrigin(name: string): Promise<{ port: number; server: Server; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.write(`${name}:`);
    socket.pipe(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, server, sockets };
}

function pool(...ports: number[]): StreamUpstreamConfig {
  return {
    targets: ports.map((port) => ({ host: '127.0.0.1', port, weight: 1 })),
    load_balancing: 'round_robin',
  };
}

function listenerConfig(upstream: StreamUpstreamConfig): StreamListenerConfig {
  return { protocol: 'tcp', bind: '127.0.0.1', port: 0, upstream, sni_routes: [] };
}

/** Connects, sends `text`, half-closes, and returns everything received until the proxy closes. */
async function exchange(listener: StreamListener, text: string): Promise<string> {
  const socket = connect({ host: '127.0.0.1', port: listener.address.port, allowHalfOpen: true });
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString()));
  // A proxy that gives up resets the connection: that shows as an empty reply.
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  socket.end(text);
  await new Promise((resolve) => socket.once('close', resolve));
  return received;
}

test('stream tcp: bytes are relayed both ways, the half-close reaches the origin, targets rotate', async () => {
  const a = await echoOrigin('a');
  const b = await echoOrigin('b');
  const listener = await startTcpStream(listenerConfig(pool(a.port, b.port)), {
    logger: silentLogger,
    connectTimeoutMs: 2000,
  });
  try {
    const replies = [];
    for (let i = 0; i < 4; i++) replies.push(await exchange(listener, `hello ${i}`));
    assert.deepEqual(replies, ['a:hello 0', 'b:hello 1', 'a:hello 2', 'b:hello 3']);
    await waitFor(() => listener.open() === 0, { what: 'connections to close' });
  } finally {
    await listener.close(0);
    a.server.close();
    b.server.close();
  }
});

test('stream tcp: a target that refuses the connection is skipped for the next one', async () => {
  const dead = await freePort();
  const b = await echoOrigin('b');
  const listener = await startTcpStream(listenerConfig(pool(dead, b.port)), {
    logger: silentLogger,
    connectTimeoutMs: 2000,
  });
  try {
    assert.equal(await exchange(listener, 'x'), 'b:x');
    assert.equal(await exchange(listener, 'y'), 'b:y');
  } finally {
    await listener.close(0);
    b.server.close();
  }
});

test('stream tcp: when no target accepts, the client connection is closed without data', async () => {
  const listener = await startTcpStream(listenerConfig(pool(await freePort(), await freePort())), {
    logger: silentLogger,
    connectTimeoutMs: 2000,
  });
  try {
    assert.equal(await exchange(listener, 'anyone?'), '');
  } finally {
    await listener.close(0);
  }
});

test('stream tcp: least_connections sends a new client to the target with fewer open connections', async () => {
  const a = await echoOrigin('a');
  const b = await echoOrigin('b');
  const listener = await startTcpStream(
    listenerConfig({ ...pool(a.port, b.port), load_balancing: 'least_connections' }),
    { logger: silentLogger, connectTimeoutMs: 2000 },
  );
  const held = connect({ host: '127.0.0.1', port: listener.address.port });
  try {
    let first = '';
    held.on('data', (d: Buffer) => (first += d.toString()));
    await waitFor(() => first.length > 0, { what: 'the held connection to reach an origin' });
    const other = first.startsWith('a') ? 'b' : 'a';
    for (let i = 0; i < 3; i++) assert.equal(await exchange(listener, 'n'), `${other}:n`);
  } finally {
    held.destroy();
    await listener.close(0);
    a.server.close();
    b.server.close();
  }
});

test('stream tcp: close stops accepting, lets open connections finish within the grace time, then cuts them', async () => {
  const a = await echoOrigin('a');
  const listener = await startTcpStream(listenerConfig(pool(a.port)), {
    logger: silentLogger,
    connectTimeoutMs: 2000,
  });
  const port = listener.address.port;
  const open = connect({ host: '127.0.0.1', port });
  let received = '';
  open.on('data', (d: Buffer) => (received += d.toString()));
  await waitFor(() => received === 'a:', { what: 'the connection to be relayed' });
  const closed = listener.close(60_000);
  const refused = connect({ host: '127.0.0.1', port });
  const [err] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
  assert.equal(err.code, 'ECONNREFUSED');
  open.write('still here');
  await waitFor(() => received === 'a:still here', { what: 'the open connection to keep working' });
  open.end();
  await closed;
  assert.equal(listener.open(), 0);
  a.server.close();
});

test('stream tcp: a bind failure rejects with the listener named', async () => {
  const a = await echoOrigin('a');
  try {
    await assert.rejects(
      startTcpStream(
        { ...listenerConfig(pool(a.port)), port: a.port },
        { logger: silentLogger, connectTimeoutMs: 2000 },
      ),
      new RegExp(`stream tcp 127\\.0\\.0\\.1:${a.port}: cannot listen: .*EADDRINUSE`),
    );
  } finally {
    a.server.close();
  }
});
