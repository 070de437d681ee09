import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

/** Upgrade tokens we drop along with `Upgrade` itself; `Connection` may list them. */
const UPGRADE_FIELDS = new Set(['upgrade', 'http2-settings']);

/** True when `Upgrade` asks for WebSocket (the only protocol the data plane switches to). */
export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  const value = req.headers.upgrade;
  if (value === undefined) return false;
  for (const token of value.split(',')) if (token.trim().toLowerCase() === 'websocket') return true;
  return false;
}

/**
 * The request head again, minus `Upgrade`, `HTTP2-Settings` and their
 * `Connection` tokens. Names and values come from the parser, which already
 * refused anything malformed, so nothing new can be smuggled in.
 */
function headWithoutUpgrade(req: IncomingMessage): string {
  let head = `${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/${req.httpVersion}\r\n`;
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] ?? '';
    const value = raw[i + 1] ?? '';
    const lower = name.toLowerCase();
    if (UPGRADE_FIELDS.has(lower)) continue;
    if (lower === 'connection') {
      const kept = value
        .split(',')
        .map((token) => token.trim())
        .filter((token) => token !== '' && !UPGRADE_FIELDS.has(token.toLowerCase()));
      if (kept.length > 0) head += `${name}: ${kept.join(', ')}\r\n`;
      continue;
    }
    head += `${name}: ${value}\r\n`;
  }
  return head + '\r\n';
}

/**
 * Serves a non-WebSocket upgrade request (`Upgrade: h2c` from `curl --http2`,
 * Java's HttpClient…) as plain HTTP/1.1, which RFC 9110 §7.8 allows: Node
 * hands every upgrade request to the 'upgrade' listener with the socket
 * detached, so the head is rebuilt without the upgrade and, with the bytes
 * already read past it, fed back to the HTTP/1.1 server as if the connection
 * were new. Body framing, keep-alive and pipelining then work as usual.
 * Returns false when the socket does not know its HTTP server.
 */
export function serveWithoutUpgrade(req: IncomingMessage, socket: Duplex, rest: Buffer): boolean {
  // Node sets `socket.server` to the http.Server that parsed the connection, and `_httpMessage`
  // to the response still being written on it (the upgrade was pipelined behind a request).
  const http = socket as Duplex & {
    server?: { emit?: unknown };
    _httpMessage?: { once(event: 'finish', listener: () => void): void } | null;
    setTimeout?: (ms: number) => void;
  };
  const server = http.server;
  if (server === undefined || typeof server.emit !== 'function') return false;
  const emit = server.emit as (event: string, socket: Duplex) => boolean;
  const bytes = Buffer.concat([Buffer.from(headWithoutUpgrade(req), 'latin1'), rest]);
  const refeed = () => {
    if (socket.destroyed) return;
    // The previous connection state may have armed its keep-alive timer on the socket.
    http.setTimeout?.(0);
    socket.unshift(bytes);
    emit.call(server, 'connection', socket);
  };
  // A new connection state would queue its responses behind one it cannot see finish.
  const inFlight = http._httpMessage;
  if (inFlight !== undefined && inFlight !== null) inFlight.once('finish', refeed);
  else refeed();
  return true;
}
