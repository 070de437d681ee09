import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { BASE_YAML } from './harness.js';

const BIN = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));

/** A config directory whose system.yaml the test writes whole (`@ADMIN_PORT@`, `@DATA_PORT@` filled in). */
export interface SpawnedConfig {
  systemPath: string;
  gatewayPath: string;
  args: string[];
  adminPort: number;
  dataPort: number;
  remove(): void;
}

export async function spawnedConfig(systemYaml: string, gatewayYaml = BASE_YAML): Promise<SpawnedConfig> {
  const dir = tempDir('switchyard-admin-safe-');
  const [dataPort, adminPort] = [await freePort(), await freePort()];
  const systemPath = join(dir.path, 'system.yaml');
  const gatewayPath = join(dir.path, 'gateway.yaml');
  writeFileSync(
    systemPath,
    systemYaml.replaceAll('@ADMIN_PORT@', String(adminPort)).replaceAll('@DATA_PORT@', String(dataPort)),
  );
  writeFileSync(gatewayPath, gatewayYaml);
  return {
    systemPath,
    gatewayPath,
    args: ['--system-config', systemPath, '--gateway-config', gatewayPath],
    adminPort,
    dataPort,
    remove: () => dir.remove(),
  };
}

/** Starts the real CLI and waits until the admin listener answers on `host`. */
export async function startSpawned(
  config: SpawnedConfig,
  env: NodeJS.ProcessEnv = {},
  host = '127.0.0.1',
): Promise<GatewayProcess> {
  const p = spawnGateway(config.args, env);
  try {
    await waitForHttp(`http://${host}:${config.adminPort}/healthz`, 60000);
  } catch (err) {
    await p.stop('SIGKILL');
    throw new Error(`gateway did not start: ${(err as Error).message}\n${p.output()}`, { cause: err });
  }
  return p;
}

/** `switchyard validate` on the config; status and both streams. */
export function validate(config: SpawnedConfig, env: NodeJS.ProcessEnv = {}) {
  const run = spawnSync(process.execPath, [BIN, 'validate', ...config.args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** The JSON log lines of a spawned gateway. */
export function logLines(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

export interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP/1.1 request from a chosen local address (fetch cannot pick its source address). */
export function rawRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string } = {},
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        headers: options.headers ?? {},
        agent: false,
        ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}
