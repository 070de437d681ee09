import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createSocket, type Socket } from 'node:dgram';
import type { StreamListenerConfig } from '../../src/config/system.js';
import { silentLogger } from '../../src/core/logger.js';
import { startUdpStream } from '../../src/stream/udp.js';
import { capturingLogger } from '../support/plugin-env.js';
import { waitFor } from '../support/wait.js';

/** A UDP origin that answers each datagram with `<name>:<datagram>` and counts distinct client ports. */
async function udpOrigin(name: string): Promise<{ port: number; socket: Socket; peers: Set<number> }> {
  const socket = createSocket('udp4');
  const peers = new Set<number>();
  socket.on('message', (msg, rinfo) => {
    peers.add(rinfo.port);
    socket.send(Buffer.concat([Buffer.from(`${name}:`), msg]), rinfo.port, rinfo.address);
  });
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  return { port: socket.address().port, socket, peers };
}

function config(ports: number[], extra: Partial<StreamListenerConfig> = {}): StreamListenerConfig {
  return {
    protocol: 'udp',
    bind: '127.0.0.1',
    port: 0,
    upstream: {
      targets: ports.map((port) => ({ host: '127.0.0.1', port, weight: 1 })),
      load_balancing: 'round_robin',
    },
    sni_routes: [],
    ...extra,
  };
}

/** A client socket that records replies with the address they came from. */
async function client(): Promise<{ socket: Socket; replies: { text: string; port: number }[] }> {
  const socket = createSocket('udp4');
  const replies: { text: string; port: number }[] = [];
  socket.on('message', (msg, rinfo) => replies.push({ text: msg.toString(), port: rinfo.port }));
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  return { socket, replies };
}

test('stream udp: datagrams go through both ways, replies come from the listener, a client sticks to its target', async () => {
  const a = await udpOrigin('a');
  const b = await udpOrigin('b');
  const listener = await startUdpStream(config([a.port, b.port]), {
    logger: silentLogger,
    idleTimeoutMs: 60_000,
  });
  const one = await client();
  const two = await client();
  try {
    for (const text of ['1', '2', '3']) one.socket.send(text, listener.address.port, '127.0.0.1');
    await waitFor(() => one.replies.length === 3, { what: 'three replies to client one' });
    two.socket.send('x', listener.address.port, '127.0.0.1');
    await waitFor(() => two.replies.length === 1, { what: 'a reply to client two' });
    const oneTarget = one.replies[0]?.text[0];
    assert.deepEqual(
      one.replies.map((r) => r.text),
      ['1', '2', '3'].map((t) => `${oneTarget}:${t}`),
    );
    assert.ok(one.replies.every((r) => r.port === listener.address.port));
    assert.notEqual(
      two.replies[0]?.text[0],
      oneTarget,
      'round robin should send the second client elsewhere',
    );
    assert.equal(listener.open(), 2);
  } finally {
    one.socket.close();
    two.socket.close();
    await listener.close(0);
    a.socket.close();
    b.socket.close();
  }
});

test('stream udp: an idle session expires and the next datagram opens a new one', async () => {
  const a = await udpOrigin('a');
  const listener = await startUdpStream(config([a.port]), { logger: silentLogger, idleTimeoutMs: 100 });
  const one = await client();
  try {
    one.socket.send('first', listener.address.port, '127.0.0.1');
    await waitFor(() => one.replies.length === 1, { what: 'the first reply' });
    assert.equal(listener.open(), 1);
    await waitFor(() => listener.open() === 0, { what: 'the idle session to expire' });
    one.socket.send('second', listener.address.port, '127.0.0.1');
    await waitFor(() => one.replies.length === 2, { what: 'the second reply' });
    assert.equal(one.replies[1]?.text, 'a:second');
    assert.equal(a.peers.size, 2, 'the origin should see a new session socket after expiry');
  } finally {
    one.socket.close();
    await listener.close(0);
    a.socket.close();
  }
});

test('stream udp: sni_routes are ignored with a warning', async () => {
  const a = await udpOrigin('a');
  const { logger, records } = capturingLogger();
  const upstream = {
    targets: [{ host: '127.0.0.1', port: a.port, weight: 1 }],
    load_balancing: 'round_robin' as const,
  };
  const listener = await startUdpStream(
    config([a.port], { sni_routes: [{ server_name: 'x.test', upstream }] }),
    {
      logger,
      idleTimeoutMs: 60_000,
    },
  );
  try {
    await waitFor(() => records.some((r) => /sni_routes apply to TCP only/.test(String(r['msg']))), {
      what: 'the warning',
    });
  } finally {
    await listener.close(0);
    a.socket.close();
  }
});

test('stream udp: a session whose target is unreachable ends, and the next datagram opens one elsewhere', async () => {
  const dead = createSocket('udp4');
  dead.bind(0, '127.0.0.1');
  await once(dead, 'listening');
  const deadPort = dead.address().port;
  dead.close();
  const a = await udpOrigin('a');
  const { logger, records } = capturingLogger();
  const listener = await startUdpStream(config([deadPort, a.port]), { logger, idleTimeoutMs: 60_000 });
  const one = await client();
  try {
    one.socket.send('lost', listener.address.port, '127.0.0.1');
    await waitFor(() => records.some((r) => r['msg'] === 'stream udp session failed'), {
      what: 'the unreachable target to end the session',
    });
    await waitFor(() => listener.open() === 0, { what: 'the failed session to close' });
    one.socket.send('found', listener.address.port, '127.0.0.1');
    await waitFor(() => one.replies.length === 1, { what: 'a reply from the live target' });
    assert.equal(one.replies[0]?.text, 'a:found');
  } finally {
    one.socket.close();
    await listener.close(0);
    a.socket.close();
  }
});
