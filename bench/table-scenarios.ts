/**
 * The scenarios of `npm run bench:scenarios` (bench/scenario-table.ts): for each, the
 * gateway's configuration, nginx's native one where nginx can do it, which Node peers
 * run it, and the correctness probe that must pass before anything is measured — a
 * benchmark of a config that does not do what the scenario says (no key required, no
 * 429, the header not rewritten, TLS 1.2) measures nothing. See docs/benchmarks.md#scenario-table.
 */
import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export type Peer = 'switchyard' | 'nginx' | 'minimal' | 'fastify';

export interface ProbeTarget {
  peer: Peer;
  /** The measured URL (scheme, 127.0.0.1:port, the scenario's path). */
  url: string;
  /** Port of the redis-server of the Redis-backed scenario. */
  redisPort?: number | undefined;
}

export interface TableScenario {
  name: string;
  title: string;
  path: string;
  headers?: Record<string, string>;
  tls?: boolean;
  /** A new connection (and TLS handshake) per request: `Connection: close` on every request. */
  newConnection?: boolean;
  needsRedis?: boolean;
  /** The gateway's gateway.yaml. */
  gatewayYaml(originPort: number, redisUrl?: string): string;
  /** Run on the gateway process of that scenario instead of starting one (same config). */
  sharesGatewayOf?: string;
  /** nginx's `server { }` body for this scenario (listen added by the runner), when nginx can do it. */
  nginx?: () => string;
  /** Node peers run on the same path (they proxy every path). */
  nodePeers?: ('minimal' | 'fastify')[];
  /** Throws (naming what is wrong) unless the target really does what the scenario says; returns a note. */
  probe(target: ProbeTarget): Promise<string>;
}

// --- credentials -------------------------------------------------------------

export const API_KEY = 'bench-key';
const HS_SECRET = 'bench-hs256-secret-0123456789abcdef';
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const otherRsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const RSA_PUBLIC_PEM = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();

const b64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');
function jwt(alg: 'HS256' | 'RS256', key: string | Parameters<typeof sign>[2]): string {
  const input = `${b64url(JSON.stringify({ alg, typ: 'JWT' }))}.${b64url(
    JSON.stringify({ sub: 'bench', exp: Math.floor(Date.now() / 1000) + 86_400 }),
  )}`;
  const signature =
    alg === 'HS256'
      ? createHmac('sha256', key as string)
          .update(input)
          .digest()
      : sign('sha256', Buffer.from(input), key);
  return `${input}.${b64url(signature)}`;
}
const HS_TOKEN = jwt('HS256', HS_SECRET);
const RS_TOKEN = jwt('RS256', rsa.privateKey);
const BAD_TOKENS = { HS256: jwt('HS256', 'another-secret'), RS256: jwt('RS256', otherRsa.privateKey) };

