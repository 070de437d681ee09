/**
 * A gateway configuration with `count` routes and `count` policies, for bench/config-scale.ts,
 * test/engine/config-scale.test.ts and test/config/scale.test.ts. Routes mix exact paths with methods, `/*` prefixes and host
 * routes; policies alternate between a templated mocking answer and the shipped
 * rewrite → upstream → error-handler chain, so compile exercises templates, schemas and pools.
 * `version` changes every mocking answer, so a reload is visible in responses.
 */
export interface ScaleOptions {
  upstreamPort: number;
  version?: string;
  /** The version of policy `i`'s answer, when it is not `version` for all (a reload changing a few). */
  versionOf?: (i: number) => string;
}

interface ScaleConfig {
  routes: Record<string, unknown>[];
  policies: Record<string, unknown>[];
}

function route(i: number): Record<string, unknown> {
  const match =
    i % 3 === 0
      ? { path: `/items/${i}`, methods: ['GET', 'HEAD'] }
      : i % 3 === 1
        ? { path: `/svc${i}/*` }
        : { path: '/h/*', host: `svc${i}.example.test` };
  return { name: `r${i}`, match, policy: `p${i}` };
}

function policy(
  i: number,
  { upstreamPort, version = 'v1', versionOf }: ScaleOptions,
): Record<string, unknown> {
  if (i % 2 === 0) {
    const answer = versionOf?.(i) ?? version;
    return {
      name: `p${i}`,
      nodes: [
        { id: 'listener', type: 'listener' },
        {
          id: 'answer',
          type: 'mocking',
          config: {
            response_status: 200,
            content_type: 'text/plain',
            response_example: `${answer} p${i} {{request.path}}`,
          },
        },
        { id: 'client', type: 'client' },
      ],
      edges: [
        { from: 'listener.out', to: 'answer.in' },
        { from: 'answer.success', to: 'client.in' },
      ],
    };
  }
  return {
    name: `p${i}`,
    error_handler: 'oops',
    nodes: [
      { id: 'listener', type: 'listener' },
      { id: 'rewrite', type: 'proxy-rewrite', config: { phase: 'request', strip_path_prefix: `/svc${i}` } },
      {
        id: 'backend',
        type: 'upstream',
        config: { targets: [{ host: '127.0.0.1', port: upstreamPort }], timeout_ms: 5000 },
      },
      {
        id: 'oops',
        type: 'error-handler',
        config: { status_code: 502, body_template: '{"error": "{{error.code}}"}' },
      },
      { id: 'client', type: 'client' },
    ],
    edges: [
      { from: 'listener.out', to: 'rewrite.in' },
      { from: 'rewrite.success', to: 'backend.in' },
      { from: 'backend.success', to: 'client.in' },
      { from: 'backend.error', to: 'oops.in' },
      { from: 'oops.success', to: 'client.in' },
    ],
  };
}

/** The configuration as parsed data (what parseGatewayConfig hands to checkGatewayShape). */
export function scaleConfig(count: number, options: ScaleOptions): ScaleConfig {
  return {
    routes: Array.from({ length: count }, (_, i) => route(i)),
    policies: Array.from({ length: count }, (_, i) => policy(i, options)),
  };
}

/** The same configuration as gateway.yaml text: one flow mapping (JSON, which YAML includes) per item. */
export function scaleConfigYaml(count: number, options: ScaleOptions): string {
  const { routes, policies } = scaleConfig(count, options);
  const items = (list: unknown[]) => list.map((item) => `  - ${JSON.stringify(item)}`).join('\n');
  return `routes:\n${items(routes)}\npolicies:\n${items(policies)}\n`;
}
