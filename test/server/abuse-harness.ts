/** A real gateway process plus the probes the slow-client, connection-cap, HTTP/2 and soak tests share. */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { freePort } from '../support/free-port.js';
import { request } from 'node:http';
import { spawnGateway, type GatewayProcess } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

export interface AbuseGateway {
  process: GatewayProcess;
  pid: number;
  dataPort: number;
  adminPort: number;
  data: string;
  admin: string;
  stop(): Promise<void>;
}

const gatewayYaml = (upstreamPort: number) => `
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
    error_handler: eh
    nodes:
      - { id: in, type: listener }
      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${upstreamPort} }], timeout_ms: 3000 } }
      - { id: eh, type: error-handler, config: { status_code: 502 } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: backend.in }
      - { from: backend.success, to: out.in }
      - { from: backend.error, to: eh.in }
      - { from: eh.success, to: out.in }
`;

/**
 * Spawns `switchyard` with a data plane (`/hello` mocked, `/up/*` proxied to
 * `upstreamPort`) and an admin listener. `system` holds extra system.yaml
 * lines; the defaults keep every timeout at 1 s so the tests are fast.
 */
export async function startAbuseGateway(
  options: {
    system?: string;
    timeouts?: string;
    upstreamPort?: number;
    /** Appended inside the `listener: {…}` and `admin: {…}` mappings, e.g. `, max_connections: 4`. */
    listenerExtra?: string;
    admin?: string;
  } = {},
): Promise<AbuseGateway> {
  const dir = tempDir('switchyard-abuse-');
  const [dataPort, adminPort] = [await freePort(), await freePort()];
  const systemPath = join(dir.path, 'system.yaml');
  const gatewayPath = join(dir.path, 'gateway.yaml');
  writeFileSync(
    systemPath,
    [
      `listener: { bind: 127.0.0.1, port: ${dataPort}${options.listenerExtra ?? ''} }`,
      'logging: { level: warn }',
      `timeouts: { ${options.timeouts ?? 'connection_seconds: 1, read_seconds: 1, idle_seconds: 30'}, shutdown_timeout_seconds: 2 }`,
      `admin: { bind: 127.0.0.1, port: ${adminPort}, username: admin, password: "correct horse"${options.admin ?? ''} }`,
      options.system ?? '',
      '',
    ].join('\n'),
  );
  writeFileSync(gatewayPath, gatewayYaml(options.upstreamPort ?? (await freePort())));
  const p = spawnGateway(['--system-config', systemPath, '--gateway-config', gatewayPath]);
  const data = `http://127.0.0.1:${dataPort}`;
  const admin = `http://127.0.0.1:${adminPort}`;
  try {
    await waitFor(async () => (await get(adminPort, '/healthz').catch(() => 0)) === 200, {
      timeoutMs: 60_000,
      intervalMs: 100,
      what: 'the admin listener',
    });
    await waitFor(async () => (await get(dataPort, '/hello').catch(() => 0)) === 200, {
      timeoutMs: 10_000,
      what: 'the data plane',
    });
  } catch (err) {
    await p.stop('SIGKILL');
    dir.remove();
    throw new Error(`gateway did not start: ${(err as Error).message}\n${p.output()}`, { cause: err });
  }
  return {
    process: p,
    pid: p.child.pid ?? 0,
    dataPort,
    adminPort,
    data,
    admin,
    async stop() {
      await p.stop();
      dir.remove();
    },
  };
}

/** One GET on a fresh connection that is closed afterwards (no pooled socket counts against a cap); resolves the status. */
export function get(port: number, path: string, timeoutMs = 5000): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** A raw TCP client: what it received, and whether the gateway closed it. */
export interface RawClient {
  socket: Socket;
  received(): string;
  readonly closed: boolean;
  closedAt: number;
}

export async function rawClient(port: number, first?: string | Buffer): Promise<RawClient> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  let text = '';
  const client = {
    socket,
    received: () => text,
    closed: false,
    closedAt: 0,
  };
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  socket.on('close', () => {
    client.closed = true;
    client.closedAt = Date.now();
  });
  await once(socket, 'connect');
  if (first !== undefined) socket.write(first);
  return client;
}

export async function waitClosed(client: RawClient, timeoutMs: number, what: string): Promise<void> {
  await waitFor(() => client.closed, { timeoutMs, intervalMs: 50, what });
}

/** Resident set size of a process, in KiB (/proc/<pid>/status VmRSS). */
export function rssKiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match === null ? 0 : Number(match[1]);
}

/** Open file descriptors of a process. */
export function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** An upstream that accepts connections, counts them, and never answers. */
export interface HangingUpstream {
  port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Request lines received so far whose path starts with `prefix`. */
  requests(prefix: string): number;
  close(): Promise<void>;
}

export async function hangingUpstream(): Promise<HangingUpstream> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const paths: string[] = [];
  const server: Server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (d: Buffer) => {
      for (const m of d.toString('latin1').matchAll(/^[A-Z]+ (\S+) HTTP\/1\.1\r$/gm)) paths.push(m[1] ?? '');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    get accepted() {
      return accepted;
    },
    requests: (prefix) => paths.filter((p) => p.startsWith(prefix)).length,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The HTTP/2 connection preface minus its last byte: a client that never finishes it. */
export const PARTIAL_PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r';

/** One HTTP/2 frame: 9-byte header (length, type, flags, stream id) plus payload (RFC 9113 §4.1). */
function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId, 5);
  return Buffer.concat([header, payload]);
}

/** A GET's header block in HPACK without Huffman or indexing: `:method GET`, `:scheme http` (static), `:path`, `:authority`. */
function getHeaderBlock(path: string): Buffer {
  const literal = (nameIndex: number, value: string) =>
    Buffer.concat([Buffer.from([nameIndex, value.length]), Buffer.from(value, 'latin1')]);
  return Buffer.concat([Buffer.from([0x82, 0x86]), literal(0x04, path), literal(0x01, 'abuse.test')]);
}

/**
 * The bytes of a rapid-reset client (CVE-2023-44487) as one write: the
 * preface, an empty SETTINGS, then HEADERS + RST_STREAM(CANCEL) for `resets`
 * streams, then `live` streams that are not reset. The shape of the attack:
 * each reset travels in the same packet as its request.
 */
export function rapidResetBytes(resets: number, path: string, live: string[] = []): Buffer {
  const END_STREAM_AND_HEADERS = 0x05;
  const parts = [
    Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'),
    frame(0x4, 0, 0, Buffer.alloc(0)),
  ];
  let id = 1;
  for (let i = 0; i < resets; i++, id += 2) {
    parts.push(frame(0x1, END_STREAM_AND_HEADERS, id, getHeaderBlock(`${path}-${i}`)));
    parts.push(frame(0x3, 0, id, Buffer.from([0, 0, 0, 8])));
  }
  for (const p of live) {
    parts.push(frame(0x1, END_STREAM_AND_HEADERS, id, getHeaderBlock(p)));
    id += 2;
  }
  return Buffer.concat(parts);
}

/** The error code of the first GOAWAY frame among the bytes a server sent after the preface, if any. */
export function goawayCode(received: Buffer): number | undefined {
  let at = 0;
  while (at + 9 <= received.length) {
    const length = received.readUIntBE(at, 3);
    const type = received[at + 3];
    if (type === 0x7 && at + 9 + 8 <= received.length) return received.readUInt32BE(at + 9 + 4);
    at += 9 + length;
  }
  return undefined;
}
