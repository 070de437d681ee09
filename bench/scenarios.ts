/**
 * Gateway configurations measured by `npm run bench`. Each gets its own
 * gateway process; add a scenario here to measure a plugin chain.
 */
export interface Scenario {
  name: string;
  title: string;
  /** Request path sent by the load generator. */
  path: string;
  gatewayYaml(originPort: number): string;
}

const upstream = (port: number) =>
  `{ id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }`;

export const scenarios: Scenario[] = [
  {
    name: 'one-node',
    title: 'switchyard: listener → upstream → client',
    path: '/bench',
    gatewayYaml: (port) => `
routes:
  - { name: bench, match: { path: /bench }, policy: one-node }
policies:
  - name: one-node
    nodes:
      - { id: in, type: listener }
      - ${upstream(port)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`,
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
];
