import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { BASE_YAML } from '../admin/harness.js';
import { spawnGateway } from '../support/gateway-process.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

/** An origin that greets with `<name>:` and echoes. */
async function origin(name: string): Promise<{ port: number; server: Server }> {
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.write(`${name}:`);
    socket.pipe(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, server };
}

/** The greeting of a new connection to `port`, or undefined when nothing accepts there. */
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

/** A tunnel kept open across reloads: `say` sends text and resolves with its echo. */
async function tunnel(
  port: number,
): Promise<{ socket: Socket; greeting: string; say(text: string): Promise<string> }> {
  const socket = connect({ host: '127.0.0.1', port });
  const [first] = (await once(socket, 'data')) as [Buffer];
  return {
    socket,
    greeting: first.toString(),
    async say(text) {
      socket.write(text);
      const [echo] = (await once(socket, 'data')) as [Buffer];
      return echo.toString();
    },
  };
}

test('stream reload: SIGHUP applies system.yaml stream changes — pools switch for new connections, open tunnels carry on, added listeners start, removed ones stop accepting', async () => {
  const a = await origin('a');
  const b = await origin('b');
  const p1 = await freePort();
  const p2 = await freePort();
  const dir = tempDir();
  const sys = join(dir.path, 'system.yaml');
  const gw = join(dir.path, 'gateway.yaml');
  const head = `listener: { bind: 127.0.0.1, port: 0 }\nlogging: { level: info }\n`;
  const listener = (port: number, target: number) =>
    `  - bind: 127.0.0.1\n    port: ${port}\n    upstream: { targets: [{ host: 127.0.0.1, port: ${target} }] }\n`;
  writeFileSync(sys, `${head}stream:\n${listener(p1, a.port)}`);
  writeFileSync(gw, BASE_YAML);
  const gateway = spawnGateway(['--system-config', sys, '--gateway-config', gw]);
  try {
    await waitFor(async () => (await greeting(p1)) === 'a:', {
      timeoutMs: 60_000,
      what: 'the stream listener',
    }).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n${gateway.output()}`, { cause: err });
    });
    const open = await tunnel(p1);
    assert.equal(open.greeting, 'a:');

    // p1 now goes to b, and p2 appears.
    writeFileSync(sys, `${head}stream:\n${listener(p1, b.port)}${listener(p2, a.port)}`);
    gateway.child.kill('SIGHUP');
    await waitFor(async () => (await greeting(p1)) === 'b:', {
      timeoutMs: 20_000,
      what: 'p1 to use the new pool',
    });
    assert.equal(await greeting(p2), 'a:');
    assert.equal(
      await open.say('still here'),
      'still here',
      'the tunnel opened before the reload carries on',
    );

    // An invalid file changes nothing.
    writeFileSync(sys, `${head}stream:\n  - bind: 127.0.0.1\n    upstream: { targets: [] }\n`);
    gateway.child.kill('SIGHUP');
    await waitFor(() => gateway.output().includes('system.yaml not reloaded'), {
      timeoutMs: 20_000,
      what: 'the rejection to be logged',
    });
    assert.match(gateway.output(), /stream\[0\]\.port/, 'the log names the offending key');
    assert.equal(await greeting(p1), 'b:');

    // p1 removed (and a change outside stream: named as needing a restart): it stops accepting,
    // the open tunnel drains on.
    writeFileSync(sys, `${head.replace('level: info', 'level: debug')}stream:\n${listener(p2, a.port)}`);
    gateway.child.kill('SIGHUP');
    await waitFor(async () => (await greeting(p1)) === undefined, {
      timeoutMs: 20_000,
      what: 'p1 to stop accepting',
    });
    assert.equal(await greeting(p2), 'a:');
    assert.equal(await open.say('draining'), 'draining');
    await waitFor(() => /"sections":\["logging"\]/.test(gateway.output()), {
      timeoutMs: 20_000,
      what: 'the WARN naming the section that needs a restart',
    });
    open.socket.destroy();
  } finally {
    await gateway.stop();
    a.server.close();
    b.server.close();
    dir.remove();
  }
});
