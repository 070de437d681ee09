import { connect, createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import type { StreamListenerConfig } from '../config/system.js';
import type { Logger } from '../core/logger.js';
import { StreamPool, type StreamTarget } from './pool.js';
import { SniRouter } from './sni-router.js';
import { readServerName } from './sni.js';
import { listenOn, type StreamCounts, type StreamListener } from './listener.js';
import { TlsMaterial } from '../server/tls-material.js';

/** How much of a ClientHello is buffered while looking for the server name. */
const MAX_CLIENT_HELLO = 8 * 1024;

export interface TcpStreamOptions {
  logger: Logger;
  /** Budget of one upstream connect attempt, of reading the ClientHello, and of a TLS handshake. */
  connectTimeoutMs: number;
}

/**
 * A TCP stream listener: each client connection is relayed byte for byte to
 * a target of the pool (or of the SNI route its TLS server name picks). With
 * `tls`, the listener terminates TLS itself (certificates by SNI, reloaded
 * when their files change) and relays the plain bytes; without it, TLS is
 * passed through and the name is read from the ClientHello. A target that
 * refuses or times out is skipped for the next one. Half-closes travel both
 * ways. Pools and SNI routes can be replaced while tunnels stay up
 * (docs/stream.md#reload).
 */
export async function startTcpStream(
  config: StreamListenerConfig,
  options: TcpStreamOptions,
): Promise<StreamListener> {
  const { logger, connectTimeoutMs } = options;
  const label = `tcp ${config.bind}:${config.port}`;
  let router = newRouter(config, logger);
  /** Every socket of the listener, client and upstream sides, for the shutdown cut. */
  const open = new Set<Socket>();
  const clients = new Set<Socket>();
  const counts: StreamCounts = { accepted: 0, failures: 0 };
  const track = (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  };
  const accept = (client: Socket, terminatedName: string | undefined) => {
    counts.accepted++;
    clients.add(client);
    client.once('close', () => clients.delete(client));
    client.on('error', () => client.destroy());
    client.setNoDelay(true);
    // The router current when the connection arrived; a reload affects later connections only.
    const routes = router;
    const relay = (pool: StreamPool, head: Buffer) =>
      relayTo(client, pool.order(client.remoteAddress ?? ''), head, open, counts, options);
    if (!routes.routesByName) relay(routes.fallback, EMPTY);
    else if (material !== undefined) relay(routes.select(terminatedName), EMPTY);
    else
      peekServerName(client, connectTimeoutMs, (name, head) => {
        if (!client.destroyed) relay(routes.select(name), head);
      });
  };
  const material =
    config.tls === undefined ? undefined : new TlsMaterial(config.tls, logger, `stream ${label}`);
  let server: Server;
  if (material === undefined) {
    server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) =>
      accept(client, undefined),
    );
  } else {
    const tlsServer = createTlsServer(
      {
        ...material.serverOptions(),
        SNICallback: material.sniCallback,
        allowHalfOpen: true,
        handshakeTimeout: connectTimeoutMs,
      },
      (client: TLSSocket) => accept(client, serverNameOf(client)),
    );
    tlsServer.on('tlsClientError', (err) => {
      counts.failures++;
      logger.debug({ listener: `stream ${label}`, err: err.message }, 'stream tls handshake failed');
    });
    material.onDefaultChange = (secure) => tlsServer.setSecureContext(secure);
    material.staple(tlsServer);
    material.watch();
    server = tlsServer;
  }
  // Raw sockets, handshakes included: a shutdown cut must reach them too.
  server.on('connection', track);
  const address = await listenOn(server, config.bind, config.port, `stream ${label}`).catch(
    (err: unknown) => {
      material?.close();
      router.close();
      throw err;
    },
  );
  logger.info(
    { address: address.address, port: address.port, protocol: 'tcp', tls: material !== undefined },
    `stream ${label} listening`,
  );
  return {
    protocol: 'tcp',
    label,
    address,
    counts,
    open: () => clients.size,
    update(next) {
      // Terminating TLS or not, and the TLS settings, are fixed by the server object: rebind.
      if (JSON.stringify(next.tls) !== JSON.stringify(config.tls)) return false;
      const previous = router;
      try {
        router = newRouter(next, logger);
      } catch (err) {
        // A bad discovery block (checked here, not in system.yaml): keep serving the old pools.
        const e = err as Error & { path?: string };
        logger.error(
          { listener: `stream ${label}`, key: e.path, error: e.message },
          'stream pool not updated; keeping the previous one',
        );
        return true;
      }
      // After the new pools acquired their sources: an unchanged discovery block keeps running.
      previous.close();
      return true;
    },
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        server.close();
        material?.close();
        router.close();
        if (open.size === 0) return resolve();
        const cut = setTimeout(() => open.forEach((s) => s.destroy()), graceMs);
        cut.unref();
        const check = () => {
          if (open.size > 0) return;
          clearTimeout(cut);
          resolve();
        };
        open.forEach((s) => s.once('close', () => setImmediate(check)));
      }),
  };
}