// --- probe helpers -------------------------------------------------------------

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One GET on a fresh connection (self-signed certificates accepted). */
export function get(url: string, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const send = url.startsWith('https:') ? httpsRequest : httpRequest;
    const req = send(url, { headers, agent: false, rejectUnauthorized: false, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: no answer in 10 s`)));
    req.on('error', reject);
    req.end();
  });
}

export class ProbeFailure extends Error {}

function expect(ok: boolean, what: string): asserts ok {
  if (!ok) throw new ProbeFailure(what);
}

const withPath = (url: string, path: string) => new URL(path, url).href;

/** What the origin received for this request (the origin echoes it for `x-probe: 1`). */
async function forwarded(
  url: string,
  headers: Record<string, string>,
): Promise<{ path: string; headers: Record<string, string> }> {
  const reply = await get(url, { ...headers, 'x-probe': '1' });
  expect(reply.status === 200, `GET ${url} answered ${reply.status}, not 200: ${reply.body.slice(0, 200)}`);
  return JSON.parse(reply.body) as { path: string; headers: Record<string, string> };
}

async function relays(url: string, headers: Record<string, string> = {}): Promise<void> {
  const reply = await get(url, headers);
  expect(reply.status === 200, `GET ${url} answered ${reply.status}, not 200: ${reply.body.slice(0, 200)}`);
  expect(reply.body.includes('"hello":"world"'), `GET ${url} did not relay the origin's body: ${reply.body}`);
}

/** Refused without a credential and with a wrong one, relayed with the right one. */
async function refusesWithout(
  url: string,
  name: string,
  good: string,
  bad: string,
  what: string,
): Promise<string> {
  const none = await get(url);
  expect(none.status === 401, `${what}: a request without a credential got ${none.status}, not 401`);
  const wrong = await get(url, { [name]: bad });
  expect(wrong.status === 401, `${what}: a request with a wrong credential got ${wrong.status}, not 401`);
  await relays(url, { [name]: good });
  return 'refused without (401) and with a wrong one (401), relayed with the right one';
}

/** The limiter counts on the measured path (Remaining falls by one per request). */
async function counts(url: string, headers: Record<string, string> = {}): Promise<void> {
  const first = await get(url, headers);
  const second = await get(url, headers);
  const a = Number(first.headers['x-ratelimit-remaining']);
  const b = Number(second.headers['x-ratelimit-remaining']);
  expect(
    first.status === 200 && second.status === 200 && Number.isFinite(a) && b === a - 1,
    `the limit on ${url} does not count: X-RateLimit-Remaining ${String(first.headers['x-ratelimit-remaining'])} then ${String(second.headers['x-ratelimit-remaining'])} (statuses ${first.status}, ${second.status})`,
  );
}

/** The probe twin of a rate-limit scenario (same node, a count of 2) answers 429 once the count is spent. */
async function limits(url: string, allowed: number): Promise<void> {
  const statuses: number[] = [];
  for (let i = 0; i <= allowed; i++) statuses.push((await get(url)).status);
  expect(
    statuses.slice(0, allowed).every((s) => s === 200) && statuses[allowed] === 429,
    `the limiter's probe twin ${url} answered ${statuses.join(', ')}: expected ${allowed} × 200 then 429`,
  );
}

/** Keys in the redis-server (DBSIZE). */
function redisKeys(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host: '127.0.0.1', port }, () => socket.write('DBSIZE\r\n'));
    socket.setTimeout(5000, () => socket.destroy(new Error('redis DBSIZE: no answer')));
    socket.once('data', (d: Buffer) => {
      socket.destroy();
      resolve(Number(/^:(\d+)/.exec(d.toString())?.[1] ?? NaN));
    });
    socket.once('error', reject);
  });
}

/** TLS 1.3 negotiated; returns the protocol and cipher. */
function tlsVersion(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(
      { host: hostname, port: Number(port), servername: 'localhost', rejectUnauthorized: false },
      () => {
        const protocol = socket.getProtocol();
        const cipher = socket.getCipher().standardName;
        socket.end();
        if (protocol === 'TLSv1.3') resolve(`${protocol} ${cipher}`);
        else reject(new ProbeFailure(`${url} negotiated ${String(protocol)}, not TLSv1.3`));
      },
    );
    socket.setTimeout(10_000, () => socket.destroy(new Error(`${url}: no TLS handshake in 10 s`)));
    socket.once('error', reject);
  });
}

// --- configurations -------------------------------------------------------------

const upstream = (port: number) =>
  `{ id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }`;

/** A policy: listener → `middle` (each node's success to the next, its `outs` ports to the client) → upstream → client. */
function policy(name: string, port: number, middle: { id: string; node: string; outs?: string[] }[]): string {
  const chain = ['in', ...middle.map((m) => m.id), 'up'];
  const edges = chain
    .slice(1)
    .map((to, i) => `      - { from: ${chain[i]}.${i === 0 ? 'out' : 'success'}, to: ${to}.in }`);
  for (const m of middle)
    for (const out of m.outs ?? []) edges.push(`      - { from: ${m.id}.${out}, to: out.in }`);
  edges.push('      - { from: up.success, to: out.in }');
  return `  - name: ${name}
    nodes:
      - { id: in, type: listener }
${middle.map((m) => `      - ${m.node.replace(/\n/g, '\n        ')}`).join('\n')}${middle.length > 0 ? '\n' : ''}      - ${upstream(port)}
      - { id: out, type: client }
    edges:
${edges.join('\n')}
`;
}

