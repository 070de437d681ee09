// The stream sockets of the Gateway TLS-passthrough, TCP and UDP listeners (src/kubernetes/stream-route.ts),
// bound on `listener.bind` at declared port + port_offset. TCP and UDP ports are the data plane's
// stream listeners (src/stream/, docs/stream.md): pools change in place, open tunnels and UDP
// sessions keep their target. TLS-passthrough ports read the ClientHello's server name (never
// terminating TLS), pick the route by it with the Gateway API's hostname rules (`*.` covers any
// number of labels, unlike `sni_routes`), replay the bytes read and relay the rest.
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { StreamListenerConfig, SystemConfig } from '../config/system.js';
import type { Logger } from '../core/logger.js';
import type { KubernetesStreamSockets } from '../kubernetes/source.js';
import type { StreamPortConfig } from '../kubernetes/translate.js';
import { StreamListeners } from './index.js';
import { listenOn } from './listener.js';
import { StreamPool } from './pool.js';
import { readServerName } from './sni.js';

/** How much of a ClientHello is buffered while looking for the server name (as src/stream/tcp.ts). */
const MAX_CLIENT_HELLO = 8 * 1024;

export interface StreamTimeouts {
  connection_seconds: number;
  idle_seconds: number;
  shutdown_timeout_seconds: number;
}

/** The pools of one passthrough port, by server name. */
class SniTable {
  readonly exact = new Map<string, StreamPool>();
  /** `.example.com` suffixes, longest first. */
  readonly wildcard: [string, StreamPool][] = [];
  any: StreamPool | undefined;

  constructor(routes: StreamPortConfig['routes']) {
    for (const r of routes) {
      const pool = new StreamPool({ targets: r.targets, load_balancing: 'round_robin' });
      if (r.hostname === null) this.any ??= pool;
      else if (r.hostname.startsWith('*.')) this.wildcard.push([r.hostname.slice(1).toLowerCase(), pool]);
      else this.exact.set(r.hostname.toLowerCase(), pool);
    }
    this.wildcard.sort((a, b) => b[0].length - a[0].length);
  }

  select(name: string | undefined): StreamPool | undefined {
    if (name === undefined) return this.any;
    const exact = this.exact.get(name);
    if (exact !== undefined) return exact;
    for (const [suffix, pool] of this.wildcard)
      if (name.endsWith(suffix) && name.length > suffix.length) return pool;
    return this.any;
  }
}

/** One TLS-passthrough socket. */
class PassthroughPort {
  table: SniTable;
  readonly #server: Server;
  readonly #open = new Set<Socket>();
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  address: AddressInfo | undefined;

