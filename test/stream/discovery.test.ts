/**
 * Service discovery for L4 stream pools (docs/stream.md#service-discovery): a TCP stream
 * listener whose pool comes from DNS follows an A-record change of a real dnsmasq, while a
 * tunnel opened before the change stays up; a UDP pool does the same for new sessions; system.yaml
 * takes `discovery:` in place of targets, in the gateway process across a SIGHUP reload too.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { parseSystemConfig } from '../../src/config/system.js';
import type { StreamListenerConfig } from '../../src/config/system.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { silentLogger } from '../../src/core/logger.js';
import { startTcpStream } from '../../src/stream/tcp.js';
import { startUdpStream } from '../../src/stream/udp.js';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import type { StreamListener } from '../../src/stream/listener.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BASE_YAML } from '../admin/harness.js';
import { dnsmasqSkip, startDnsmasq, type Dnsmasq } from '../support/dnsmasq.js';
import { spawnGateway } from '../support/gateway-process.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const skip = dnsmasqSkip();

interface Origin {
  server: Server;
  sockets: Set<Socket>;
  port: number;
}

/** A TCP origin on `ip` that greets each connection with `<name>:` and echoes. */
async function echoOrigin(name: string, ip: string, port = 0): Promise<Origin> {
  const sockets = new Set<Socket>();
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.write(`${name}:`);
    socket.pipe(socket);
  });
  server.listen(port, ip);
  await once(server, 'listening');
  return { server, sockets, port: (server.address() as AddressInfo).port };
}

async function closeOrigin(origin: Origin | undefined): Promise<void> {
  if (origin === undefined) return;
  for (const s of origin.sockets) s.destroy();
  await new Promise<void>((resolve) => origin.server.close(() => resolve()));
}

/** Connects, sends `text`, half-closes, and returns what came back until the proxy closed. */
async function exchange(listener: StreamListener, text: string): Promise<string> {
  const socket = connect({ host: '127.0.0.1', port: listener.address.port, allowHalfOpen: true });
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString()));
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  socket.end(text);
  await new Promise((resolve) => socket.once('close', resolve));
  return received;
}

let dns: Dnsmasq;
let blue: Origin;
let green: Origin;

before(async () => {
  if (skip !== false) return;
  for (let attempt = 0; ; attempt++) {
    blue = await echoOrigin('blue', '127.0.0.2');
    try {
      green = await echoOrigin('green', '127.0.0.3', blue.port);
      break;
    } catch (err) {
      await closeOrigin(blue);
      if (attempt >= 5) throw err;
    }
  }
  dns = await startDnsmasq({ hosts: { 'db.test': ['127.0.0.2'] }, srv: [] });
});

after(async () => {
  await dns?.stop();
  await closeOrigin(blue);
  await closeOrigin(green);
});

test(
  'stream discovery: a TCP stream pool follows an A-record change; an open tunnel stays up',
  { skip },
  async () => {
    const config: StreamListenerConfig = {
      protocol: 'tcp',
      bind: '127.0.0.1',
      port: 0,
      upstream: {
        targets: [],
        discovery: { type: 'dns', host: 'db.test', port: blue.port, resolvers: [dns.server] },
        load_balancing: 'round_robin',
      },
      sni_routes: [],
    };
    const listener = await startTcpStream(config, { logger: silentLogger, connectTimeoutMs: 2000 });
    try {
      await waitFor(async () => (await exchange(listener, 'x')) === 'blue:x', {
        timeoutMs: 15000,
        what: 'the first DNS answer (blue)',
      });
      // A tunnel opened now, before the record moves.
      const held = connect({ host: '127.0.0.1', port: listener.address.port, allowHalfOpen: true });
      let heldText = '';
      held.on('data', (d: Buffer) => (heldText += d.toString()));
      await waitFor(() => heldText === 'blue:', { timeoutMs: 5000, what: 'the held tunnel to blue' });

      await dns.set({ hosts: { 'db.test': ['127.0.0.3'] }, srv: [] });
      await waitFor(async () => (await exchange(listener, 'y')) === 'green:y', {
        timeoutMs: 15000,
        what: 'new connections to follow the record to green',
      });
      for (let i = 0; i < 5; i++) assert.equal(await exchange(listener, `z${i}`), `green:z${i}`);

      // A reload with a broken block keeps the running pool (logged), rather than dropping the listener.
      const broken = { ...config.upstream, discovery: { type: 'dns', host: 'db.test' } };
      assert.equal(listener.update({ ...config, upstream: broken }), true);
      assert.equal(await exchange(listener, 'w'), 'green:w');

      held.write('still');
      await waitFor(() => heldText === 'blue:still', { timeoutMs: 5000, what: 'the old tunnel to carry on' });
      held.destroy();
    } finally {
      await listener.close(0);
    }
  },
);

