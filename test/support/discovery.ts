import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { RunningGateway } from './in-process.js';

/**
 * An origin on `ip` (any 127.0.0.0/8 address) answering 200 with `x-origin: <name>`, and
 * `/healthz` with 200 while `healthy`, else 503 (for active health checks).
 */
export interface NamedOrigin {
  readonly name: string;
  readonly ip: string;
  readonly port: number;
  /** `ip:port`, as the gateway labels the target. */
  readonly address: string;
  healthy: boolean;
  close(): Promise<void>;
}

export async function startNamedOrigin(name: string, ip = '127.0.0.1', port = 0): Promise<NamedOrigin> {
  const sockets = new Set<Socket>();
  const state = { healthy: true };
  const server: Server = createServer((req, res) => {
    if (req.url === '/healthz') {
      res.writeHead(state.healthy ? 200 : 503).end();
      return;
    }
    res.writeHead(200, { 'x-origin': name, 'content-type': 'text/plain' });
    res.end(name);
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(port, ip);
  await once(server, 'listening');
  const bound = (server.address() as AddressInfo).port;
  return {
    name,
    ip,
    port: bound,
    address: `${ip}:${bound}`,
    get healthy() {
      return state.healthy;
    },
    set healthy(value: boolean) {
      state.healthy = value;
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** Two origins on the same port of two loopback addresses (for A records that move). */
export async function startOriginPair(
  names: [string, string],
  ips: [string, string],
): Promise<[NamedOrigin, NamedOrigin]> {
  for (let attempt = 0; ; attempt++) {
    const first = await startNamedOrigin(names[0], ips[0]);
    try {
      return [first, await startNamedOrigin(names[1], ips[1], first.port)];
    } catch (err) {
      await first.close();
      if (attempt >= 5) throw err;
    }
  }
}

/** Who answered: the `x-origin` header, or `<status> <error code>` for a gateway error. */
export async function whoAnswers(url: string): Promise<string> {
  const res = await fetch(url);
  const body = await res.text();
  const origin = res.headers.get('x-origin');
  if (origin !== null && res.status === 200) return origin;
  let code: string;
  try {
    const parsed = (JSON.parse(body) as { code?: unknown }).code;
    code = typeof parsed === 'string' ? parsed : '';
  } catch {
    code = body.slice(0, 80);
  }
  return `${res.status} ${code}`;
}

/** How many of `n` sequential requests each origin answered. */
export async function tally(url: string, n: number): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const who = await whoAnswers(url);
    counts.set(who, (counts.get(who) ?? 0) + 1);
  }
  return counts;
}

/** Samples of metric `name` whose labels include `labels`, from the gateway's registry. */
export async function samples(
  gw: RunningGateway,
  name: string,
  labels: Record<string, string> = {},
): Promise<number[]> {
  const text = (await gw.gateway.metrics.render()).body;
  const out: number[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const got = new Map([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got.get(k) === v)) out.push(Number(m[3]));
  }
  return out;
}

/** The sum of the matching samples (0 when there is none). */
export async function metricSum(
  gw: RunningGateway,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  return (await samples(gw, name, labels)).reduce((a, b) => a + b, 0);
}

/** An upstream policy whose upstream node has `config` (YAML flow text). */
export function upstreamPolicy(name: string, config: string): string {
  return [
    `  - name: ${name}`,
    '    nodes:',
    '      - { id: listener, type: listener }',
    `      - { id: up, type: upstream, config: ${config} }`,
    '      - { id: client, type: client }',
    '    edges:',
    '      - { from: listener.out, to: up.in }',
    '      - { from: up.success, to: client.in }',
  ].join('\n');
}
