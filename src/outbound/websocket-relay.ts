import { randomBytes } from 'node:crypto';
import {
  request as httpRequest,
  STATUS_CODES,
  validateHeaderName,
  validateHeaderValue,
  type IncomingMessage,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';
import type { ConnectionOptions } from 'node:tls';
import { transportOf, type Context, type HeaderMap } from '../core/context.js';
import type { ClientUpgrade } from '../core/transport.js';
import { appendVia } from '../outbound/via.js';
import { ClientAbortedError } from './errors.js';
import { invalidResponseBody } from '../core/errors.js';

/**
 * The client side of a WebSocket upgrade, attached to the context by the
 * server and taken over by the node that relays it (the upstream node).
 */
export type { ClientUpgrade } from '../core/transport.js';

export interface RelayTarget {
  host: string;
  port: number;
  /** wss when true (the upstream node's `tls` flag). */
  tls: boolean;
  tlsOptions?: ConnectionOptions;
  /** Host header sent upstream. */
  hostHeader: string;
  timeoutMs: number;
}

const tunnels = new Set<{ client: Duplex; upstream: Duplex }>();

export function attachUpgrade(ctx: Context, upgrade: ClientUpgrade): void {
  transportOf(ctx).upgrade = upgrade;
}

export function upgradeOf(ctx: Context): ClientUpgrade | undefined {
  return ctx.transport?.upgrade;
}

/** True once a node took the connection over: the server must not write a response. */
export function isRelayed(ctx: Context): boolean {
  return ctx.transport?.relayed === true;
}

/** A node other than the WebSocket relay (the gRPC relay) took the client over. */
export function markRelayed(ctx: Context): void {
  transportOf(ctx).relayed = true;
}

/** The node that took the client over hands the answer back to the server (grpc-transcode). */
export function clearRelayed(ctx: Context): void {
  if (ctx.transport !== undefined) ctx.transport.relayed = false;
}

/** Headers that belong to the client's hop; the upstream leg gets its own. */
const HOP = new Set([
  'connection',
  'upgrade',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'host',
  'sec-websocket-key',
  'sec-websocket-version',
  'sec-websocket-extensions',
  'content-length',
]);

/**
 * Opens the upstream leg (always HTTP/1.1 Upgrade) and, on 101, splices it to
 * the client: an HTTP/1.1 client gets the 101 head, an HTTP/2 client (RFC 8441)
 * gets a 200 on its CONNECT stream. A non-101 answer is put in
 * `ctx.response` for the normal response path. Rejects on connect failure.
 */
export function relayWebSocket(ctx: Context, target: RelayTarget): Promise<'relayed' | 'refused'> {
  const upgrade = upgradeOf(ctx);
  if (upgrade === undefined) return Promise.resolve('refused');
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(ctx.request.headers)) {
    if (value !== undefined && !HOP.has(name) && !name.startsWith(':')) headers[name] = value;
  }
  headers.host = target.hostHeader;
  headers.via = appendVia(ctx.request.headers.via);
  headers.connection = 'Upgrade';
  headers.upgrade = 'websocket';
  headers['sec-websocket-version'] = '13';
  // An HTTP/2 client has no key: the upstream leg needs its own (RFC 8441 §5).
  headers['sec-websocket-key'] =
    upgrade.kind === 'http1'
      ? String(ctx.request.headers['sec-websocket-key'] ?? randomBytes(16).toString('base64'))
      : randomBytes(16).toString('base64');
  const extensions = ctx.request.headers['sec-websocket-extensions'];
  if (upgrade.kind === 'http1' && typeof extensions === 'string')
    headers['sec-websocket-extensions'] = extensions;

  const send = target.tls ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send({
      host: target.host,
      port: target.port,
      method: 'GET',
      path: ctx.request.url,
      headers,
      timeout: target.timeoutMs,
      agent: false,
      ...(target.tls ? target.tlsOptions : {}),
    });
    req.once('timeout', () =>
      req.destroy(Object.assign(new Error('WebSocket upstream timed out'), { code: 'ETIMEDOUT' })),
    );
    // A client that leaves during the handshake (reset, disconnect) takes the upstream leg with it.
    const gone = { handleEvent: () => req.destroy(new ClientAbortedError()) };
    if (ctx.clientGone.aborted) gone.handleEvent();
    else ctx.clientGone.addEventListener('abort', gone);
    req.once('close', () => ctx.clientGone.removeEventListener('abort', gone));
    req.once('error', reject);
    req.once('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () => {
        ctx.response.status = res.statusCode ?? 502;
        ctx.response.headers = { ...res.headers };
        ctx.response.setBody(Buffer.concat(chunks));
        resolve('refused');
      });
      res.once('error', reject);
    });
    req.once('upgrade', (res: IncomingMessage, upstream: Duplex, upstreamHead: Buffer) => {
      req.setTimeout(0);
      (upstream as Duplex & { setTimeout?: (ms: number) => void }).setTimeout?.(0);
      const transport = transportOf(ctx);
      transport.upgrade = undefined;
      transport.relayed = true;
      ctx.response.status = upgrade.kind === 'http1' ? 101 : 200;
      if (upgrade.kind === 'http1') {
        const lines = [`HTTP/1.1 101 ${STATUS_CODES[101]}`];
        for (let i = 0; i < res.rawHeaders.length; i += 2)
          lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
        upgrade.socket.write(lines.join('\r\n') + '\r\n\r\n');
        splice(upgrade.socket, upstream, upgrade.head, upstreamHead);
      } else {
        const protocol = res.headers['sec-websocket-protocol'];
        upgrade.stream.respond({
          ':status': 200,
          ...(protocol ? { 'sec-websocket-protocol': protocol } : {}),
        });
        splice(upgrade.stream, upstream, Buffer.alloc(0), upstreamHead);
      }
      resolve('relayed');
    });
    req.end();
  });
}

