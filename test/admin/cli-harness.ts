import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { basic } from './harness.js';

/** A config directory (system.yaml + gateway.yaml) for the real CLI, with fixed free ports. */
export interface CliConfig {
  dir: string;
  gatewayPath: string;
  args: string[];
  data: string;
  admin: string;
  remove(): void;
}

export async function cliConfig(
  gatewayYaml: string,
  adminExtra = 'password: "correct horse"',
): Promise<CliConfig> {
  const dir = tempDir('switchyard-admin-e2e-');
  const [dataPort, adminPort] = [await freePort(), await freePort()];
  const systemPath = join(dir.path, 'system.yaml');
  const gatewayPath = join(dir.path, 'gateway.yaml');
  writeFileSync(
    systemPath,
    [
      `listener: { bind: 127.0.0.1, port: ${dataPort} }`,
      'logging: { level: warn }',
      'timeouts: { shutdown_timeout_seconds: 5 }',
      `admin: { bind: 127.0.0.1, port: ${adminPort}, username: admin, ${adminExtra} }`,
      '',
    ].join('\n'),
  );
  writeFileSync(gatewayPath, gatewayYaml);
  return {
    dir: dir.path,
    gatewayPath,
    args: ['--system-config', systemPath, '--gateway-config', gatewayPath],
    data: `http://127.0.0.1:${dataPort}`,
    admin: `http://127.0.0.1:${adminPort}`,
    remove: () => dir.remove(),
  };
}

/** Spawns the real `switchyard` binary and waits for the admin probe. */
export async function startCli(config: CliConfig): Promise<GatewayProcess> {
  const p = spawnGateway(config.args);
  try {
    await waitForHttp(`${config.admin}/healthz`, 60000);
  } catch (err) {
    await p.stop('SIGKILL');
    throw new Error(`gateway did not start: ${(err as Error).message}\n${p.output()}`, { cause: err });
  }
  return p;
}

/** Authenticated Admin API call against a spawned gateway. */
export function adminCall(
  config: CliConfig,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(config.admin + path, {
    method,
    headers: { authorization: basic(), 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}
