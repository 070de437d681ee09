/** `workers`: SIGHUP applies system.yaml `stream:` changes in every worker (docs/stream.md#reload). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { dirname, join } from 'node:path';
import { freePort } from '../support/free-port.js';
import { waitFor } from '../support/wait.js';
import { mockPolicy, startClusterGateway } from './harness.js';

async function origin(name: string): Promise<{ port: number; server: Server }> {
  const server = createServer((socket) => {
    socket.write(`${name}:`);
    socket.pipe(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, server };
}

async function greeting(port: number): Promise<string | undefined> {
  const socket = connect({ host: '127.0.0.1', port });
  try {
    return await new Promise<string | undefined>((resolve) => {
      socket.once('data', (d: Buffer) => resolve(d.toString()));
      socket.once('error', () => resolve(undefined));
      socket.once('close', () => resolve(undefined));
    });
  } finally {
    socket.destroy();
  }
}

test('workers: SIGHUP moves every worker stream listener to the new pool; an open tunnel carries on', async () => {
  const a = await origin('a');
  const b = await origin('b');
  const port = await freePort();
  const listener = (target: number) =>
    `stream:\n  - bind: 127.0.0.1\n    port: ${port}\n    upstream: { targets: [{ host: 127.0.0.1, port: ${target} }] }`;
  const gw = await startClusterGateway(
    `routes:\n  - { name: hello, match: { path: /hello }, policy: hello }\npolicies:${mockPolicy('hello', 'hi')}\n`,
    {
      system: [listener(a.port)],
    },
  );
  try {
    await waitFor(async () => (await greeting(port)) === 'a:', {
      timeoutMs: 30_000,
      what: 'the stream listener',
    });
    const open = connect({ host: '127.0.0.1', port });
    assert.equal(String((await once(open, 'data'))[0]), 'a:');

    const systemPath = join(dirname(gw.gatewayPath), 'system.yaml');
    writeFileSync(
      systemPath,
      readFileSync(systemPath, 'utf8').replace(`port: ${a.port} }`, `port: ${b.port} }`),
    );
    gw.process.child.kill('SIGHUP');
    // Connections are spread over the workers: every one of several new connections must reach b.
    await waitFor(
      async () => {
        const seen = await Promise.all(Array.from({ length: 6 }, () => greeting(port)));
        return seen.every((g) => g === 'b:');
      },
      { timeoutMs: 30_000, what: 'every worker to use the new pool' },
    );
    open.write('still here');
    assert.equal(String((await once(open, 'data'))[0]), 'still here');
    open.destroy();
  } finally {
    await gw.stop();
    a.server.close();
    b.server.close();
  }
});