const routes = (...list: [string, string][]) =>
  `routes:\n${list.map(([path, name]) => `  - { name: ${name}-${path.replace(/\W/g, '')}, match: { path: ${path} }, policy: ${name} }`).join('\n')}\n`;

const limitNode = (count: number, store: string) =>
  `{ id: limit, type: limit-count, config: { count: ${count}, time_window: 3600, rejected_code: 429, ${store} } }`;

/** Two policies with the same limit-count node: `limited` (a count no run reaches, measured) and `probe-twin` (2). */
const rateLimit = (port: number, store: string) =>
  routes(['/bench', 'limited'], ['/rl-probe', 'probe-twin']) +
  'policies:\n' +
  policy('limited', port, [{ id: 'limit', node: limitNode(1_000_000_000, store), outs: ['limited'] }]) +
  policy('probe-twin', port, [{ id: 'limit', node: limitNode(2, store), outs: ['limited'] }]);

const plain = (port: number) => routes(['/bench', 'proxy']) + 'policies:\n' + policy('proxy', port, []);

const jwtNode = (alg: 'HS256' | 'RS256') =>
  alg === 'HS256'
    ? `{ id: jwt, type: jwt-auth, config: { secret: "${HS_SECRET}", algorithm: HS256 } }`
    : `id: jwt\ntype: jwt-auth\nconfig:\n  algorithm: RS256\n  public_key: |\n${RSA_PUBLIC_PEM.trim()
        .split('\n')
        .map((l) => `    ${l}`)
        .join('\n')}`;

const jwtScenario = (alg: 'HS256' | 'RS256', token: string): TableScenario => ({
  name: `jwt-${alg.toLowerCase()}`,
  title: `jwt-auth (${alg}) → upstream`,
  path: '/bench',
  headers: { authorization: `Bearer ${token}` },
  gatewayYaml: (port) =>
    routes(['/bench', 'jwt']) +
    'policies:\n' +
    policy('jwt', port, [{ id: 'jwt', node: jwtNode(alg), outs: ['denied'] }]),
  probe: ({ url }) =>
    refusesWithout(url, 'authorization', `Bearer ${token}`, `Bearer ${BAD_TOKENS[alg]}`, `jwt ${alg}`),
});

const ROUTES = 1000;
const routePath = (i: number) => `/r/${String(i).padStart(4, '0')}`;

const tlsScenario = (newConnection: boolean): TableScenario => ({
  name: newConnection ? 'tls-new-connection' : 'tls-keep-alive',
  title: newConnection
    ? 'TLS 1.3 termination, a new connection (handshake) per request'
    : 'TLS 1.3 termination, keep-alive',
  path: '/bench',
  tls: true,
  newConnection,
  ...(newConnection ? { sharesGatewayOf: 'tls-keep-alive' } : {}),
  gatewayYaml: plain,
  nginx: () => 'location / { proxy_pass http://origin; }',
  nodePeers: ['minimal'],
  probe: async ({ url }) => {
    const version = await tlsVersion(url);
    await relays(url, newConnection ? { connection: 'close' } : {});
    return version;
  },
});

