import { startAdmin, read, type AdminHarness } from '../admin/harness.js';
import { deadPort, echo, startOrigin, type Origin } from '../support/origins.js';

export const TRIGGER = 'x-switchyard-debug';
export const TRACE_ID = 'x-switchyard-trace-id';
export const ORIGIN = 'x-switchyard-response-origin';

/**
 * The reference e2e fixture in our words: `echo-api` (/api/*: cors → strip
 * /api → upstream echo), `secure-api` (/secure/*: key-auth → echo), `dead-api`
 * (/dead/*: an upstream that refuses connections → error-handler 502) and
 * `sn-api` (/sn/*: a supernode instance `sec` wrapping key-auth).
 */
export function fixtureYaml(echoPort: number, dead: number): string {
  return `
supernodes:
  - name: guarded
    nodes:
      - { id: input, type: input }
      - { id: output, type: output }
      - { id: blocked, type: output }
      - { id: auth, type: key-auth, config: { keys: [sn-key], header_name: x-api-key } }
      - { id: tag, type: proxy-rewrite, config: { phase: request, add_headers: { x-guarded: "yes" } } }
    edges:
      - { from: input.out, to: auth.in }
      - { from: auth.success, to: tag.in }
      - { from: tag.success, to: output.in }
      - { from: auth.denied, to: blocked.in }
routes:
  - { name: echo-api, match: { path: /api/* }, policy: echo-policy }
  - { name: secure-api, match: { path: /secure/* }, policy: secure-policy }
  - { name: dead-api, match: { path: /dead/* }, policy: dead-policy }
  - { name: sn-api, match: { path: /sn/* }, policy: sn-policy }
policies:
  - name: echo-policy
    nodes:
      - { id: listener, type: listener }
      - { id: cors, type: cors, config: { allowed_origins: ["*"] } }
      - { id: strip-prefix, type: proxy-rewrite, config: { phase: request, strip_path_prefix: /api } }
      - id: echo-backend
        type: upstream
        config: { targets: [{ host: 127.0.0.1, port: ${echoPort} }] }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: cors.in }
      - { from: cors.success, to: strip-prefix.in }
      - { from: cors.preflight, to: client.in }
      - { from: strip-prefix.success, to: echo-backend.in }
      - { from: echo-backend.success, to: client.in }
  - name: secure-policy
    nodes:
      - { id: listener, type: listener }
      - { id: auth, type: key-auth, config: { keys: [e2e-secret], header_name: x-api-key } }
      - id: backend
        type: upstream
        config: { targets: [{ host: 127.0.0.1, port: ${echoPort} }] }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: auth.in }
      - { from: auth.success, to: backend.in }
      - { from: auth.denied, to: client.in }
      - { from: backend.success, to: client.in }
  - name: dead-policy
    nodes:
      - { id: listener, type: listener }
      - id: backend
        type: upstream
        config: { targets: [{ host: 127.0.0.1, port: ${dead} }], timeout_ms: 2000 }
      - id: error-handler
        type: error-handler
        config: { status_code: 502, body_template: '{"error": "{{error.code}}"}' }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: backend.in }
      - { from: backend.success, to: client.in }
      - { from: backend.error, to: error-handler.in }
      - { from: error-handler.success, to: client.in }
  - name: sn-policy
    nodes:
      - { id: listener, type: listener }
      - { id: sec, type: supernode, config: { name: guarded } }
      - id: backend
        type: mocking
        config: { response_example: 'guarded hello', content_type: text/plain }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: sec.in }
      - { from: sec.success, to: backend.in }
      - { from: sec.blocked, to: client.in }
      - { from: backend.success, to: client.in }
`;
}

export interface DebugHarness extends AdminHarness {
  origin: Origin;
  /** Authenticated JSON call; resolves to status and parsed body. */
  json<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }>;
}

/** The fixture behind an in-process gateway with its admin API; `debug` is the YAML flow body of `debug:`. */
export async function startDebug(debug = 'enabled: true', gatewayYaml?: string): Promise<DebugHarness> {
  const origin = await startOrigin(echo('echo'));
  const dead = await deadPort();
  const harness = await startAdmin({
    gatewayYaml: gatewayYaml ?? fixtureYaml(origin.port, dead),
    system: `debug: { ${debug} }`,
  });
  return {
    ...harness,
    origin,
    async json<T>(method: string, path: string, body?: unknown) {
      const res = await read(await harness.call(method, path, body));
      return res as { status: number; body: T };
    },
    async stop() {
      await harness.stop();
      await origin.close();
    },
  };
}

export interface Change {
  path: string;
  kind: string;
  before?: string;
  after?: string;
}

export interface Snapshot {
  request: {
    method: string;
    path: string;
    headers: Record<string, string[]>;
    query_params: Record<string, string[]>;
    body: { len: number; text?: string; unchanged?: boolean; truncated?: boolean };
  };
  response: {
    status_code: number;
    headers: Record<string, string[]>;
    body: { len: number; text?: string; streamed?: boolean };
  };
  message: Record<string, unknown>;
  errors: { node_id: string; code: string }[];
}

export interface Step {
  index: number;
  node_id: string;
  node_type: string;
  edge: string;
  port?: string;
  next_node_id?: string;
  outcome: { kind: string; code?: string };
  duration_us: number;
  after: Snapshot;
  changes: Change[];
}

export interface TraceBody {
  id: string;
  seq: number;
  route?: string;
  policy: string;
  status: number;
  source: string;
  method: string;
  path: string;
  response_origin: { node_id: string; port: string } | null;
  notes: string[];
  initial: Snapshot;
  steps: Step[];
}

export interface TraceList {
  traces: (Omit<TraceBody, 'steps' | 'initial'> & { step_count: number; error_count: number })[];
  retention: {
    max_traces: number;
    retained: number;
    evicted: number;
    oldest_seq: number | null;
    truncated: boolean;
  };
}