function splice(client: Duplex, upstream: Duplex, clientHead: Buffer, upstreamHead: Buffer): void {
  const tunnel = { client, upstream };
  tunnels.add(tunnel);
  if (upstreamHead.length > 0) client.write(upstreamHead);
  if (clientHead.length > 0) upstream.write(clientHead);
  client.pipe(upstream);
  upstream.pipe(client);
  const close = () => {
    tunnels.delete(tunnel);
    client.destroy();
    upstream.destroy();
  };
  client.once('close', close);
  upstream.once('close', close);
  client.on('error', close);
  upstream.on('error', close);
}

/** A close frame with status 1001 "going away": unmasked towards the client, masked towards the upstream. */
function closeFrame(masked: boolean): Buffer {
  const payload = Buffer.from([0x03, 0xe9]);
  if (!masked) return Buffer.concat([Buffer.from([0x88, 0x02]), payload]);
  const mask = randomBytes(4);
  const body = payload.map((b, i) => b ^ (mask[i % 4] ?? 0));
  return Buffer.concat([Buffer.from([0x88, 0x82]), mask, body]);
}

/** At the end of the shutdown drain window: every tunnel gets 1001 on both legs, then is cut. */
export function closeTunnels(): void {
  for (const { client, upstream } of tunnels) {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.end(closeFrame(false));
    upstream.end(closeFrame(true));
  }
  tunnels.clear();
}

export function activeTunnels(): number {
  return tunnels.size;
}

/**
 * Writes a prepared response on a raw upgrade socket (the policy answered
 * instead of relaying). Lines are written by hand here, so a header Node would
 * refuse (CR, LF, NUL: often a reflected request value) turns the answer into
 * a 502, as on the normal response path, instead of splitting the response.
 */
export function answerUpgrade(socket: Duplex, status: number, headers: HeaderMap, body: Buffer | null): void {
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}`];
  try {
    for (const [name, value] of Object.entries(headers)) {
      if (
        value === undefined ||
        name === 'content-length' ||
        name === 'connection' ||
        name === 'transfer-encoding'
      )
        continue;
      validateHeaderName(name);
      for (const v of Array.isArray(value) ? value : [value]) {
        validateHeaderValue(name, v);
        lines.push(`${name}: ${v}`);
      }
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    answerUpgrade(
      socket,
      502,
      { 'content-type': 'application/json' },
      Buffer.from(JSON.stringify(invalidResponseBody(message))),
    );
    return;
  }
  lines.push(`content-length: ${body?.length ?? 0}`, 'connection: close');
  socket.end(
    Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), body ?? Buffer.alloc(0)]),
  );
}
