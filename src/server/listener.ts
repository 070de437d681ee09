import { once } from 'node:events';
import { createServer as createHttp1Server, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse, Http2Session } from 'node:http2';
import {
  createServer as createNetServer,
  type AddressInfo,
  type Server as NetServer,
  type Socket,
} from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { Duplex } from 'node:stream';
import type { Http2Config, SystemConfig, TlsConfig } from '../config/system.js';
import type { Logger } from '../core/logger.js';
import { capConnections, ClientBudget, resolveMaxConnections } from './connection-limit.js';
import { createGuardedHttp2Server, StreamOpenPacer } from './h2-guard.js';
import { ThrottledLog } from './throttled-log.js';
import { ACME_TLS_ALPN, TlsMaterial, type ManagedCertificates } from './tls-material.js';
import { BAD_REQUEST, REQUEST_TIMEOUT } from './client-errors.js';
import { leanHttp1Disabled } from '../runtime/native-http-parser.js';
import { LeanHttp1Front } from './lean/http1-front.js';
import type { LeanRequest } from './lean/lean-request.js';
import type { LeanResponse } from './lean/lean-response.js';

export type RequestHandler = (
  req: IncomingMessage | Http2ServerRequest | LeanRequest,
  res: ServerResponse | Http2ServerResponse | LeanResponse,
) => void;
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export interface ListenerSpec {
  label: string;
  bind: string;
  port: number;
  tls?: TlsConfig | undefined;
  http2: boolean;
  /** `http2.*` limits (stream cap, rapid reset); used when `http2` is on. */
  http2Limits: Http2Config;
  /** Connections over this are closed on accept (`listener.max_connections`, `admin.max_connections`). */
  maxConnections: number | 'auto';
  timeouts: SystemConfig['timeouts'];
  logger: Logger;
  /** Runs when the drain window ends, before connections are cut (WebSocket tunnels get their 1001). */
  beforeCut?: () => void;
  /** ACME-managed certificates of `tls` (placeholder or issued) and the TLS-ALPN-01 answers. */
  managedCertificates?: ManagedCertificates | undefined;
  /**
   * `listener.http1_server`: `lean` serves HTTP/1.1 with the lean front
   * (./lean/http1-front.ts), `node` (the default here) with node:http.
   */
  http1Server?: 'lean' | 'node' | undefined;
}

export interface Listener {
  readonly address: AddressInfo;
  readonly scheme: 'http' | 'https';
  /** Stops accepting, lets in-flight requests finish within `graceMs`, then cuts every connection. */
  close(graceMs: number): Promise<void>;
}

const sessionPeers = new WeakMap<Http2Session, { address: string; port: number }>();

/** The client address of a request, including h2c requests whose session socket cannot tell it. */
export function peerOf(req: IncomingMessage | Http2ServerRequest | LeanRequest): {
  address: string;
  port: number;
} {
  const socket = req.socket;
  if (socket.remoteAddress !== undefined)
    return { address: socket.remoteAddress, port: socket.remotePort ?? 0 };
  const session = 'stream' in req ? req.stream.session : undefined;
  return (session && sessionPeers.get(session)) ?? { address: '', port: 0 };
}

/** The HTTP/2 connection preface starts with these bytes; no HTTP/1 method does. */
const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/**
 * One listening port serving HTTP/1.1 and, when enabled, HTTP/2: over TLS the
 * protocol follows ALPN (h2, else http/1.1); in cleartext a connection that
 * opens with the HTTP/2 preface is h2c prior knowledge, anything else HTTP/1.1.
 */