export const tableScenarios: TableScenario[] = [
  {
    name: 'proxy',
    title: 'proxy: listener → upstream → client',
    path: '/bench',
    gatewayYaml: plain,
    nginx: () => 'location / { proxy_pass http://origin; }',
    nodePeers: ['minimal', 'fastify'],
    probe: async ({ url }) => {
      await relays(url);
      const seen = await forwarded(url, {});
      expect(seen.path === '/bench', `the origin was asked for ${seen.path}, not /bench`);
      return 'relays the origin body and path';
    },
  },
  {
    name: 'header-rewrite',
    title: 'header-rewrite: proxy-rewrite sets a request header',
    path: '/bench',
    gatewayYaml: (port) =>
      routes(['/bench', 'rewrite']) +
      'policies:\n' +
      policy('rewrite', port, [
        {
          id: 'rw',
          node: '{ id: rw, type: proxy-rewrite, config: { headers: { set: { x-bench-rewrite: "1" } } } }',
        },
      ]),
    nginx: () =>
      'location / { proxy_pass http://origin; proxy_set_header Host $host; proxy_set_header Connection ""; proxy_set_header X-Bench-Rewrite 1; }',
    probe: async ({ url }) => {
      const seen = await forwarded(url, { 'x-bench-rewrite': 'from-client' });
      expect(
        seen.headers['x-bench-rewrite'] === '1',
        `the origin got x-bench-rewrite: ${String(seen.headers['x-bench-rewrite'])}, not the rewritten 1`,
      );
      return "the client's x-bench-rewrite replaced by 1";
    },
  },
  {
    name: 'key-auth',
    title: 'key-auth → upstream',
    path: '/bench',
    headers: { 'x-api-key': API_KEY },
    gatewayYaml: (port) =>
      routes(['/bench', 'keyed']) +
      'policies:\n' +
      policy('keyed', port, [
        {
          id: 'auth',
          node: `{ id: auth, type: key-auth, config: { keys: [${API_KEY}] } }`,
          outs: ['denied'],
        },
      ]),
    probe: ({ url }) => refusesWithout(url, 'x-api-key', API_KEY, 'not-the-key', 'key-auth'),
  },
  jwtScenario('HS256', HS_TOKEN),
  jwtScenario('RS256', RS_TOKEN),
  {
    name: 'rate-limit-local',
    title: 'rate-limit: limit-count, local counters',
    path: '/bench',
    gatewayYaml: (port) => rateLimit(port, 'policy: local'),
    nginx: () =>
      'location = /bench { limit_req zone=bench burst=1000000 nodelay; proxy_pass http://origin; }\n' +
      '    location = /rl-probe { limit_req zone=probe; proxy_pass http://origin; }',
    probe: async ({ peer, url }) => {
      if (peer === 'switchyard') await counts(url);
      else await relays(url);
      await limits(withPath(url, '/rl-probe'), peer === 'nginx' ? 1 : 2);
      return peer === 'switchyard'
        ? 'counts on the measured route; its twin (count 2) answers 429 on the 3rd'
        : 'limit_req twin (1 r/min) answers 429 on the 2nd';
    },
  },
  {
    name: 'rate-limit-redis',
    title: 'rate-limit: limit-count in redis (one script call per request)',
    path: '/bench',
    needsRedis: true,
    gatewayYaml: (port, redisUrl = 'redis://127.0.0.1:6379') =>
      `stores:\n  - { name: bench, type: redis, url: "${redisUrl}" }\n` +
      rateLimit(port, 'policy: redis, store: bench'),
    probe: async ({ url, redisPort }) => {
      const before = redisPort === undefined ? 0 : await redisKeys(redisPort);
      await counts(url);
      await limits(withPath(url, '/rl-probe'), 2);
      const keys = redisPort === undefined ? 0 : await redisKeys(redisPort);
      expect(keys > before || keys >= 2, `redis holds ${keys} keys: the counters are not in redis`);
      return `counts in redis (${keys} keys); its twin answers 429 on the 3rd`;
    },
  },
  {
    name: 'routes-1k',
    title: `routes-1k: ${ROUTES} routes, the last one matched`,
    path: routePath(ROUTES),
    gatewayYaml: (port) =>
      routes(...Array.from({ length: ROUTES }, (_, i): [string, string] => [routePath(i + 1), 'proxy'])) +
      'policies:\n' +
      policy('proxy', port, []),
    nginx: () =>
      Array.from(
        { length: ROUTES },
        (_, i) => `location = ${routePath(i + 1)} { proxy_pass http://origin; }`,
      ).join('\n    ') + '\n    location / { return 404; }',
    probe: async ({ url }) => {
      const seen = await forwarded(url, {});
      expect(seen.path === routePath(ROUTES), `the origin was asked for ${seen.path}`);
      const beyond = await get(withPath(url, routePath(ROUTES + 1)));
      expect(beyond.status === 404, `${routePath(ROUTES + 1)} (no route) answered ${beyond.status}, not 404`);
      return `${routePath(ROUTES)} relayed, ${routePath(ROUTES + 1)} 404`;
    },
  },
  {
    name: 'script',
    title: 'script: a Lua node sets a request header',
    path: '/bench',
    gatewayYaml: (port) =>
      routes(['/bench', 'scripted']) +
      'policies:\n' +
      policy('scripted', port, [
        {
          id: 'tag',
          node: `id: tag
type: script
config:
  inline: |
    function execute(ctx)
      ctx.request.headers["x-bench-script"] = "1"
      return ctx
    end`,
          outs: ['respond'],
        },
      ]),
    probe: async ({ url }) => {
      const seen = await forwarded(url, {});
      expect(
        seen.headers['x-bench-script'] === '1',
        `the origin got x-bench-script: ${String(seen.headers['x-bench-script'])}: the Lua node did not run`,
      );
      return 'the Lua node set x-bench-script';
    },
  },
  {
    name: 'chain',
    title: 'chain: key-auth → limit-count → proxy-rewrite → request-id → upstream',
    path: '/bench',
    headers: { 'x-api-key': API_KEY },
    gatewayYaml: (port) =>
      routes(['/bench', 'chain']) +
      'policies:\n' +
      policy('chain', port, [
        {
          id: 'auth',
          node: `{ id: auth, type: key-auth, config: { keys: [${API_KEY}] } }`,
          outs: ['denied'],
        },
        { id: 'limit', node: limitNode(1_000_000_000, 'policy: local'), outs: ['limited'] },
        {
          id: 'rw',
          node: '{ id: rw, type: proxy-rewrite, config: { headers: { set: { x-bench-rewrite: "1" } } } }',
        },
        { id: 'rid', node: '{ id: rid, type: request-id }' },
      ]),
    probe: async ({ url }) => {
      const none = await get(url);
      expect(none.status === 401, `chain: a request without a key got ${none.status}, not 401`);
      await counts(url, { 'x-api-key': API_KEY });
      const seen = await forwarded(url, { 'x-api-key': API_KEY, 'x-bench-rewrite': 'from-client' });
      expect(seen.headers['x-bench-rewrite'] === '1', 'chain: the header was not rewritten');
      expect((seen.headers['x-request-id'] ?? '') !== '', 'chain: the origin got no x-request-id');
      return 'key required, counted, header rewritten, request id sent';
    },
  },
  tlsScenario(false),
  tlsScenario(true),
];

/** nginx's http-level configuration around the scenarios' server blocks. */
export function nginxConfig(
  dir: string,
  originPort: number,
  servers: string[],
  tls: { cert: string; key: string },
): string {
  return `worker_processes 1;
daemon off;
master_process on;
user root root;
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_timeout 60s;
  keepalive_requests 1000000;
  proxy_http_version 1.1;
  proxy_set_header Host $host;
  proxy_set_header Connection "";
  limit_req_zone $binary_remote_addr zone=bench:1m rate=10000000r/s;
  limit_req_zone $binary_remote_addr zone=probe:1m rate=1r/m;
  limit_req_status 429;
  limit_req_log_level info;
  ssl_certificate ${tls.cert};
  ssl_certificate_key ${tls.key};
  ssl_protocols TLSv1.3;
  upstream origin { server 127.0.0.1:${originPort}; keepalive 128; keepalive_requests 1000000; }
${servers.join('\n')}
}
`;
}
