/**
 * A raw `net` origin that answers `/bad/<mode>` with the bytes of one of MODES (bad-origin-modes.ts)
 * and `/ok` with `GOOD c=<connection> n=<request on it>`, plus a raw client that reads what a
 * gateway sends back, byte for byte, until the gateway closes the connection.
 */
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { MODES, type Mode, type Step } from './bad-origin-modes.js';

export interface BadOrigin {
  port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  /**
   * Waits until the origin has written every step of the last bad answer. Then, for a mode with
   * bytes held back for an idle connection (a `{ late }` step) or `mustClose`, writes them and waits
   * until the gateway has closed that connection; rejects when it is still open after `timeoutMs`.
   */
  settle(timeoutMs: number): Promise<void>;
  /** Resolves once the next bad answer has been written whole (`bodyAfterAnswer` modes). */
  nextAnswer(): Promise<void>;
  close(): Promise<void>;
}

interface Served {
  socket: Socket;
  mode: Mode;
  /** Every step but the held-back bytes is written. */
  written: Promise<void>;
  late: string | null;
}

export async function startBadOrigin(): Promise<BadOrigin> {
  let connections = 0;
  let last: Served | null = null;
  let onAnswer: (() => void) | null = null;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    const c = ++connections;
    let n = 0;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffer = Buffer.alloc(0);
    /** Request body bytes still to skip (Content-Length framing; the gateway sends nothing else here). */
    let skip = 0;
    socket.on('data', (data: Buffer) => {
      buffer = Buffer.concat([buffer, data]);
      for (;;) {
        if (skip > 0) {
          const taken = Math.min(skip, buffer.length);
          skip -= taken;
          buffer = buffer.subarray(taken);
          if (skip > 0) return;
        }
        const end = buffer.indexOf('\r\n\r\n');
        if (end === -1) return;
        const head = buffer.subarray(0, end).toString('latin1');
        buffer = buffer.subarray(end + 4);
        skip = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        n++;
        const path = head.split(' ')[1] ?? '';
        if (path === '/ok') {
          const body = `GOOD c=${c} n=${n}`;
          socket.write(
            `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nContent-Type: text/plain\r\n\r\n${body}`,
          );
          continue;
        }
        const mode = path.startsWith('/bad/') ? MODES.find((x) => `/bad/${x.name}` === path) : undefined;
        if (mode === undefined) {
          // Anything else (a readiness probe): a plain 404.
          socket.write('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
          continue;
        }
        const served: Served = { socket, mode, written: Promise.resolve(), late: null };
        served.written = run(socket, mode.steps, (bytes) => (served.late = bytes));
        last = served;
        const answered = onAnswer;
        onAnswer = null;
        if (answered !== null) void served.written.then(answered);
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return connections;
    },
    nextAnswer: () => new Promise<void>((resolve) => (onAnswer = resolve)),
    async settle(timeoutMs) {
      const served = last;
      last = null;
      if (served === null) return;
      await served.written;
      if (served.late === null && served.mode.mustClose !== true) return;
      const { socket } = served;
      if (socket.destroyed) return;
      const closed = once(socket, 'close');
      if (served.late !== null) socket.write(served.late, 'latin1');
      let kept = false;
      const timer = setTimeout(() => {
        kept = true;
        socket.destroy();
      }, timeoutMs);
      await closed;
      clearTimeout(timer);
      if (kept)
        throw new Error(`${served.mode.name}: the gateway kept a connection that got bytes past an answer`);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

/**
 * Writes `steps` on `socket`; each gap starts once the previous bytes are flushed, so they make a
 * read of their own. Resolves when every step ran (a held-back step is handed to `hold`).
 */
function run(socket: Socket, steps: readonly Step[], hold: (bytes: string) => void): Promise<void> {
  return new Promise((resolve) => {
    const next = (i: number): void => {
      const step = steps[i];
      if (step === undefined || socket.destroyed) return resolve();
      if (typeof step === 'string') socket.write(step, 'latin1', () => next(i + 1));
      else if ('end' in step) socket.end(resolve);
      else if ('destroy' in step) {
        socket.destroy();
        resolve();
      } else if ('late' in step) {
        hold(step.late);
        resolve();
      } else setTimeout(next, step.gapMs, i + 1);
    };
    next(0);
  });
}

/** What a client of the gateway got: the status and body its framing delimits, and any bytes past them. */
export interface Answer {
  status: number;
  /** Lowercased header names to values (repeats joined with `, `). */
  headers: Record<string, string>;
  body: string;
  /** Bytes after the end the answer's own framing gives: a response split on the client connection. */
  trailing: string;
  /** The connection closed (or the deadline passed) before a status line. */
  empty: boolean;
}

/**
 * Sends one request with `Connection: close` on a fresh connection to `port` and reads until the
 * gateway closes it (or `deadlineMs`); with `bodyAfter` only the first bytes of the request body go out at
 * once (undici sends a head with the first body bytes), the rest once that promise resolves (the
 * origin has answered).
 */
export async function ask(
  port: number,
  method: string,
  path: string,
  options: { bodyAfter?: Promise<void>; deadlineMs?: number; headers?: string } = {},
): Promise<Answer> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  const body = method === 'POST' ? 'request-body' : '';
  const length = method === 'POST' ? `Content-Length: ${body.length}\r\n` : '';
  socket.write(
    `${method} ${path} HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n${length}${options.headers ?? ''}\r\n${options.bodyAfter === undefined ? body : body.slice(0, 7)}`,
  );
  void options.bodyAfter?.then(() => {
    if (!socket.destroyed) socket.write(body.slice(7));
  });
  let bytes = Buffer.alloc(0);
  socket.on('data', (d: Buffer) => (bytes = Buffer.concat([bytes, d])));
  const timer = setTimeout(() => socket.destroy(), options.deadlineMs ?? 10_000);
  await once(socket, 'close');
  clearTimeout(timer);
  return parseAnswer(bytes, method === 'HEAD');
}

export function parseAnswer(bytes: Buffer, head: boolean): Answer {
  const end = bytes.indexOf('\r\n\r\n');
  if (end === -1)
    return { status: 0, headers: {}, body: '', trailing: bytes.toString('latin1'), empty: true };
  const lines = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const status = Number(lines[0]?.split(' ')[1]);
  const rest = bytes.subarray(end + 4);
  let body: Buffer = rest;
  let trailing: Buffer = Buffer.alloc(0);
  if (head || status === 204 || status === 304) [body, trailing] = [Buffer.alloc(0), rest];
  else if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    [body, trailing] = [rest.subarray(0, n), rest.subarray(n)];
  } else if (headers['transfer-encoding'] === 'chunked') [body, trailing] = dechunk(rest);
  return {
    status,
    headers,
    body: body.toString('latin1'),
    trailing: trailing.toString('latin1'),
    empty: false,
  };
}

/** A chunked body's data and the bytes after its last chunk (a cut body: what arrived). */
function dechunk(data: Buffer): [Buffer, Buffer] {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = data.indexOf('\r\n', at);
    if (eol === -1) return [Buffer.concat(parts), Buffer.alloc(0)];
    const size = parseInt(data.subarray(at, eol).toString('latin1'), 16);
    const start = eol + 2;
    if (Number.isNaN(size)) return [Buffer.concat(parts), data.subarray(at)];
    if (size === 0) {
      const close = data.indexOf('\r\n\r\n', eol);
      return [Buffer.concat(parts), close === -1 ? Buffer.alloc(0) : data.subarray(close + 4)];
    }
    parts.push(data.subarray(start, Math.min(data.length, start + size)));
    if (data.length < start + size + 2) return [Buffer.concat(parts), Buffer.alloc(0)];
    at = start + size + 2;
  }
}
