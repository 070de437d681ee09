/**
 * The three HTTP/1.1 fronts of the differential suites, each forwarding to its
 * own recording origin: the gateway with the lean front, the gateway with
 * `listener.http1_server: node`, and nginx (when installed, `npm run setup`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

export const NGINX = '/usr/sbin/nginx';

/** One request as the origin received it (node:http's reading). */
export interface Forwarded {
  method: string;
  url: string;
  /** Lowercased `name: value` lines, sorted; hop-specific fields left out. */
  headers: string[];
  body: string;
}

/** Fields that differ by front for reasons that are not the request: the origin's address, Via, pooling. */
const VOLATILE = new Set([
  'host',
  'via',
  'connection',
  'keep-alive',
  'x-forwarded-host',
  'x-real-ip',
  // The gateway makes one up when the client sent none.
  'sec-websocket-key',
]);

export interface RecordingOrigin {
  port: number;
  seen: Forwarded[];
  /** Resolves once no request is half-received (bounded). */
  settled(): Promise<void>;
  close(): void;
}

export async function recordingOrigin(): Promise<RecordingOrigin> {
  const seen: Forwarded[] = [];
  let active = 0;
  const server: Server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    active++;
    const chunks: Buffer[] = [];
    let done = false;
    const finish = () => {
      if (!done) {
        done = true;
        active--;
      }
    };
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('close', finish);
    req.on('end', () => {
      const headers: string[] = [];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i]!.toLowerCase();
        if (!VOLATILE.has(name)) headers.push(`${name}: ${req.rawHeaders[i + 1]!}`);
      }
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: headers.sort(),
        body: Buffer.concat(chunks).toString('latin1'),
      });
      finish();
      const text = 'ok';
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': text.length });
      res.end(text);
    });
  });
  server.on('clientError', (_err, socket: Socket) => socket.destroy());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    async settled() {
      await new Promise((resolve) => setImmediate(resolve));
      const deadline = Date.now() + 500;
      while (active > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    },
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

export interface Front {
  name: string;
  port: number;
  origin: RecordingOrigin;
  stop(): Promise<void>;
}

const gatewayYaml = (port: number) => `
routes:
  - { name: all, match: { path: /* }, policy: proxy }
policies:
  - name: proxy
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }], timeout_ms: 5000 } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`;

/** The gateway in this process with the lean (`lean`) or node:http (`node`) HTTP/1.1 front. */
export async function gatewayFront(http1: 'lean' | 'node'): Promise<Front> {
  const origin = await recordingOrigin();
  let gw: RunningGateway;
  try {
    gw = await startGateway(gatewayYaml(origin.port), {
      systemYaml:
        `listener: { bind: 127.0.0.1, port: 0, max_request_body_bytes: 1048576, http1_server: ${http1} }\n` +
        'timeouts: { shutdown_timeout_seconds: 1, connection_seconds: 10, read_seconds: 10 }\n',
    });
  } catch (err) {
    origin.close();
    throw err;
  }
  return {
    name: http1,
    port: gw.port,
    origin,
    async stop() {
      await gw.stop();
      origin.close();
    },
  };
}

/**
 * nginx as the review ran it (`proxy_http_version 1.1`, upstream keepalive,
 * `proxy_request_buffering off`), with its own prefix, configuration, logs and
 * pid in a temporary folder; in the foreground (daemon off, no master).
 * Header limits are raised to node's 16 KiB so size cases compare alike.
 */
export async function nginxFront(): Promise<Front> {
  const origin = await recordingOrigin();
  const dir = tempDir('switchyard-nginx-');
  const port = await freePort();
  for (const sub of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir.path, sub));
  const conf = join(dir.path, 'nginx.conf');
  const p = dir.path;
  writeFileSync(
    conf,
    `daemon off;
master_process off;
worker_processes 1;
pid ${p}/nginx.pid;
error_log ${p}/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${p}/body;
  proxy_temp_path ${p}/proxy;
  fastcgi_temp_path ${p}/fastcgi;
  uwsgi_temp_path ${p}/uwsgi;
  scgi_temp_path ${p}/scgi;
  client_max_body_size 1m;
  large_client_header_buffers 4 16k;
  upstream origin { server 127.0.0.1:${origin.port}; keepalive 16; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_request_buffering off;
    }
  }
}
`,
  );
  const child: ChildProcess = spawn(NGINX, ['-p', p, '-c', conf, '-e', `${p}/error.log`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    origin.close();
    dir.remove();
  };
  try {
    await waitFor(
      () =>
        new Promise<boolean>((resolve) => {
          if (child.exitCode !== null) throw new Error(`nginx exited: ${stderr}`);
          const s = connect(port, '127.0.0.1');
          s.once('connect', () => {
            s.destroy();
            resolve(true);
          });
          s.once('error', () => resolve(false));
        }),
      { timeoutMs: 10_000, what: 'nginx' },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { name: 'nginx', port, origin, stop };
}

export const nginxInstalled = (): boolean => existsSync(NGINX);

/** What a client saw: the status of each complete response, and whether the server closed. */
export interface Exchange {
  statuses: number[];
  closed: boolean;
}

/**
 * Writes `pieces` on a fresh connection (each in its own write, `gapMs`
 * apart) and reads responses until the server closes, `expect` complete
 * responses arrived, or nothing came for `idleMs` (a server waiting for
 * bytes that will never come). Responses are framed by Content-Length,
 * chunked or close; 1xx answers are counted apart.
 */
export async function exchange(
  port: number,
  pieces: readonly Buffer[],
  { expect = Infinity, idleMs = 250, gapMs = 0 } = {},
): Promise<Exchange> {
  const socket = connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  socket.on('error', () => undefined);
  await once(socket, 'connect').catch(() => undefined);
  return new Promise((resolve) => {
    let buffer = Buffer.alloc(0);
    const statuses: number[] = [];
    let idle: NodeJS.Timeout | undefined;
    let settled = false;
    const hard = setTimeout(() => done(false), 5000);
    const done = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(hard);
      clearTimeout(idle);
      socket.destroy();
      resolve({ statuses, closed });
    };
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => done(false), idleMs);
    };
    const parse = (closed: boolean) => {
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end === -1) return;
        const head = buffer.subarray(0, end).toString('latin1');
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
        const length = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1];
        let used: number | undefined;
        if (status >= 100 && status < 200) used = end + 4;
        else if (length !== undefined) {
          if (buffer.length >= end + 4 + Number(length)) used = end + 4 + Number(length);
        } else if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
          const last = buffer.indexOf('\r\n0\r\n\r\n', end + 2);
          if (last !== -1) used = last + 7;
        } else if (closed) used = buffer.length;
        if (used === undefined) return;
        if (status >= 200 || status < 100) statuses.push(status);
        buffer = buffer.subarray(used);
        if (statuses.length >= expect) return done(false);
      }
    };
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      parse(false);
      if (!settled) arm();
    });
    socket.on('close', () => {
      parse(true);
      done(true);
    });
    void (async () => {
      for (let i = 0; i < pieces.length; i++) {
        if (i > 0 && gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
        if (settled || socket.destroyed) return;
        socket.write(pieces[i]!);
      }
      if (!settled) arm();
    })();
  });
}

/** Runs `input` against `front` and returns the exchange and the requests its origin received meanwhile. */
export async function observe(
  front: Front,
  pieces: readonly Buffer[],
  options?: Parameters<typeof exchange>[2],
): Promise<{ exchange: Exchange; forwarded: Forwarded[] }> {
  const from = front.origin.seen.length;
  const result = await exchange(front.port, pieces, options);
  await front.origin.settled();
  return { exchange: result, forwarded: front.origin.seen.slice(from) };
}

/** A request list as one comparable string, order-insensitive (node:http dispatches pipelined requests at once). */
export function requestSet(forwarded: readonly Forwarded[]): string {
  return forwarded
    .map((f) => JSON.stringify([f.method, f.url, f.body, f.headers]))
    .sort()
    .join('\n');
}
