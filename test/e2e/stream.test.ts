import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { BASE_YAML } from '../admin/harness.js';
import { spawnGateway } from '../support/gateway-process.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

function files(system: string) {
  const dir = tempDir();
  const sys = join(dir.path, 'system.yaml');
  const gw = join(dir.path, 'gateway.yaml');
  writeFileSync(sys, system);
  writeFileSync(gw, BASE_YAML);
  return { dir, args: ['--system-config', sys, '--gateway-config', gw] };
}

async function echoOrigin(): Promise<{ port: number; close: () => void }> {
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.write('origin:');
    socket.pipe(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, close: () => server.close() };
}

/** One round trip through a TCP port; undefined when nothing listens there yet. */
async function roundTrip(port: number, text: string): Promise<string | undefined> {
  const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString()));
  const ok = await new Promise<boolean>((resolve) => {
    socket.once('connect', () => resolve(true));
    socket.once('error', () => resolve(false));
  });
  if (!ok) return undefined;
  socket.end(text);
  await new Promise((resolve) => socket.once('close', resolve));
  return received;
}

test('stream e2e: the gateway binds stream listeners from system.yaml, relays TCP and counts it in /metrics', async () => {
  const origin = await echoOrigin();
  const streamPort = await freePort();
  const adminPort = await freePort();
  const f = files(
    `listener: { bind: 127.0.0.1, port: 0 }
logging: { level: info }
admin: { bind: 127.0.0.1, port: ${adminPort}, username: ops, password: stream-metrics-pw }
stream:
  - bind: 127.0.0.1
    port: ${streamPort}
    upstream: { targets: [{ host: 127.0.0.1, port: ${await freePort()} }, { host: 127.0.0.1, port: ${origin.port} }] }
`,
  );
  const p = spawnGateway(f.args);
  try {
    await waitFor(async () => (await roundTrip(streamPort, 'ping')) === 'origin:ping', {
      timeoutMs: 15000,
      what: 'the stream listener to relay',
    });
    assert.equal(await roundTrip(streamPort, 'again'), 'origin:again');
    assert.match(p.output(), new RegExp(`stream tcp 127\\.0\\.0\\.1:${streamPort} listening`));
    const metrics = await (
      await fetch(`http://127.0.0.1:${adminPort}/metrics`, {
        headers: { authorization: `Basic ${Buffer.from('ops:stream-metrics-pw').toString('base64')}` },
      })
    ).text();
    const value = (name: string) =>
      Number(
        new RegExp(`^${name}\\{listener="tcp 127\\.0\\.0\\.1:${streamPort}"\\} (\\d+)`, 'm').exec(
          metrics,
        )?.[1],
      );
    assert.ok(value('gateway_stream_connections_total') >= 2, metrics);
    // Round robin tried the dead target first for one of the connections.
    assert.ok(value('gateway_stream_upstream_failures_total') >= 1, metrics);
    assert.equal(value('gateway_stream_open'), 0);
    assert.equal(await p.stop('SIGTERM'), 0);
  } finally {
    await p.stop('SIGKILL');
    origin.close();
    f.dir.remove();
  }
});

test('stream e2e: a stream port that cannot be bound stops the gateway with exit 1, naming the listener', async () => {
  const busy = createServer();
  busy.listen(0, '127.0.0.1');
  await once(busy, 'listening');
  const port = (busy.address() as AddressInfo).port;
  const f = files(
    `listener: { bind: 127.0.0.1, port: 0 }
stream:
  - { bind: 127.0.0.1, port: ${port}, upstream: { targets: [{ host: 127.0.0.1, port: 1 }] } }
`,
  );
  try {
    const p = spawnGateway(f.args);
    assert.equal(await p.exited, 1);
    assert.match(p.output(), new RegExp(`stream tcp 127\\.0\\.0\\.1:${port}: cannot listen`));
  } finally {
    busy.close();
    f.dir.remove();
  }
});

test('stream e2e: the shipped stream examples pass switchyard validate', async () => {
  const root = new URL('../../examples/', import.meta.url).pathname;
  for (const system of ['stream/config/system.yaml', 'system-stream.yaml']) {
    const p = spawnGateway([
      'validate',
      '--system-config',
      join(root, system),
      '--gateway-config',
      join(root, 'stream/config/gateway.yaml'),
    ]);
    assert.equal(await p.exited, 0, `${system}: ${p.output()}`);
  }
});
