import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';
import type { StreamListenerConfig } from '../config/system.js';
import type { Logger } from '../core/logger.js';
import { bindOn, type StreamCounts, type StreamListener } from './listener.js';
import { StreamPool, type StreamTarget } from './pool.js';

/** Datagram sessions kept at once; datagrams from further clients are dropped until some expire. */
export const MAX_UDP_SESSIONS = 10_000;

export interface UdpStreamOptions {
  logger: Logger;
  /** A session with no datagram either way for this long is closed. */
  idleTimeoutMs: number;
}

interface Session {
  readonly upstream: Socket;
  readonly target: StreamTarget;
  lastSeen: number;
  /** Datagrams that arrived before the upstream socket was connected; null once it is. */
  pending: Buffer[] | null;
}

/**
 * A UDP stream listener: each client address and port gets a session, a
 * socket connected to one target of the pool, chosen when its first
 * datagram arrives. Datagrams go through unchanged both ways; replies leave
 * from the listener's own address, so the client sees one peer.
 */
export async function startUdpStream(
  config: StreamListenerConfig,
  options: UdpStreamOptions,
): Promise<StreamListener> {
  const { logger, idleTimeoutMs } = options;
  const label = `udp ${config.bind}:${config.port}`;
  const counts: StreamCounts = { accepted: 0, failures: 0 };
  if (config.sni_routes.length > 0)
    logger.warn(
      { listener: `stream ${label}` },
      'sni_routes apply to TCP only; ignored for this UDP listener',
    );
  let pool = new StreamPool(config.upstream, logger, label);
  const sessions = new Map<string, Session>();
  const server = createSocket({ type: isIPv6(config.bind) ? 'udp6' : 'udp4' });
  let warnedFull = false;

  const end = (key: string, session: Session) => {
    if (sessions.get(key) !== session) return;
    sessions.delete(key);
    session.target.active--;
    session.upstream.close();
  };

  const open = (key: string, client: RemoteInfo): Session | undefined => {
    const target = pool.order(client.address)[0];
    if (target === undefined) return undefined;
    const upstream = createSocket({ type: isIPv6(target.host) ? 'udp6' : 'udp4' });
    const session: Session = { upstream, target, lastSeen: Date.now(), pending: [] };
    sessions.set(key, session);
    counts.accepted++;
    target.active++;
    upstream.on('message', (reply) => {
      session.lastSeen = Date.now();
      server.send(reply, client.port, client.address);
    });
    upstream.on('error', (err) => {
      counts.failures++;
      logger.warn({ target: target.address, client: key, err: err.message }, 'stream udp session failed');
      end(key, session);
    });
    upstream.connect(target.port, target.host, () => {
      const queued = session.pending ?? [];
      session.pending = null;
      for (const datagram of queued) upstream.send(datagram);
    });
    return session;
  };

  server.on('message', (datagram, client) => {
    const key = `${client.address}|${client.port}`;
    let session = sessions.get(key);
    if (session === undefined) {
      if (sessions.size >= MAX_UDP_SESSIONS) {
        if (!warnedFull)
          logger.warn(
            { listener: `stream ${label}` },
            `${MAX_UDP_SESSIONS} sessions open; dropping new clients`,
          );
        warnedFull = true;
        return;
      }
      session = open(key, client);
      if (session === undefined) return;
    }
    session.lastSeen = Date.now();
    if (session.pending !== null) session.pending.push(datagram);
    else session.upstream.send(datagram);
  });
  server.on('error', (err) =>
    logger.error({ listener: `stream ${label}`, err: err.message }, 'stream udp socket error'),
  );

  const address = await bindOn(server, config.bind, config.port, `stream ${label}`).catch((err: unknown) => {
    pool.close();
    throw err;
  });
  const sweep = setInterval(
    () => {
      const cutoff = Date.now() - idleTimeoutMs;
      for (const [key, session] of sessions) if (session.lastSeen < cutoff) end(key, session);
      if (sessions.size < MAX_UDP_SESSIONS) warnedFull = false;
    },
    Math.max(50, Math.min(idleTimeoutMs / 4, 10_000)),
  );
  sweep.unref();
  logger.info({ address: address.address, port: address.port, protocol: 'udp' }, `stream ${label} listening`);
  return {
    protocol: 'udp',
    label,
    address,
    counts,
    open: () => sessions.size,
    // New sessions use the new pool; a session keeps its target until it expires.
    update(next) {
      const previous = pool;
      try {
        pool = new StreamPool(next.upstream, logger, label);
      } catch (err) {
        // A bad discovery block (checked here, not in system.yaml): keep serving the old pools.
        const e = err as Error & { path?: string };
        logger.error(
          { listener: `stream ${label}`, key: e.path, error: e.message },
          'stream pool not updated; keeping the previous one',
        );
        return true;
      }
      previous.close();
      return true;
    },
    // Datagrams have no graceful end: stop, and close every session now.
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(sweep);
        pool.close();
        for (const [key, session] of sessions) end(key, session);
        server.close(() => resolve());
      }),
  };
}
