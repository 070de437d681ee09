import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One registered service instance; `status` is its health check's (Consul: passing, warning, critical). */
export interface ConsulInstance {
  id: string;
  address: string;
  port: number;
  weight?: number;
  status: 'passing' | 'warning' | 'critical';
}

/** What a health query carried (for asserting that blocking queries are used). */
export interface ConsulQuery {
  service: string;
  passing: boolean;
  index: number | undefined;
  wait: string | undefined;
}

export interface ConsulServer {
  /** `http://127.0.0.1:<port>`, for `address:`. */
  readonly url: string;
  readonly queries: ConsulQuery[];
  /** Health queries being held open right now (blocking on an index). */
  readonly blocked: number;
  /** Registers (or replaces) an instance; the index moves and blocked queries answer. */
  register(service: string, instance: ConsulInstance): void;
  deregister(service: string, id: string): void;
  /** Sets the status of an instance's check. */
  setStatus(service: string, id: string, status: ConsulInstance['status']): void;
  close(): Promise<void>;
}

/** Consul's duration strings: `10s`, `1m`, `500ms` (a bare number is seconds). */
function parseWait(text: string | undefined): number {
  if (text === undefined) return 5 * 60_000;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text);
  if (m === null) return 5 * 60_000;
  const n = Number(m[1]);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? 's'] ?? 1000;
  return Math.min(n * unit, 10 * 60_000);
}

/**
 * The part of Consul's HTTP API that service discovery reads, with its documented semantics:
 * `GET /v1/health/service/<name>` (`?passing` keeps instances whose checks all pass; warning
 * does not pass), `X-Consul-Index` on every answer, and blocking queries: with `index=N` where
 * N is the current index, the answer waits until the service changes or `wait` elapses (then
 * answers the same index). Each change moves one index for the whole catalog, as Consul's
 * Raft index does.
 */
export async function startConsulServer(): Promise<ConsulServer> {
  const services = new Map<string, Map<string, ConsulInstance>>();
  let index = 1;
  const waiters = new Set<() => void>();
  const queries: ConsulQuery[] = [];
  let blocked = 0;
  const sockets = new Set<Socket>();

  const changed = () => {
    index++;
    for (const wake of [...waiters]) wake();
  };
  const entries = (name: string, passing: boolean) =>
    [...(services.get(name)?.values() ?? [])]
      .filter((i) => !passing || i.status === 'passing')
      .map((i) => ({
        Node: { ID: `node-${i.id}`, Node: `node-${i.id}`, Address: '127.0.0.1', Datacenter: 'dc1' },
        Service: {
          ID: i.id,
          Service: name,
          Tags: [],
          Address: i.address,
          Port: i.port,
          Weights: { Passing: i.weight ?? 1, Warning: 1 },
        },
        Checks: [
          { Node: `node-${i.id}`, CheckID: 'serfHealth', Name: 'Serf Health Status', Status: 'passing' },
          {
            Node: `node-${i.id}`,
            CheckID: `service:${i.id}`,
            Name: `Service '${name}' check`,
            Status: i.status,
          },
        ],
      }));
  const answer = (res: ServerResponse, name: string, passing: boolean) => {
    if (res.destroyed) return;
    res.writeHead(200, {
      'content-type': 'application/json',
      'x-consul-index': String(index),
      'x-consul-knownleader': 'true',
      'x-consul-lastcontact': '0',
    });
    res.end(JSON.stringify(entries(name, passing)));
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://consul');
    const m = /^\/v1\/health\/service\/([^/]+)$/.exec(url.pathname);
    if (req.method !== 'GET' || m === null) {
      res.writeHead(404).end('not found');
      return;
    }
    const name = decodeURIComponent(m[1]!);
    const passing = url.searchParams.has('passing');
    const rawIndex = url.searchParams.get('index');
    const wanted = rawIndex === null ? undefined : Number(rawIndex);
    const wait = url.searchParams.get('wait') ?? undefined;
    queries.push({ service: name, passing, index: wanted, wait });
    if (wanted === undefined || !Number.isFinite(wanted) || wanted < index) {
      answer(res, name, passing);
      return;
    }
    // Blocking query: held until the index moves past `wanted` or the wait elapses.
    blocked++;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      blocked--;
      clearTimeout(timer);
      waiters.delete(wake);
      answer(res, name, passing);
    };
    const wake = () => {
      if (index > wanted) finish();
    };
    const timer = setTimeout(finish, parseWait(wait));
    waiters.add(wake);
    res.on('close', () => {
      if (done) return;
      done = true;
      blocked--;
      clearTimeout(timer);
      waiters.delete(wake);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    queries,
    get blocked() {
      return blocked;
    },
    register(service, instance) {
      let instances = services.get(service);
      if (instances === undefined) services.set(service, (instances = new Map<string, ConsulInstance>()));
      instances.set(instance.id, { ...instance });
      changed();
    },
    deregister(service, id) {
      services.get(service)?.delete(id);
      changed();
    },
    setStatus(service, id, status) {
      const instance = services.get(service)?.get(id);
      if (instance === undefined) throw new Error(`no instance ${id} of ${service}`);
      instance.status = status;
      changed();
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