  constructor(routes: StreamPortConfig['routes'], logger: Logger, timeoutMs: number) {
    this.table = new SniTable(routes);
    this.#logger = logger;
    this.#timeoutMs = timeoutMs;
    this.#server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) =>
      this.#accept(client),
    );
    this.#server.on('connection', (s: Socket) => this.#track(s));
  }

  async listen(bind: string, port: number, label: string): Promise<void> {
    this.address = await listenOn(this.#server, bind, port, label);
  }

  #track(socket: Socket): void {
    this.#open.add(socket);
    socket.once('close', () => this.#open.delete(socket));
  }

  #accept(client: Socket): void {
    client.on('error', () => client.destroy());
    client.setNoDelay(true);
    const table = this.table;
    let head: Buffer = Buffer.alloc(0);
    let done = false;
    const finish = (name: string | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      client.pause();
      client.off('data', onData);
      const pool = table.select(name);
      const targets = pool?.order(client.remoteAddress ?? '') ?? [];
      if (targets.length === 0) {
        this.#logger.debug({ serverName: name }, 'kubernetes: no TLSRoute backend for this server name');
        client.destroy();
        return;
      }
      this.#relay(client, targets, head, 0);
    };
    const onData = (chunk: Buffer) => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const result = readServerName(head);
      if (result.kind === 'found') finish(result.name);
      else if (result.kind === 'absent' || head.length >= MAX_CLIENT_HELLO) finish(undefined);
    };
    const timer = setTimeout(() => finish(undefined), this.#timeoutMs);
    client.on('data', onData);
    client.once('end', () => finish(undefined));
    client.resume();
  }

  #relay(
    client: Socket,
    targets: { host: string; port: number; active: number }[],
    head: Buffer,
    i: number,
  ): void {
    const target = targets[i];
    if (target === undefined || client.destroyed) {
      client.destroy();
      return;
    }
    const upstream = connect({ host: target.host, port: target.port, allowHalfOpen: true });
    const timer = setTimeout(() => upstream.destroy(new Error('connect timed out')), this.#timeoutMs);
    upstream.once('error', (err) => {
      clearTimeout(timer);
      this.#logger.warn(
        { target: `${target.host}:${target.port}`, err: err.message },
        'stream tcp connect failed',
      );
      this.#relay(client, targets, head, i + 1);
    });
    upstream.once('connect', () => {
      clearTimeout(timer);
      upstream.removeAllListeners('error');
      this.#track(upstream);
      target.active++;
      upstream.setNoDelay(true);
      const teardown = () => {
        client.destroy();
        upstream.destroy();
      };
      upstream.on('error', teardown);
      client.on('error', teardown);
      upstream.once('close', () => {
        target.active--;
        if (!client.writableEnded) client.destroy();
      });
      client.once('close', () => {
        if (!upstream.writableEnded) upstream.destroy();
      });
      if (head.length > 0) upstream.write(head);
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  close(graceMs: number): Promise<void> {
    this.#server.close();
    if (this.#open.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const cut = setTimeout(() => this.#open.forEach((s) => s.destroy()), graceMs);
      cut.unref();
      const check = () => {
        if (this.#open.size > 0) return;
        clearTimeout(cut);
        resolve();
      };
      this.#open.forEach((s) => s.once('close', () => setImmediate(check)));
    });
  }
}

/** Moves the stream sockets to what the latest translation declares (built by the gateway, used by the source). */
export class KubernetesStreams implements KubernetesStreamSockets {
  readonly #logger: Logger;
  readonly #bind: string;
  readonly #offset: number;
  readonly #timeouts: StreamTimeouts;
  #plain: StreamListeners | undefined;
  readonly #passthrough = new Map<number, PassthroughPort>();
  #last = '';

  constructor(logger: Logger, bind: string, offset: number, timeouts: StreamTimeouts) {
    this.#logger = logger;
    this.#bind = bind;
    this.#offset = offset;
    this.#timeouts = timeouts;
  }

  /** Bound addresses by `tcp:<declared port>` / `udp:<declared port>` (tests, logs). */
  addresses(): Map<string, AddressInfo> {
    const out = new Map<string, AddressInfo>();
    for (const [port, p] of this.#passthrough) if (p.address !== undefined) out.set(`tcp:${port}`, p.address);
    for (const l of this.#plain?.list ?? [])
      out.set(`${l.protocol}:${l.address.port - this.#offset}`, l.address);
    return out;
  }

  async sync(streams: StreamPortConfig[]): Promise<void> {
    const text = JSON.stringify(streams);
    if (text === this.#last) return;
    this.#last = text;
    const grace = this.#timeouts.shutdown_timeout_seconds * 1000;
    this.#plain ??= await StreamListeners.start(
      { timeouts: this.#timeouts, stream: [] } as unknown as SystemConfig,
      this.#logger,
    );
    const plain: StreamListenerConfig[] = streams
      .filter((s) => !s.passthrough)
      .map((s) => ({
        protocol: s.protocol,
        bind: this.#bind,
        port: s.port + this.#offset,
        upstream: { targets: s.routes[0]?.targets ?? [], load_balancing: 'round_robin' },
        sni_routes: [],
      }));
    const wanted = new Map(streams.filter((s) => s.passthrough).map((s) => [s.port, s]));
    // Ports given up first (closing unbinds at once, then drains): a TCP socket may take one over.
    for (const [port, p] of this.#passthrough)
      if (!wanted.has(port)) {
        this.#passthrough.delete(port);
        void p.close(grace);
      }
    const changes = await this.#plain.apply(plain);
    for (const f of changes.failed)
      this.#logger.error({ error: f.message }, 'kubernetes: cannot bind a Gateway TCP/UDP listener port');
    for (const [port, s] of wanted) {
      const running = this.#passthrough.get(port);
      if (running !== undefined) {
        running.table = new SniTable(s.routes);
        continue;
      }
      const p = new PassthroughPort(s.routes, this.#logger, this.#timeouts.connection_seconds * 1000);
      try {
        await p.listen(this.#bind, port + this.#offset, `gateway TLS passthrough port ${port}`);
        this.#passthrough.set(port, p);
      } catch (err) {
        this.#logger.error(
          { err, port, bound: port + this.#offset },
          'kubernetes: cannot bind a Gateway TLS listener port',
        );
      }
    }
  }

  async close(graceMs = this.#timeouts.shutdown_timeout_seconds * 1000): Promise<void> {
    const all = [...this.#passthrough.values()];
    this.#passthrough.clear();
    await Promise.all([...all.map((p) => p.close(graceMs)), this.#plain?.close(graceMs)]);
    this.#plain = undefined;
    this.#last = '';
  }
}
