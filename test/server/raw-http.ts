/**
 * Helpers for data-plane tests that must control the bytes on the wire: a
 * spawned gateway, a capture upstream that records the request target it
 * received, and a raw `net` client that neither normalises paths nor merges
 * headers the way curl and undici do.
 */
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { spawnGateway, type GatewayProcess } from '../support/gateway-process.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

export interface SpawnedGateway {
  port: number;
  process: GatewayProcess;
  stop(): Promise<void>;
}

/**
 * Spawns the real CLI with `gatewayYaml` and a data-plane listener on a free
 * loopback port (`listenerExtra` adds keys to it, `systemExtra` is appended
 * to system.yaml); resolves once the port answers HTTP.
 */
export async function spawnDataPlane(
  gatewayYaml: string,
  systemExtra = '',
  listenerExtra = '',
): Promise<SpawnedGateway> {
  const dir = tempDir();
  const port = await freePort();
  const sys = join(dir.path, 'system.yaml');
  const gw = join(dir.path, 'gateway.yaml');
  writeFileSync(
    sys,
    `listener: { bind: 127.0.0.1, port: ${port}${listenerExtra === '' ? '' : `, ${listenerExtra}`} }\nlogging: { level: warn }\ntimeouts: { shutdown_timeout_seconds: 2 }\n${systemExtra}`,
  );
  writeFileSync(gw, gatewayYaml);
  const child = spawnGateway(['--system-config', sys, '--gateway-config', gw]);
  try {
    await waitFor(
      async () => {
        if (child.child.exitCode !== null) throw new Error(`gateway exited:\n${child.output()}`);
        try {
          await fetch(`http://127.0.0.1:${port}/`);
          return true;
        } catch {
          return false;
        }
      },
      { timeoutMs: 60000, intervalMs: 100, what: 'the spawned data plane' },
    );
  } catch (err) {
    await child.stop('SIGKILL');
    dir.remove();
    throw new Error(`${(err as Error).message}\n${child.output()}`, { cause: err });
  }
  return {
    port,
    process: child,
    async stop() {
      await child.stop();
      dir.remove();
    },
  };
}

export interface Captured {
  method: string;
  /** The request target exactly as it arrived on the request line. */
  target: string;
  headers: IncomingMessage['headers'];
  body: string;
  bytes: Buffer;
}

export interface CaptureUpstream {
  port: number;
  seen: Captured[];
  /** Ends every `/truncated` response still held open, 5000 of its 100000 bytes sent. */
  cut(): void;
  close(): void;
}

/**
 * An origin that records each request and answers 200 `ok`. Targets ending in
 * `/bad-chunked` get a response whose first chunk size is not hex, as in the
 * review's fault table; `/truncated` gets 5000 of 100000 announced bytes and
 * the connection is closed when the test calls `cut()`.
 */
export async function captureUpstream(): Promise<CaptureUpstream> {
  const seen: Captured[] = [];
  const held = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const target = req.url ?? '';
      const bytes = Buffer.concat(chunks);
      seen.push({ method: req.method ?? '', target, headers: req.headers, body: bytes.toString(), bytes });
      if (target.endsWith('/bad-chunked')) {
        req.socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nZZZ\r\nabc\r\n0\r\n\r\n');
        return;
      }
      if (target.endsWith('/truncated')) {
        req.socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n' + 'x'.repeat(5000));
        held.add(req.socket);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    cut() {
      for (const socket of held) socket.destroy();
      held.clear();
    },
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

export interface RawResponse {
  /** `HTTP/1.1 200 OK` */
  statusLine: string;
  status: number;
  /** Lowercased names; the last value wins. */
  headers: Record<string, string>;
  body: string;
}

/** Opens a loopback TCP connection to `port`. */
export async function rawConnect(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  return socket;
}

/** A complete chunked body (no trailers) and the bytes it took, or undefined while incomplete. */
function dechunk(data: Buffer): { body: string; used: number } | undefined {
  let at = 0;
  let body = '';
  for (;;) {
    const eol = data.indexOf('\r\n', at);
    if (eol === -1) return undefined;
    const size = parseInt(data.subarray(at, eol).toString('latin1'), 16);
    if (Number.isNaN(size)) throw new Error('bad chunk size from the gateway');
    const start = eol + 2;
    if (data.length < start + size + 2) return undefined;
    if (size === 0) return { body, used: start + 2 };
    body += data.subarray(start, start + size).toString();
    at = start + size + 2;
  }
}

/**
 * Reads one HTTP/1.1 response from `socket` (Content-Length, chunked or
 * read-to-close framing). Rejects when
 * the connection closes before a status line arrived: the "empty reply".
 */
export function readResponse(socket: Socket): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let buffer = Buffer.alloc(0);
    let extra: Buffer | undefined;
    const finish = (result: RawResponse | Error) => {
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.off('error', onError);
      socket.pause();
      // Pipelined bytes past this response stay for the next read.
      if (extra !== undefined && extra.length > 0) socket.unshift(extra);
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const parse = (closed: boolean): RawResponse | undefined => {
      const end = buffer.indexOf('\r\n\r\n');
      if (end === -1) return undefined;
      const lines = buffer.subarray(0, end).toString('latin1').split('\r\n');
      const statusLine = lines[0] ?? '';
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const rest = buffer.subarray(end + 4);
      const length = headers['content-length'];
      if (length !== undefined) {
        if (rest.length < Number(length)) return undefined;
        const body = rest.subarray(0, Number(length));
        extra = rest.subarray(Number(length));
        return { statusLine, status: Number(statusLine.split(' ')[1]), headers, body: body.toString() };
      }
      if (headers['transfer-encoding'] === 'chunked') {
        const chunked = dechunk(rest);
        if (chunked === undefined) return undefined;
        extra = rest.subarray(chunked.used);
        return { statusLine, status: Number(statusLine.split(' ')[1]), headers, body: chunked.body };
      }
      if (!closed) return undefined;
      return { statusLine, status: Number(statusLine.split(' ')[1]), headers, body: rest.toString() };
    };
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const done = parse(false);
      if (done !== undefined) finish(done);
    };
    const onClose = () =>
      finish(parse(true) ?? new Error(`connection closed after ${buffer.length} bytes: empty reply`));
    const onError = (err: Error) => finish(err);
    socket.on('data', onData);
    socket.once('close', onClose);
    socket.once('error', onError);
    socket.resume();
  });
}

/** Sends `head` (request line and headers, CRLF-separated, no final blank line) and reads the answer. */
export async function rawRequest(port: number, head: string, body = ''): Promise<RawResponse> {
  const socket = await rawConnect(port);
  try {
    const answer = readResponse(socket);
    socket.write(`${head}\r\n\r\n${body}`);
    return await answer;
  } finally {
    socket.destroy();
  }
}
