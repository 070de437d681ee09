// Shared by grpc-route.test.ts, tls-route.test.ts and stream-route.test.ts: a gateway with
// `config.source: kubernetes` against the test API server, upstream conformance manifests applied
// as data (test/kubernetes/fixtures/conformance/, their Deployments left out: each Service gets an
// EndpointSlice pointing at a local echo server instead), and the suite's echo backends.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer as createTlsServer } from 'node:tls';
import { parseAllDocuments } from 'yaml';
import { parseSystemConfig } from '../../src/config/system.js';
import { Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/core/logger.js';
import { KubernetesSource } from '../../src/kubernetes/source.js';
import { KubeApiServer, type KubeObject } from '../support/kube-api-server.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

export const INFRA = 'gateway-conformance-infra';
export const APP = 'gateway-conformance-app-backend';
export const WEB = 'gateway-conformance-web-backend';
const FIXTURES = join(import.meta.dirname, 'fixtures', 'conformance');
/** What the TCP echo backend sends first, before the client's `TEST` line. */
export const WELCOME = 'switchyard conformance tcp echo\n';

export type Cond = { type: string; status: string; reason: string; observedGeneration?: number };

const BASE = `
apiVersion: v1
kind: Namespace
metadata: { name: ${INFRA}, labels: { gateway-conformance: infra } }
---
apiVersion: v1
kind: Namespace
metadata: { name: ${APP}, labels: { gateway-conformance: backend } }
---
apiVersion: v1
kind: Namespace
metadata: { name: ${WEB}, labels: { gateway-conformance: backend } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: switchyard }
spec: { controllerName: switchyard.dev/gateway-controller }
`;

/** Starts a backend for one Service; answers its port. */
export type BackendFactory = (namespace: string, pod: string) => Promise<number>;

export interface Harness {
  api: KubeApiServer;
  gateway: Gateway;
  kubernetes: KubernetesSource;
  /** port_offset: a listener declared on port P is bound on P + offset. */
  offset: number;
  /** Applies a conformance manifest; each of its Services gets a backend from `backend`. */
  applyCase(file: string, backend: BackendFactory, keep?: (o: KubeObject) => boolean): Promise<() => void>;
  /** A Service (port named `name`) with one ready endpoint on 127.0.0.1:`target`. */
  service(namespace: string, name: string, port: number, target: number, protocol?: string): void;
  close(): Promise<void>;
}

function serviceYaml(ns: string, name: string, port: number, target: number, protocol = 'TCP'): string {
  return `
apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: ${ns} }
spec:
  ports: [{ name: p${port}, protocol: ${protocol}, port: ${port} }]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: ${name}-abcde
  namespace: ${ns}
  labels: { kubernetes.io/service-name: ${name} }
addressType: IPv4
ports: [{ name: p${port}, port: ${target}, protocol: ${protocol} }]
endpoints:
  - addresses: [127.0.0.1]
    conditions: { ready: true }
`;
}

/** A port_offset below the ephemeral range whose declared ports (TCP and UDP) are all free. */
async function freeOffset(tcp: number[], udp: number[]): Promise<number> {
  const tcpFree = (port: number) =>
    new Promise<boolean>((resolve) => {
      const probe = createNetServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
  const udpFree = (port: number) =>
    new Promise<boolean>((resolve) => {
      const probe = createSocket('udp4');
      probe.once('error', () => resolve(false));
      probe.bind(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
  for (let i = 0; i < 200; i++) {
    const offset = 10_000 + Math.floor(Math.random() * 12_000);
    let ok = true;
    for (const p of tcp) if (!(await tcpFree(p + offset))) ok = false;
    for (const p of udp) if (!(await udpFree(p + offset))) ok = false;
    if (ok) return offset;
  }
  throw new Error('no free port_offset');
}

const closers: (() => void)[] = [];

export async function startHarness(ports: { tcp: number[]; udp?: number[] }): Promise<Harness> {
  const dir = tempDir('switchyard-k8s-routes-');
  const api = await KubeApiServer.start({ bookmarkIntervalMs: 200 });
  api.applyYaml(BASE);
  const offset = await freeOffset(ports.tcp, ports.udp ?? []);
  const kubeconfig = api.writeKubeconfig(join(dir.path, 'kubeconfig'));
  const system = parseSystemConfig(`
listener: { bind: 127.0.0.1, port: 0 }
timeouts: { shutdown_timeout_seconds: 1, connection_seconds: 5 }
config:
  source: kubernetes
  kubernetes:
    kubeconfig: ${kubeconfig}
    port_offset: ${offset}
    status_address: 10.1.2.3
    leader_election: { enabled: false }
`);
  const kubernetes = new KubernetesSource(system.config.kubernetes, silentLogger, {}, '127.0.0.1');
  const gateway = Gateway.createFromKubernetes({ system, logger: silentLogger, kubernetes });
  await gateway.listen();
  await waitFor(() => gateway.notReady() === undefined, { timeoutMs: 20_000, what: 'the first sync' });
  const service: Harness['service'] = (ns, name, port, target, protocol) =>
    void api.applyYaml(serviceYaml(ns, name, port, target, protocol));
  return {
    api,
    gateway,
    kubernetes,
    offset,
    service,
    async applyCase(file, backend, keep = () => true) {
      const text = readFileSync(join(FIXTURES, file), 'utf8').replaceAll(
        '{GATEWAY_CLASS_NAME}',
        'switchyard',
      );
      const applied: KubeObject[] = [];
      for (const doc of parseAllDocuments(text)) {
        const o = doc.toJS() as KubeObject | null;
        // The suite's Deployments run its echo image; here a local echo server stands behind each Service.
        if (o === null || o.kind === 'Deployment' || !keep(o)) continue;
        if (o.kind === 'Service') {
          const ns = o.metadata.namespace ?? 'default';
          const spec = o.spec as { ports: { name?: string; port: number; protocol?: string }[] };
          const target = await backend(ns, `${o.metadata.name}-pod-1`);
          applied.push(api.apply(o));
          applied.push(
            api.apply({
              apiVersion: 'discovery.k8s.io/v1',
              kind: 'EndpointSlice',
              metadata: {
                name: `${o.metadata.name}-abcde`,
                namespace: ns,
                labels: { 'kubernetes.io/service-name': o.metadata.name },
              },
              addressType: 'IPv4',
              ports: spec.ports.map((p) => ({
                name: p.name ?? '',
                port: target,
                protocol: p.protocol ?? 'TCP',
              })),
              endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
            }),
          );
          continue;
        }
        applied.push(api.apply(o));
      }
      return () => {
        for (const o of applied.reverse())
          api.remove(o.kind as string, o.metadata.namespace, o.metadata.name);
      };
    },
    async close() {
      await gateway.shutdown();
      await api.close();
      for (const c of closers.splice(0)) c();
      dir.remove();
    },
  };
}

/** The route's status entry for a parent Gateway (by name), if written. */
export function parentOf(
  api: KubeApiServer,
  kind: string,
  namespace: string,
  route: string,
  gateway: string,
): { conditions: Cond[] } | undefined {
  const r = api.get(kind, namespace, route) as
    { status?: { parents?: { parentRef: { name: string }; conditions: Cond[] }[] } } | undefined;
  return r?.status?.parents?.find((p) => p.parentRef.name === gateway);
}

export function cond(list: Cond[] | undefined, type: string): Cond | undefined {
  return list?.find((c) => c.type === type);
}

/** Waits until the route's parent condition `type` has `status` (and `reason`). */
export async function routeCondition(
  api: KubeApiServer,
  kind: string,
  route: string,
  gateway: string,
  [type, status, reason]: [string, string, string?],
  namespace = INFRA,
): Promise<void> {
  await waitFor(
    () => {
      const c = cond(parentOf(api, kind, namespace, route, gateway)?.conditions, type);
      return c?.status === status && (reason === undefined || c.reason === reason);
    },
    { timeoutMs: 15_000, what: `${kind} ${route} → ${gateway}: ${type} ${status} ${reason ?? ''}` },
  );
}

export interface ListenerStatus {
  name: string;
  supportedKinds: { group?: string; kind: string }[];
  attachedRoutes: number;
  conditions: Cond[];
}

export function listeners(api: KubeApiServer, gateway: string, namespace = INFRA): ListenerStatus[] {
  return (
    (api.get('Gateway', namespace, gateway)?.status as { listeners?: ListenerStatus[] } | undefined)
      ?.listeners ?? []
  );
}

/** The suite's TCP echo backend: a welcome line, then `TEST\n` → one JSON line naming the pod. */
export const tcpEcho: BackendFactory = async (namespace, pod) => {
  const server = createNetServer((socket) => tcpEchoSession(socket, namespace, pod));
  return listen(server);
};

function tcpEchoSession(socket: Socket, namespace: string, pod: string): void {
  socket.on('error', () => socket.destroy());
  socket.write(WELCOME);
  let buffered = '';
  socket.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    if (!buffered.includes('\n')) return;
    socket.end(`${JSON.stringify({ pod, namespace, service: pod.replace(/-pod-1$/, '') })}\n`);
  });
}

/** The TCP echo behind TLS with its own certificate (the passthrough backends). */
export function tlsEcho(cert: string, key: string): BackendFactory {
  return async (namespace, pod) =>
    listen(createTlsServer({ cert, key }, (socket) => tcpEchoSession(socket, namespace, pod)));
}

/** The suite's UDP echo backend: each datagram answered with JSON naming the backend. */
export const udpEcho: BackendFactory = async (namespace, pod) => {
  const socket: UdpSocket = createSocket('udp4');
  socket.on('message', (msg, from) => {
    const body = JSON.stringify({
      request: msg.toString('utf8'),
      namespace,
      service: pod.replace(/-pod-1$/, ''),
      pod,
    });
    socket.send(body, from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  closers.push(() => socket.close());
  return socket.address().port;
};

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => server.close());
  return (server.address() as AddressInfo).port;
}

/** One UDP round trip to the gateway's port; the JSON answer, or undefined after `timeoutMs`. */
export function udpAsk(
  port: number,
  timeoutMs = 1000,
): Promise<{ pod: string; service: string; namespace: string } | undefined> {
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    const timer = setTimeout(() => {
      s.close();
      resolve(undefined);
    }, timeoutMs);
    s.once('message', (msg) => {
      clearTimeout(timer);
      s.close();
      resolve(JSON.parse(msg.toString('utf8')) as { pod: string; service: string; namespace: string });
    });
    s.send('gateway-api-conformance-udp-echo', port, '127.0.0.1');
  });
}

/** The TCP echo handshake through `socket` (plain or TLS): the answering pod, or an Error. */
export function tcpAsk(socket: Socket): Promise<string | Error> {
  return new Promise((resolve) => {
    let text = '';
    let sent = false;
    socket.setTimeout(5000, () => socket.destroy(new Error('timed out')));
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (!sent && text.startsWith(WELCOME)) {
        sent = true;
        socket.write('TEST\n');
      }
      const line = text.slice(WELCOME.length);
      if (sent && line.endsWith('\n')) {
        socket.end();
        resolve((JSON.parse(line) as { pod: string }).pod);
      }
    });
    socket.once('error', (err) => resolve(err));
    socket.once('close', () => resolve(new Error(`closed after ${JSON.stringify(text)}`)));
  });
}
