// A gateway with `config.source: kubernetes` against the test API server, echo backends behind
// EndpointSlices (answering like the conformance suite's echo server), for the CRD, filter and
// BackendTLSPolicy tests (crd.test.ts, filters.test.ts, backend-tls.test.ts).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseSystemConfig } from '../../src/config/system.js';
import { Gateway } from '../../src/gateway.js';
import { silentLogger, createLogger } from '../../src/core/logger.js';
const testLogger =
  process.env['K8S_TEST_LOG'] === '1' ? createLogger({ level: 'warn', format: 'json' }) : silentLogger;
import { KubernetesSource } from '../../src/kubernetes/source.js';
import { policyChecker } from '../../src/plugins/check-policy-graph.js';
import { KubeApiServer } from '../support/kube-api-server.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

export const NS = 'gateway-conformance-infra';

export interface Echo {
  path: string;
  host: string;
  method: string;
  headers: Record<string, string[]>;
  namespace: string;
  pod: string;
}

export interface Harness {
  api: KubeApiServer;
  gateway: Gateway;
  base: string;
  /** Requests each backend (by Service name) received, in order. */
  seen: Map<string, Echo[]>;
  close(): Promise<void>;
}

/** The suite's echo answer; `?delay=<ms>ms` holds it back (timeouts), X-Echo-Set-Header sets response headers. */
export function echoHandler(namespace: string, pod: string, seen: Echo[]) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const headers: Record<string, string[]> = {};
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i] as string;
      (headers[name] ??= []).push(req.rawHeaders[i + 1] as string);
    }
    const body: Echo = {
      path: req.url ?? '',
      host: req.headers.host ?? '',
      method: req.method ?? '',
      headers,
      namespace,
      pod,
    };
    seen.push(body);
    const out: [string, string][] = [['content-type', 'application/json']];
    for (const pair of (req.headers['x-echo-set-header'] as string | undefined)?.split(',') ?? []) {
      const colon = pair.indexOf(':');
      if (colon > 0) out.push([pair.slice(0, colon).trim(), pair.slice(colon + 1).trim()]);
    }
    // The suite's `?delay=1s` (or `500ms`).
    const m = /[?&]delay=(\d+)(ms|s)\b/.exec(req.url ?? '');
    const delay = m === null ? undefined : Number(m[1]) * (m[2] === 's' ? 1000 : 1);
    const answer = () => {
      if (res.destroyed) return;
      res.writeHead(200, out.flat());
      res.end(JSON.stringify(body));
    };
    if (delay === undefined) answer();
    else setTimeout(answer, Number(delay)).unref();
  };
}

export function serviceYaml(namespace: string, name: string, port: number, servicePort = 8080): string {
  return `
apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: ${namespace} }
spec:
  selector: { app: ${name} }
  ports: [{ name: http, protocol: TCP, port: ${servicePort}, targetPort: 3000 }]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: ${name}-abcde
  namespace: ${namespace}
  labels: { kubernetes.io/service-name: ${name} }
addressType: IPv4
ports: [{ name: http, port: ${port}, protocol: TCP }]
endpoints:
  - addresses: [127.0.0.1]
    conditions: { ready: true }
`;
}

const BASE = `
apiVersion: v1
kind: Namespace
metadata: { name: ${NS} }
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: switchyard }
spec: { controllerName: switchyard.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: same-namespace, namespace: ${NS} }
spec:
  gatewayClassName: switchyard
  listeners:
    - { name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: Same } } }
`;

/** A port_offset below the ephemeral range whose port 80 + offset is free now. */
async function freeOffset(): Promise<number> {
  const bindable = (port: number) =>
    new Promise<boolean>((resolve) => {
      const probe = createNetServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
  for (let i = 0; i < 200; i++) {
    const offset = 10_000 + Math.floor(Math.random() * 12_000);
    if (await bindable(80 + offset)) return offset;
  }
  throw new Error('no free port_offset');
}

export async function startHarness(
  backends: string[] = ['infra-backend-v1', 'infra-backend-v2', 'infra-backend-v3'],
  env: NodeJS.ProcessEnv = {},
): Promise<Harness> {
  const dir = tempDir('switchyard-k8s-crd-');
  const api = await KubeApiServer.start({ bookmarkIntervalMs: 200 });
  const servers: Server[] = [];
  const seen = new Map<string, Echo[]>();
  for (const name of backends) {
    const list: Echo[] = [];
    seen.set(name, list);
    const server = createServer(echoHandler(NS, `${name}-pod-1`, list));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    api.applyYaml(serviceYaml(NS, name, (server.address() as AddressInfo).port));
  }
  api.applyYaml(BASE);
  const offset = await freeOffset();
  const kubeconfig = api.writeKubeconfig(join(dir.path, 'kubeconfig'));
  const system = parseSystemConfig(`
listener: { bind: 127.0.0.1, port: 0 }
timeouts: { shutdown_timeout_seconds: 2 }
config:
  source: kubernetes
  kubernetes:
    kubeconfig: ${kubeconfig}
    port_offset: ${offset}
    status_address: 10.1.2.3
    leader_election: { enabled: false }
`);
  const kubernetes = new KubernetesSource(
    system.config.kubernetes,
    testLogger,
    env,
    '127.0.0.1',
    policyChecker(testLogger, env),
  );
  const gateway = Gateway.createFromKubernetes({ system, logger: testLogger, kubernetes });
  await gateway.listen();
  await waitFor(() => gateway.notReady() === undefined, { timeoutMs: 15_000, what: 'the first sync' });
  await waitFor(async () => (await gateway.gatewayPorts()).has(80), { timeoutMs: 15_000, what: 'port 80' });
  return {
    api,
    gateway,
    base: `http://127.0.0.1:${80 + offset}`,
    seen,
    async close() {
      await gateway.shutdown();
      await api.close();
      for (const s of servers) s.close();
      dir.remove();
    },
  };
}

export interface Answer {
  status: number;
  echo: Echo | undefined;
  headers: Headers;
  text: string;
}

export async function get(
  h: Harness,
  path: string,
  init: { headers?: Record<string, string>; method?: string } = {},
): Promise<Answer> {
  const res = await fetch(`${h.base}${path}`, {
    headers: init.headers ?? {},
    method: init.method ?? 'GET',
    redirect: 'manual',
  });
  const text = await res.text();
  let echo: Echo | undefined;
  try {
    const parsed = JSON.parse(text) as Partial<Echo>;
    if (typeof parsed.pod === 'string') echo = parsed as Echo;
  } catch {
    echo = undefined;
  }
  return { status: res.status, echo, headers: res.headers, text };
}

export type Cond = {
  type: string;
  status: string;
  reason: string;
  message?: string;
  observedGeneration?: number;
};

export function conditionOf(
  h: Harness,
  kind: string,
  name: string,
  type = 'Accepted',
  namespace = NS,
): Cond | undefined {
  const o = h.api.get(kind, namespace, name) as { status?: { conditions?: Cond[] } } | undefined;
  return o?.status?.conditions?.find((c) => c.type === type);
}

export function routeCondition(h: Harness, name: string, type = 'Accepted'): Cond | undefined {
  const o = h.api.get('HTTPRoute', NS, name) as
    { status?: { parents?: { conditions: Cond[] }[] } } | undefined;
  return o?.status?.parents?.[0]?.conditions.find((c) => c.type === type);
}
