import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { basic } from '../admin/harness.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
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
  options: { workers?: number | 'auto'; system?: string[] } = {},
): Promise<ClusterGateway> {
  const dir = tempDir('switchyard-cluster-');
  const [dataPort, adminPort] = [await freePort(), await freePort()];
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
  const child = spawnGateway(['--system-config', systemPath, '--gateway-config', gatewayPath]);
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

/** Waits until the gateway reports `count` serving workers. */
export async function waitForWorkers(gateway: ClusterGateway, count: number): Promise<void> {
  await waitFor(async () => (await gateway.workers()).size === count, {
    timeoutMs: 60_000,
    intervalMs: 200,
    what: `${count} serving workers`,
  });
}