/** The listener's pools; a pool with a bad discovery block throws (its key path under the listener). */
function newRouter(config: StreamListenerConfig, logger: Logger): SniRouter {
  const label = `tcp ${config.bind}:${config.port}`;
  const fallback = new StreamPool(config.upstream, logger, label);
  try {
    return new SniRouter(fallback, config.sni_routes, logger, label);
  } catch (err) {
    fallback.close();
    throw err;
  }
}

/** The server name a terminated TLS client asked for, lowercase without a trailing dot. */
function serverNameOf(client: TLSSocket): string | undefined {
  const name = (client as TLSSocket & { servername?: string | false }).servername;
  return typeof name === 'string' && name !== '' ? name.toLowerCase().replace(/\.$/, '') : undefined;
}

const EMPTY: Buffer = Buffer.alloc(0);

/**
 * Reads the start of the connection until the server name is known (or
 * cannot be: not TLS, no SNI, 8 KiB, end of stream, timeout); `done` gets
 * the name, if any, and every byte read, which must reach the upstream first.
 */
function peekServerName(
  client: Socket,
  timeoutMs: number,
  done: (name: string | undefined, head: Buffer) => void,
): void {
  let head = EMPTY;
  let finished = false;
  const finish = (name: string | undefined) => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    client.pause();
    client.off('data', onData);
    client.off('end', onEnd);
    done(name, head);
  };
  const onData = (chunk: Buffer) => {
    head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
    const result = readServerName(head);
    if (result.kind === 'found') finish(result.name);
    else if (result.kind === 'absent' || head.length >= MAX_CLIENT_HELLO) finish(undefined);
  };
  const onEnd = () => finish(undefined);
  const timer = setTimeout(() => finish(undefined), timeoutMs);
  client.on('data', onData);
  client.once('end', onEnd);
  client.resume();
}

/** Connects to the first target that answers, then relays both ways. */
function relayTo(
  client: Socket,
  targets: readonly StreamTarget[],
  head: Buffer,
  open: Set<Socket>,
  counts: StreamCounts,
  { logger, connectTimeoutMs }: TcpStreamOptions,
): void {
  const attempt = (i: number) => {
    const target = targets[i];
    if (target === undefined) {
      logger.warn({ client: client.remoteAddress }, 'stream tcp: no target accepted the connection');
      client.destroy();
      return;
    }
    const upstream = connect({ host: target.host, port: target.port, allowHalfOpen: true });
    const timer = setTimeout(() => upstream.destroy(new Error('connect timed out')), connectTimeoutMs);
    const giveUp = () => upstream.destroy();
    client.once('close', giveUp);
    upstream.once('error', (err) => {
      clearTimeout(timer);
      client.off('close', giveUp);
      if (client.destroyed) return;
      counts.failures++;
      logger.warn({ target: target.address, err: err.message }, 'stream tcp connect failed');
      attempt(i + 1);
    });
    upstream.once('connect', () => {
      clearTimeout(timer);
      client.off('close', giveUp);
      upstream.removeAllListeners('error');
      splice(client, upstream, head, target, open);
    });
  };
  attempt(0);
}

function splice(
  client: Socket,
  upstream: Socket,
  head: Buffer,
  target: StreamTarget,
  open: Set<Socket>,
): void {
  target.active++;
  open.add(upstream);
  upstream.setNoDelay(true);
  const teardown = () => {
    client.destroy();
    upstream.destroy();
  };
  upstream.on('error', teardown);
  client.on('error', teardown);
  upstream.once('close', () => {
    target.active--;
    open.delete(upstream);
    // A reset upstream must not leave the client half-open forever.
    if (!client.writableEnded) client.destroy();
  });
  client.once('close', () => {
    if (!upstream.writableEnded) upstream.destroy();
  });
  if (head.length > 0) upstream.write(head);
  client.pipe(upstream);
  upstream.pipe(client);
}
