import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { basic } from '../admin/harness.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { request, type SimpleResponse } from '../support/http.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

/** A real `switchyard` with `workers`, its data plane, Admin API and a /metrics reader. */
export interface ClusterGateway {
  process: GatewayProcess;
  data: string;
  admin: string;
  gatewayPath: string;
  /** The aggregated /metrics text. */
  metrics(): Promise<string>;
  /** Per worker slot: pid and requests answered (gateway_cluster_worker_requests_total). */
  workers(): Promise<Map<number, { pid: number; requests: number }>>;
  adminCall(method: string, path: string, body?: unknown): Promise<Response>;
  stop(): Promise<void>;
}

export async function startClusterGateway(
  gatewayYaml: string,
  options: { workers?: number | 'auto'; system?: string[]; env?: NodeJS.ProcessEnv; port?: number } = {},
): Promise<ClusterGateway> {
  const dir = tempDir('switchyard-cluster-');
  const [dataPort, adminPort] = [options.port ?? (await freePort()), await freePort()];
  const systemPath = join(dir.path, 'system.yaml');
  const gatewayPath = join(dir.path, 'gateway.yaml');
  writeFileSync(
    systemPath,
    [
      `listener: { bind: 127.0.0.1, port: ${dataPort} }`,
      'logging: { level: info }',
      'timeouts: { shutdown_timeout_seconds: 10 }',
      `admin: { bind: 127.0.0.1, port: ${adminPort}, username: admin, password: "correct horse" }`,
      `workers: ${options.workers ?? 2}`,
      ...(options.system ?? []),
      '',
    ].join('\n'),
  );
  writeFileSync(gatewayPath, gatewayYaml);
  const data = `http://127.0.0.1:${dataPort}`;
  const admin = `http://127.0.0.1:${adminPort}`;
  const child = spawnGateway(
    ['--system-config', systemPath, '--gateway-config', gatewayPath],
    options.env ?? {},
  );
  const adminCall = (method: string, path: string, body?: unknown): Promise<Response> =>
    fetch(admin + path, {
      method,
      headers: { authorization: basic(), 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const metrics = async (): Promise<string> => (await adminCall('GET', '/metrics')).text();
  try {
    // The admin listener starts after every worker listens.
    const exited = child.exited.then((code) => {
      throw new Error(`the gateway exited with code ${String(code)}`);
    });
    await Promise.race([waitForHttp(`${admin}/healthz`, 90_000), exited]);
  } catch (err) {
    await child.stop('SIGKILL');
    dir.remove();
    throw new Error(`gateway did not start: ${(err as Error).message}\n${child.output()}`, { cause: err });
  }
  return {
    process: child,
    data,
    admin,
    gatewayPath,
    metrics,
    adminCall,
    async workers() {
      const text = await metrics();
      const out = new Map<number, { pid: number; requests: number }>();
      for (const m of text.matchAll(
        /^gateway_cluster_worker_requests_total\{worker="(\d+)",pid="(\d+)"\} (\d+)$/gm,
      ))
        out.set(Number(m[1]), { pid: Number(m[2]), requests: Number(m[3]) });
      return out;
    },
    async stop() {
      await child.stop('SIGTERM');
      dir.remove();
    },
  };
}

/** The value of one sample line of a Prometheus text exposition (0 when absent). */
export function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** Sum of every sample of `name` (all label sets). */
export function total(text: string, name: string): number {
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))) sum += Number(m[1]);
  return sum;
}

/** `count` requests, each on a fresh connection, so node:cluster spreads them over the workers. */
export function many(
  gateway: ClusterGateway,
  count: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<SimpleResponse[]> {
  return Promise.all(Array.from({ length: count }, () => request(`${gateway.data}${path}`, { headers })));
}

/** Requests each worker slot answered while `work` ran. */
export async function servedDuring(gateway: ClusterGateway, work: () => Promise<unknown>): Promise<number[]> {
  const before = await gateway.workers();
  await work();
  const afterwards = await gateway.workers();
  return [...afterwards].map(([slot, w]) => w.requests - (before.get(slot)?.requests ?? 0));
}

/** A mocked policy answering `body`. */
export function mockPolicy(name: string, body: string): string {
  return `
  - name: ${name}
    nodes:
      - { id: listener, type: listener }
      - { id: m, type: mocking, config: { response_status: 200, content_type: text/plain, response_example: '${body}' } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: m.in }
      - { from: m.success, to: client.in }`;
}

/**
 * Asserts that every one of `count` fresh connections to `path` answers `body`
 * and that both workers answered some of them.
 */
export async function everyWorkerServes(
  gateway: ClusterGateway,
  path: string,
  body: string,
  count = 16,
): Promise<void> {
  const served = await servedDuring(gateway, async () => {
    const answers = await many(gateway, count, path);
    assert.deepEqual(
      answers.map((a) => `${a.status} ${a.body}`),
      Array.from({ length: count }, () => `200 ${body}`),
    );
  });
  assert.equal(served.length, 2, `serving workers: ${served.join(', ')}`);
  assert.ok(
    served.every((n) => n > 0),
    `both workers answered: ${served.join(', ')}`,
  );
}

/** Waits until the gateway reports `count` serving workers. */
export async function waitForWorkers(gateway: ClusterGateway, count: number): Promise<void> {
  await waitFor(async () => (await gateway.workers()).size === count, {
    timeoutMs: 60_000,
    intervalMs: 200,
    what: `${count} serving workers`,
  });
}

/** One route answering `body` from a mocking node. */
export const helloGateway = (body: string): string => `
routes:
  - { name: hello, match: { path: /hello }, policy: hello }
policies:${mockPolicy('hello', body)}
`;

/** The same policy as the Admin API takes it (JSON). */
export const mockPolicyJson = (body: string) => ({
  nodes: [
    { id: 'listener', type: 'listener' },
    {
      id: 'm',
      type: 'mocking',
      config: { response_status: 200, content_type: 'text/plain', response_example: body },
    },
    { id: 'client', type: 'client' },
  ],
  edges: [
    { from: 'listener.out', to: 'm.in' },
    { from: 'm.success', to: 'client.in' },
  ],
});

/** Polls until 12 fresh connections (spread over the workers) all answer `body`. */
export async function converge(gw: ClusterGateway, body: string, what: string): Promise<void> {
  await waitFor(async () => (await many(gw, 12, '/hello')).every((a) => a.body === body), {
    timeoutMs: 60_000,
    intervalMs: 200,
    what,
  });
}