test('stream discovery: system.yaml takes discovery in place of targets, one of the two', () => {
  const parsed = parseSystemConfig(
    [
      'stream:',
      '  - protocol: tcp',
      '    port: 5432',
      '    upstream: { discovery: { type: dns, host: db.internal, port: 5432 } }',
      '',
    ].join('\n'),
  );
  assert.deepEqual(parsed.stream[0]!.upstream.targets, []);
  assert.equal(parsed.stream[0]!.upstream.discovery?.type, 'dns');
  const rejected = (text: string): string => {
    try {
      parseSystemConfig(text);
    } catch (err) {
      if (err instanceof ConfigRejected) return err.issues.map((i) => i.path).join(' ');
      throw err;
    }
    return 'accepted';
  };
  assert.match(
    rejected(
      'stream:\n  - { protocol: tcp, port: 5432, upstream: { targets: [{ host: 10.0.0.1, port: 5432 }], discovery: { type: dns, host: db.internal, port: 5432 } } }\n',
    ),
    /stream\[0\]\.upstream\.targets/,
  );
  assert.match(
    rejected('stream:\n  - { protocol: tcp, port: 5432, upstream: {} }\n'),
    /stream\[0\]\.upstream/,
  );
  assert.match(
    rejected('stream:\n  - { protocol: tcp, port: 5432, upstream: { discovery: { type: zookeeper } } }\n'),
    /stream\[0\]\.upstream\.discovery/,
  );
});

test('stream discovery: a bad discovery block fails the listener at its key', async () => {
  await assert.rejects(
    startTcpStream(
      {
        protocol: 'tcp',
        bind: '127.0.0.1',
        port: 0,
        upstream: { targets: [], discovery: { type: 'dns', host: 'db.test' }, load_balancing: 'round_robin' },
        sni_routes: [],
      },
      { logger: silentLogger, connectTimeoutMs: 2000 },
    ),
    (err: Error & { path?: string }) => err.path === 'discovery.port',
  );
});

/** The greeting of a new connection to `port`, or undefined when nothing answers there. */
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

test(
  'stream discovery: the gateway process follows the record from system.yaml, also across a SIGHUP reload',
  { skip },
  async () => {
    await dns.set({ hosts: { 'db.test': ['127.0.0.2'] }, srv: [] });
    const port = await freePort();
    const dir = tempDir();
    const sys = join(dir.path, 'system.yaml');
    const gw = join(dir.path, 'gateway.yaml');
    const stream = (lb: string) =>
      [
        'listener: { bind: 127.0.0.1, port: 0 }',
        'logging: { level: info }',
        'stream:',
        '  - bind: 127.0.0.1',
        `    port: ${port}`,
        `    upstream: { load_balancing: ${lb}, discovery: { type: dns, host: db.test, port: ${blue.port}, resolvers: ["${dns.server}"] } }`,
        '',
      ].join('\n');
    writeFileSync(sys, stream('round_robin'));
    writeFileSync(gw, BASE_YAML);
    const gateway = spawnGateway(['--system-config', sys, '--gateway-config', gw]);
    try {
      await waitFor(async () => (await greeting(port)) === 'blue:', {
        timeoutMs: 60_000,
        what: 'the stream listener to reach blue',
      }).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\n${gateway.output()}`, { cause: err });
      });
      await dns.set({ hosts: { 'db.test': ['127.0.0.3'] }, srv: [] });
      await waitFor(async () => (await greeting(port)) === 'green:', {
        timeoutMs: 20_000,
        what: 'the listener to follow the record to green',
      });
      // A reload that changes the pool but keeps the block: the pool starts with the known answer.
      writeFileSync(sys, stream('least_connections'));
      gateway.child.kill('SIGHUP');
      await waitFor(
        () => /"updated":\["tcp 127\.0\.0\.1:\d+"\].*stream listeners reloaded/.test(gateway.output()),
        {
          timeoutMs: 20_000,
          what: 'the reload to update the listener in place',
        },
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\n${gateway.output()}`, { cause: err });
      });
      for (let i = 0; i < 5; i++) assert.equal(await greeting(port), 'green:');
      assert.doesNotMatch(gateway.output(), /stream pool not updated/);
    } finally {
      await gateway.stop();
      dir.remove();
    }
  },
);

