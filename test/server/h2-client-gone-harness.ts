/**
 * What the HTTP/2 client-gone tests (security review 3, F-3) share: an origin
 * that records each upstream socket's close, and a gateway process whose
 * upstream timeouts are far longer than the 1 s the tests allow, so only an
 * abort caused by the client can close an upstream socket in time.
 */
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { freePort } from '../support/free-port.js';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { spawnGateway, type GatewayProcess } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { get } from './abuse-harness.js';

/** One upstream socket as the origin saw it. */
export interface OriginSocket {
  /** The `probe` query parameter of the request it carried (the last one, with keep-alive). */
  probe: string | undefined;
  /** Request body bytes received on it. */
  bodyBytes: number;
  /** Response bytes written to it. */
  sentBytes: number;
  /** When the origin last found its writes blocked by backpressure and not yet drained (0: not blocked). */
  blockedSince: number;
  closed: boolean;
  closedAt: number;
}

/**
 * An HTTP/1.1 origin: `/up/hang` reads the request (body included) and never
 * answers; `/up/stream` answers 200 and streams 16 KiB chunks for as long as
 * the connection takes them (it stops only when backpressure stops it);
 * `/up/slow` answers 200 and sends 16 KiB every 20 ms, without end; `/up/ok`
 * answers 200 `ok`; a WebSocket handshake is never answered.
 */
export interface RecordingOrigin {
  port: number;
  sockets: OriginSocket[];
  /** The socket that carried the request with `?probe=<probe>`, once its head arrived. */
  socketOf(probe: string): OriginSocket | undefined;
  /** Sockets not yet closed. */
  open(): number;
  close(): Promise<void>;
}

export async function startRecordingOrigin(): Promise<RecordingOrigin> {
  const sockets: OriginSocket[] = [];
  const raw = new Set<Socket>();
  const records = new WeakMap<Socket, OriginSocket>();
  const chunk = Buffer.alloc(16 * 1024, 'x');
  const server: Server = createServer(
    { keepAliveTimeout: 60_000 },
    (req: IncomingMessage, res: ServerResponse) => {
      const record = records.get(req.socket);
      if (record === undefined) return;
      record.probe = new URL(req.url ?? '/', 'http://origin').searchParams.get('probe') ?? undefined;
      req.on('data', (d: Buffer) => (record.bodyBytes += d.length));
      req.on('error', () => undefined);
      res.on('error', () => undefined);
      if (req.url?.startsWith('/up/ok')) {
        req.once('end', () => res.end('ok'));
        req.resume();
        return;
      }
      if (req.url?.startsWith('/up/slow')) {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const timer = setInterval(() => {
          record.sentBytes += chunk.length;
          res.write(chunk);
        }, 20);
        res.once('close', () => clearInterval(timer));
        return;
      }
      if (!req.url?.startsWith('/up/stream')) return;
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const pump = () => {
        while (!res.destroyed) {
          record.sentBytes += chunk.length;
          if (!res.write(chunk)) {
            record.blockedSince = Date.now();
            res.once('drain', () => {
              record.blockedSince = 0;
              setImmediate(pump);
            });
            return;
          }
        }
      };
      pump();
    },
  );
  // A WebSocket handshake the origin never answers.
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    const record = records.get(socket);
    if (record !== undefined)
      record.probe = new URL(req.url ?? '/', 'http://origin').searchParams.get('probe') ?? undefined;
    // node:http leaves an upgraded socket half open at the peer's FIN; a real server closes it.
    socket.once('end', () => socket.destroy());
  });
  server.on('connection', (socket: Socket) => {
    const record: OriginSocket = {
      probe: undefined,
      bodyBytes: 0,
      sentBytes: 0,
      blockedSince: 0,
      closed: false,
      closedAt: 0,
    };
    records.set(socket, record);
    sockets.push(record);
    raw.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => {
      raw.delete(socket);
      record.closed = true;
      record.closedAt = Date.now();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    sockets,
    socketOf: (probe) => sockets.find((s) => s.probe === probe),
    open: () => sockets.filter((s) => !s.closed).length,
    async close() {
      for (const s of raw) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface ClientGoneGateway {
  process: GatewayProcess;
  dataPort: number;
  adminPort: number;
  stop(): Promise<void>;
}

/**
 * Spawns `switchyard` with `/hello` (mocked) and `/up/*` proxied to `originPort`
 * with `timeout_ms` and `stream_idle_timeout_ms` of 60 s, and client timeouts
 * of 30 s: nothing but the client going away ends an exchange within a test.
 */
export async function startClientGoneGateway(
  originPort: number,
  options: {
    listenerExtra?: string;
    system?: string;
    /** Runs the gateway under `ulimit -n <fdLimit>` (soft and hard). */
    fdLimit?: number;
  } = {},
): Promise<ClientGoneGateway> {
  const dir = tempDir('switchyard-h2-gone-');
  const [dataPort, adminPort] = [await freePort(), await freePort()];
  const systemPath = join(dir.path, 'system.yaml');
  const gatewayPath = join(dir.path, 'gateway.yaml');
  writeFileSync(
    systemPath,
    [
      `listener: { bind: 127.0.0.1, port: ${dataPort}${options.listenerExtra ?? ''} }`,
      'logging: { level: warn }',
      'timeouts: { connection_seconds: 30, read_seconds: 30, idle_seconds: 60, shutdown_timeout_seconds: 2 }',
      `admin: { bind: 127.0.0.1, port: ${adminPort}, username: admin, password: "correct horse" }`,
      options.system ?? '',
      '',
    ].join('\n'),
  );
  writeFileSync(
    gatewayPath,
    `
routes:
  - { name: hello, match: { path: /hello }, policy: hello }
  - { name: up, match: { path: /up/* }, policy: up }
policies:
  - name: hello
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: hello, content_type: text/plain } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
  - name: up
    nodes:
      - { id: in, type: listener }
      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${originPort} }], timeout_ms: 60000, stream_idle_timeout_ms: 60000 } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: backend.in }
      - { from: backend.success, to: out.in }
      - { from: backend.error, to: out.in }
`,
  );
  const args = ['--system-config', systemPath, '--gateway-config', gatewayPath];
  const p = options.fdLimit === undefined ? spawnGateway(args) : spawnWithFdLimit(options.fdLimit, args);
  try {
    await waitFor(async () => (await get(dataPort, '/hello').catch(() => 0)) === 200, {
      timeoutMs: 60_000,
      intervalMs: 100,
      what: 'the data plane',
    });
    // The admin listener may start after the data plane.
    await waitFor(async () => (await get(adminPort, '/healthz').catch(() => 0)) === 200, {
      timeoutMs: 30_000,
      intervalMs: 100,
      what: 'the admin listener',
    });
  } catch (err) {
    await p.stop('SIGKILL');
    dir.remove();
    throw new Error(`gateway did not start: ${(err as Error).message}\n${p.output()}`, { cause: err });
  }
  return {
    process: p,
    dataPort,
    adminPort,
    async stop() {
      await p.stop();
      dir.remove();
    },
  };
}

const BIN = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));

/** `switchyard` started by `bash -c 'ulimit -n N; exec node bin/switchyard.js …'`: the process is node itself. */
function spawnWithFdLimit(fdLimit: number, args: string[]): GatewayProcess {
  const child = spawn(
    'bash',
    ['-c', `ulimit -n ${fdLimit} && exec "$0" "$@"`, process.execPath, BIN, ...args],
    {
      env: { ...process.env, LOG_FORMAT: 'json' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('close', (code: number | null) => resolve(code)),
  );
  return {
    child,
    output: () => out,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
