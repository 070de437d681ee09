/**
 * Gateway configurations measured by `npm run bench`. Each gets its own
 * gateway process; add a scenario here to measure a plugin chain.
 */

/** The origin's response: `hello` is a 42-byte JSON body, `16k` a 16 KiB one (origin path /16k). */
export type Payload = 'hello' | '16k';

/** Path the peers (minimal proxy, fastify) are driven on for each payload. */
export const peerPath: Record<Payload, string> = { hello: '/bench', '16k': '/16k' };

export interface Scenario {
  name: string;
  title: string;
  /** Request path sent by the load generator. */
  path: string;
  /** Which origin response it relays (default `hello`); the ratios compare with the peers on the same one. */
  payload?: Payload;
  /** Request headers sent with every request. */
  headers?: Record<string, string>;
  /** Serve the data plane over TLS (a throwaway self-signed certificate). */
  tls?: boolean;
  /** Drive the load over HTTP/2 (h2load) instead of HTTP/1.1 (wrk). */
  http2?: boolean;
  /** Start a redis-server for this run and pass its URL to `gatewayYaml`. */
  needsRedis?: boolean;
  /** Extra top-level system.yaml text (e.g. a `debug:` block). */
  systemYaml?: string;
  /** Extra keys of the `listener:` block (e.g. `http1_server: node`). */
  listener?: string;
  gatewayYaml(originPort: number, redisUrl?: string): string;
}

const upstream = (port: number) =>
  `{ id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }`;

const oneNode = (port: number, path = '/bench') => `
routes:
  - { name: bench, match: { path: ${path} }, policy: one-node }
policies:
  - name: one-node
    nodes:
      - { id: in, type: listener }
      - ${upstream(port)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`;

/** One limit-count in front of the upstream; the count is out of reach so every request is counted and passes. */
const limitCount = (port: number, policy: string) => `
routes:
  - { name: bench, match: { path: /bench }, policy: limited }
policies:
  - name: limited
    nodes:
      - { id: in, type: listener }
      - { id: limit, type: limit-count, config: { count: 1000000000, time_window: 3600, ${policy} } }
      - ${upstream(port)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: limit.in }
      - { from: limit.success, to: up.in }
      - { from: limit.limited, to: out.in }
      - { from: up.success, to: out.in }
`;

export const scenarios: Scenario[] = [
  {
    name: 'one-node',
    title: 'switchyard: listener → upstream → client',
    path: '/bench',
    gatewayYaml: (port) => oneNode(port),
  },
  {
    name: 'one-node-16k',
    title: 'switchyard: listener → upstream → client, 16 KiB body',
    path: '/16k',
    payload: '16k',
    gatewayYaml: (port) => oneNode(port, '/16k'),
  },
  {
    name: 'one-node-node-front',
    title: 'switchyard, node:http front (listener.http1_server: node): listener → upstream → client',
    path: '/bench',
    listener: 'http1_server: node',
    gatewayYaml: (port) => oneNode(port),
  },
  {
    name: 'five-node',
    title: 'switchyard: 5 nodes (rewrite → upstream → rewrite)',
    path: '/api/bench',
    gatewayYaml: (port) => `
routes:
  - { name: bench, match: { path: /api/* }, policy: five-node }
policies:
  - name: five-node
    nodes:
      - { id: in, type: listener }
      - { id: rw-req, type: proxy-rewrite, config: { phase: request, strip_path_prefix: /api, add_headers: { x-bench: "1" } } }
      - ${upstream(port)}
      - { id: rw-res, type: proxy-rewrite, config: { phase: response, remove_headers: [x-powered-by] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: rw-req.in }
      - { from: rw-req.success, to: up.in }
      - { from: up.success, to: rw-res.in }
      - { from: rw-res.success, to: out.in }
`,
  },
  {
    name: 'chain',
    title: 'switchyard: cors → real-ip → ip-restriction → key-auth → request-id → proxy-rewrite → upstream',
    path: '/chain/bench',
    headers: { 'x-api-key': 'bench-key', origin: 'https://app.example' },
    gatewayYaml: (port) => `
routes:
  - { name: bench, match: { path: /chain/* }, policy: chain }
policies:
  - name: chain
    nodes:
      - { id: in, type: listener }
      - { id: cors, type: cors, config: { allowed_origins: ["https://app.example"] } }
      - { id: real-ip, type: real-ip, config: { source: http_x_forwarded_for, trusted_addresses: [127.0.0.1/32] } }
      - { id: allow, type: ip-restriction, config: { allow: [127.0.0.0/8] } }
      - { id: auth, type: key-auth, config: { keys: [bench-key] } }
      - { id: rid, type: request-id }
      - { id: rw, type: proxy-rewrite, config: { strip_path_prefix: /chain } }
      - ${upstream(port)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: cors.in }
      - { from: cors.success, to: real-ip.in }
      - { from: cors.preflight, to: out.in }
      - { from: real-ip.success, to: allow.in }
      - { from: allow.success, to: auth.in }
      - { from: allow.denied, to: out.in }
      - { from: auth.success, to: rid.in }
      - { from: auth.denied, to: out.in }
      - { from: rid.success, to: rw.in }
      - { from: rw.success, to: up.in }
      - { from: up.success, to: out.in }
`,
  },
  {
    name: 'tls-h1',
    title: 'switchyard over TLS, HTTP/1.1: listener → upstream → client',
    path: '/bench',
    tls: true,
    gatewayYaml: (port) => oneNode(port),
  },
  {
    name: 'tls-h2',
    title: 'switchyard over TLS, HTTP/2 (h2load): listener → upstream → client',
    path: '/bench',
    tls: true,
    http2: true,
    gatewayYaml: (port) => oneNode(port),
  },
  {
    name: 'limit-count-local',
    title: 'switchyard: limit-count (local) → upstream',
    path: '/bench',
    gatewayYaml: (port) => limitCount(port, 'policy: local'),
  },
  {
    name: 'limit-count-redis',
    title: 'switchyard: limit-count (redis, one script call per request) → upstream',
    path: '/bench',
    needsRedis: true,
    gatewayYaml: (port, redisUrl = 'redis://127.0.0.1:6379') =>
      `stores:\n  - { name: bench, type: redis, url: "${redisUrl}" }\n${limitCount(port, 'policy: redis, store: bench')}`,
  },
  {
    name: 'debug-on',
    title: 'switchyard, debug enabled, no trigger header: listener → upstream → client',
    path: '/bench',
    systemYaml: 'debug: { enabled: true }\n',
    gatewayYaml: (port) => oneNode(port),
  },
  {
    name: 'script',
    title: 'switchyard: listener → script (sets a header) → upstream → client',
    path: '/bench',
    gatewayYaml: (port) => `
routes:
  - { name: bench, match: { path: /bench }, policy: scripted }
policies:
  - name: scripted
    nodes:
      - { id: in, type: listener }
      - id: tag
        type: script
        config:
          inline: |
            function execute(ctx)
              ctx.request.headers["x-bench-script"] = "1"
              return ctx
            end
      - ${upstream(port)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: tag.in }
      - { from: tag.success, to: up.in }
      - { from: tag.respond, to: out.in }
      - { from: up.success, to: out.in }
`,
  },
];