test('stream discovery: a UDP stream pool follows the record for new sessions', { skip }, async () => {
  await dns.set({ hosts: { 'db.test': ['127.0.0.2'] }, srv: [] });
  // UDP origins on the two addresses, one port: each answers `<name>:<datagram>`.
  const origins: UdpSocket[] = [];
  let port = 0;
  for (const [name, ip] of [
    ['blue', '127.0.0.2'],
    ['green', '127.0.0.3'],
  ] as const) {
    const socket = createSocket('udp4');
    socket.on('message', (msg, rinfo) =>
      socket.send(Buffer.concat([Buffer.from(`${name}:`), msg]), rinfo.port, rinfo.address),
    );
    socket.bind(port, ip);
    await once(socket, 'listening');
    port = socket.address().port;
    origins.push(socket);
  }
  const listener = await startUdpStream(
    {
      protocol: 'udp',
      bind: '127.0.0.1',
      port: 0,
      upstream: {
        targets: [],
        discovery: { type: 'dns', host: 'db.test', port, resolvers: [dns.server] },
        load_balancing: 'round_robin',
      },
      sni_routes: [],
    },
    { logger: silentLogger, idleTimeoutMs: 60_000 },
  );
  /** A new client (a new session) sends one datagram; its first reply, or '' . */
  const ask = async (text: string): Promise<string> => {
    const socket = createSocket('udp4');
    try {
      socket.bind(0, '127.0.0.1');
      await once(socket, 'listening');
      const reply = new Promise<string>((resolve) => {
        socket.once('message', (msg) => resolve(msg.toString()));
        setTimeout(() => resolve(''), 500).unref();
      });
      socket.send(text, listener.address.port, '127.0.0.1');
      return await reply;
    } finally {
      socket.close();
    }
  };
  try {
    await waitFor(async () => (await ask('a')) === 'blue:a', {
      timeoutMs: 15000,
      what: 'the first answer (blue)',
    });
    await dns.set({ hosts: { 'db.test': ['127.0.0.3'] }, srv: [] });
    await waitFor(async () => (await ask('b')) === 'green:b', {
      timeoutMs: 15000,
      what: 'new sessions to follow the record to green',
    });
  } finally {
    await listener.close(0);
    for (const socket of origins) socket.close();
  }
});

test(
  'stream discovery metrics (issue 35 item 1): gateway_discovery_targets and gateway_discovery_errors_total cover stream pools',
  { skip },
  async () => {
    await dns.set({ hosts: { 'db.test': ['127.0.0.2'] }, srv: [] });
    // A resolver that is not there: a UDP port bound a moment ago, then closed.
    const probe = createSocket('udp4');
    await new Promise<void>((resolve) => probe.bind(0, '127.0.0.1', resolve));
    const deadResolver = `127.0.0.1:${probe.address().port}`;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const [port, deadPort, adminPort] = [await freePort(), await freePort(), await freePort()];
    const dir = tempDir();
    const sys = join(dir.path, 'system.yaml');
    const gw = join(dir.path, 'gateway.yaml');
    writeFileSync(
      sys,
      [
        'listener: { bind: 127.0.0.1, port: 0 }',
        'logging: { level: info }',
        `admin: { bind: 127.0.0.1, port: ${adminPort}, username: admin, password: "Admin-Pw-123456789" }`,
        'stream:',
        `  - { bind: 127.0.0.1, port: ${port}, upstream: { discovery: { type: dns, host: db.test, port: ${blue.port}, resolvers: ["${dns.server}"] } } }`,
        `  - { bind: 127.0.0.1, port: ${deadPort}, upstream: { discovery: { type: dns, host: gone.test, port: ${blue.port}, resolvers: ["${deadResolver}"] } } }`,
        '',
      ].join('\n'),
    );
    writeFileSync(gw, BASE_YAML);
    const gateway = spawnGateway(['--system-config', sys, '--gateway-config', gw]);
    const auth = `Basic ${Buffer.from('admin:Admin-Pw-123456789').toString('base64')}`;
    const metrics = async () => {
      // '' until the Admin API listens.
      const res = await fetch(`http://127.0.0.1:${adminPort}/metrics`, {
        headers: { authorization: auth },
      }).catch(() => undefined);
      return res?.ok === true ? res.text() : '';
    };
    const value = (text: string, series: string): number | undefined => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };
    const targets = `gateway_discovery_targets{policy="",node_id="tcp 127.0.0.1:${port}",source="dns:db.test"}`;
    const errors = 'gateway_discovery_errors_total{source="dns:gone.test"}';
    try {
      await waitFor(async () => value(await metrics(), targets) === 1, {
        timeoutMs: 60_000,
        what: `${targets} 1`,
      }).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\n${gateway.output()}`, { cause: err });
      });
      assert.equal(await greeting(port), 'blue:');
      await waitFor(async () => (value(await metrics(), errors) ?? 0) >= 1, {
        timeoutMs: 60_000,
        what: `${errors} counting the dead resolver`,
      });
      const text = await metrics();
      assert.equal(
        value(
          text,
          `gateway_discovery_targets{policy="",node_id="tcp 127.0.0.1:${deadPort}",source="dns:gone.test"}`,
        ),
        0,
      );
      // A discovery change is not a configuration reload.
      await dns.set({ hosts: { 'db.test': ['127.0.0.2', '127.0.0.3'] }, srv: [] });
      await waitFor(async () => value(await metrics(), targets) === 2, {
        timeoutMs: 20_000,
        what: `${targets} 2`,
      });
      assert.doesNotMatch(
        await metrics(),
        /gateway_config_reloads_total\{[^}]*source="(file|signal)"[^}]*\} [1-9]/,
      );
    } finally {
      await gateway.stop();
      dir.remove();
    }
  },
);