export async function startListener(
  spec: ListenerSpec,
  onRequest: RequestHandler,
  onUpgrade?: UpgradeHandler,
): Promise<Listener> {
  const { timeouts: t, logger } = spec;
  const sockets = new Set<Duplex>();
  const sessions = new Set<Http2Session>();
  const abuseLog = new ThrottledLog(logger);
  const headerMs = t.connection_seconds * 1000;
  // Connections and HTTP/2 streams in flight share `max_connections` (connection-limit.ts).
  const budget = new ClientBudget(resolveMaxConnections(spec.maxConnections));

  const http1 = createHttp1Server(
    {
      keepAliveTimeout: t.idle_seconds * 1000,
      // How often headersTimeout/requestTimeout are checked: at least every second.
      connectionsCheckingInterval: Math.max(100, Math.min(1000, t.connection_seconds * 1000)),
    },
    onRequest,
  );
  http1.headersTimeout = headerMs;
  http1.requestTimeout = (t.connection_seconds + t.read_seconds) * 1000;
  http1.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) socket.destroy(err);
    else answerAndClose(socket, err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? REQUEST_TIMEOUT : BAD_REQUEST);
  });
  if (onUpgrade !== undefined) http1.on('upgrade', onUpgrade);
  // `listener.http1_server: lean` falls back to node:http when node's parser binding failed its
  // start-up probe (src/runtime/native-http-parser.ts; one WARN).
  const http1Front =
    spec.http1Server === undefined ? 'node' : leanHttp1Disabled(spec.logger) ? 'node' : spec.http1Server;
  const lean =
    http1Front === 'lean'
      ? new LeanHttp1Front({
          onRequest,
          onUpgrade,
          headersMs: headerMs,
          requestMs: (t.connection_seconds + t.read_seconds) * 1000,
          idleMs: t.idle_seconds * 1000,
        })
      : undefined;
  /** Hands an HTTP/1.1 connection to the front this listener serves HTTP/1.1 with. */
  const serveHttp1 = (socket: Socket | TLSSocket): void => {
    if (lean !== undefined) lean.serve(socket);
    else http1.emit('connection', socket);
  };

  const http2 = spec.http2
    ? createGuardedHttp2Server(
        {
          label: spec.label,
          limits: spec.http2Limits,
          firstStreamMs: headerMs,
          requestMs: (t.connection_seconds + t.read_seconds) * 1000,
          log: abuseLog,
          budget,
          peerAddress: (session) => sessionPeers.get(session)?.address ?? session.socket?.remoteAddress,
        },
        onRequest,
      )
    : undefined;
  // h2c connections reach nghttp2 through a JS duplex that has no peer address: 'session' fires
  // synchronously inside emit('connection'), so the address noted just before is this session's.
  let pendingPeer: { address: string; port: number } | undefined;
  http2?.on('session', (session: Http2Session) => {
    if (pendingPeer !== undefined) sessionPeers.set(session, pendingPeer);
    pendingPeer = undefined;
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  http2?.setTimeout(t.idle_seconds * 1000);

  /** Counts a connection against the budget; false (and the connection closed) when it is spent. */
  const track = (socket: Duplex): boolean => {
    if (!budget.takeConnection()) {
      socket.destroy();
      abuseLog.warn(
        'drop',
        { listener: spec.label, max_connections: budget.max, streams_in_flight: budget.streams },
        `${spec.label}: connection refused, max_connections reached (connections and HTTP/2 streams in flight)`,
      );
      return false;
    }
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      budget.releaseConnection();
    });
    return true;
  };

  let front: NetServer;
  let material: TlsMaterial | undefined;
  if (spec.tls !== undefined) {
    material = new TlsMaterial(spec.tls, logger, spec.label, spec.managedCertificates);
    const options = material.serverOptions();
    const optionalClientCert = options.requestCert && !options.rejectUnauthorized;
    const protocols = spec.http2 ? ['h2', 'http/1.1'] : ['http/1.1'];
    const tlsServer = createTlsServer({
      ...options,
      // A handshake that never completes holds a descriptor like a silent cleartext client.
      handshakeTimeout: headerMs,
      SNICallback: material.sniCallback,
      ...(material.acmeServerOptions(protocols) ?? { ALPNProtocols: protocols }),
    });
    tlsServer.on('secureConnection', (socket: TLSSocket) => {
      // A TLS-ALPN-01 validator only reads the certificate; nothing is served on that connection.
      if (socket.alpnProtocol === ACME_TLS_ALPN) {
        socket.end();
        return;
      }
      // An optional client certificate that is sent must still verify.
      if (optionalClientCert && !socket.authorized && hasPeerCertificate(socket)) {
        socket.destroy();
        return;
      }
      if (!track(socket)) return;
      if (socket.alpnProtocol === 'h2' && http2 !== undefined) http2.emit('connection', socket);
      else serveHttp1(socket);
    });
    tlsServer.on('tlsClientError', (err) =>
      logger.debug({ listener: spec.label, err: err.message }, 'TLS handshake failed'),
    );
    material.onDefaultChange = (opts) => tlsServer.setSecureContext(opts);
    material.staple(tlsServer);
    material.watch();
    front = tlsServer;
  } else if (http2 !== undefined) {
    front = createNetServer((socket) => {
      if (!track(socket)) return;
      sniff(socket, headerMs, (isH2) => {
        if (!isH2) {
          serveHttp1(socket);
          return;
        }
        pendingPeer = { address: socket.remoteAddress ?? '', port: socket.remotePort ?? 0 };
        // Small HTTP/2 frames (gRPC messages) must not wait for Nagle and the peer's delayed ACK.
        socket.setNoDelay(true);
        http2.emit('connection', replayable(socket));
      });
    });
  } else if (lean !== undefined) {
    front = createNetServer((socket) => {
      if (track(socket)) lean.serve(socket);
    });
  } else {
    http1.on('connection', track);
    front = http1;
  }

  capConnections(front, budget.max, abuseLog, spec.label);
  front.listen(spec.port, spec.bind);
  try {
    await once(front, 'listening');
  } catch (err) {
    material?.close();
    throw err;
  }
  // http1 gets its connections from `front` and never listens itself, but
  // Node starts tracking connections (closeIdleConnections, headersTimeout,
  // requestTimeout) on 'listening': without this, idle keep-alive
  // connections held every shutdown for the whole grace period and slow
  // header senders were never cut.
  if (front !== http1) http1.emit('listening');
  const address = front.address() as AddressInfo;
  logger.info(
    {
      listener: spec.label,
      bind: address.address,
      port: address.port,
      tls: spec.tls !== undefined,
      http2: spec.http2,
      http1: http1Front,
    },
    `${spec.label} listening`,
  );

  return {
    address,
    scheme: spec.tls === undefined ? 'http' : 'https',
    async close(graceMs: number) {
      material?.close();
      const closed = new Promise<void>((resolve) => front.close(() => resolve()));
      for (const session of sessions) session.close();
      const closeIdle = () => {
        http1.closeIdleConnections();
        lean?.closeIdleConnections();
      };
      closeIdle();
      const sweep = setInterval(closeIdle, 100);
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
      const drained = (async () => {
        await closed;
        while (sockets.size > 0 || sessions.size > 0) await new Promise((r) => setTimeout(r, 50));
      })();
      await Promise.race([drained, deadline]);
      clearTimeout(timer);
      if (sockets.size > 0 && spec.beforeCut !== undefined) {
        spec.beforeCut();
        // Let the close frames flush before the remaining sockets are cut.
        await Promise.race([drained, new Promise((r) => setTimeout(r, 500))]);
      }
      clearInterval(sweep);
      // Stops http1's connection checks (it is not listening, so the callback gets ERR_SERVER_NOT_RUNNING).
      if (front !== http1) http1.close(() => undefined);
      lean?.close();
      for (const session of sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
    },
  };
}

function hasPeerCertificate(socket: TLSSocket): boolean {
  const cert = socket.getPeerCertificate();
  return cert !== null && typeof cert === 'object' && 'raw' in cert && cert.raw !== undefined;
}

/**
 * nghttp2 reads straight from a socket's native handle, which would skip the
 * bytes already read while sniffing. Handing it a JS duplex makes Node wrap
 * the connection in a JS stream that sees the replayed preface. The peer
 * address is carried along for the request context. The duplex hands bytes on
 * only when the session asks (high-water mark 0: nothing piles up while it is
 * paused) and paced (StreamOpenPacer: a bounded number of new streams per turn).
 */
function replayable(socket: Socket): Duplex {
  const pacer = new StreamOpenPacer();
  /** Bytes read from the socket and not yet handed on; the socket is paused meanwhile. */
  let pending: Buffer | undefined;
  let wanted = false;
  let waiting = false;
  const handOn = (): void => {
    while (wanted && pending !== undefined) {
      const n = pacer.admit(pending);
      // Scheduled before the piece goes in, so the rest of this read comes before the dispatch of
      // the piece's requests (h2-guard: one macrotask late), and their RST_STREAMs are seen first.
      if (n < pending.length && !waiting) {
        waiting = true;
        setImmediate(nextTurn);
      }
      if (n === 0) return;
      const piece = n === pending.length ? pending : pending.subarray(0, n);
      pending = n === pending.length ? undefined : pending.subarray(n);
      wanted = false;
      duplex.push(piece);
    }
    if (wanted && pending === undefined) socket.resume();
  };
  const nextTurn = (): void => {
    waiting = false;
    handOn();
  };
  const duplex = new Duplex({
    readableHighWaterMark: 0,
    read() {
      wanted = true;
      handOn();
    },
    write(chunk: Buffer, _encoding, done) {
      socket.write(chunk, done);
    },
    final(done) {
      socket.end(done);
    },
    destroy(err, done) {
      socket.destroy(err ?? undefined);
      done(err);
    },
  });
  socket.on('data', (chunk: Buffer) => {
    pending = pending === undefined ? chunk : Buffer.concat([pending, chunk]);
    socket.pause();
    handOn();
  });
  socket.once('end', () => duplex.push(null));
  socket.once('close', () => duplex.destroy());
  socket.on('error', (err) => duplex.destroy(err));
  return duplex;
}

/** Writes a final answer and releases the descriptor once it is flushed, whether or not the client closes. */
function answerAndClose(socket: Duplex, answer: string): void {
  socket.end(answer, () => socket.destroy());
}

/**
 * Reads just enough of a cleartext connection to tell the h2 preface from
 * HTTP/1.1, then replays it. Nothing else times this stage, so it has the
 * header timeout: silence gets 408 (as HTTP/1.1 would), a partial preface is cut.
 */
function sniff(socket: Socket, timeoutMs: number, dispatch: (isH2: boolean) => void): void {
  let buffered = Buffer.alloc(0);
  const timer = setTimeout(() => {
    socket.off('data', onData);
    if (buffered.length === 0) answerAndClose(socket, REQUEST_TIMEOUT);
    else socket.destroy();
  }, timeoutMs);
  const onData = (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    const n = Math.min(buffered.length, H2_PREFACE.length);
    const matches = buffered.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    if (matches && buffered.length < H2_PREFACE.length) return;
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('end', onEnd);
    socket.pause();
    socket.unshift(buffered);
    dispatch(matches);
    socket.resume();
  };
  const onEnd = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  socket.once('close', () => clearTimeout(timer));
  socket.on('data', onData);
  socket.once('end', onEnd);
}
