import { dirname, resolve } from 'node:path';
import type { GatewayConfig } from '../config/gateway.js';
import { secretsOf } from '../config/secrets/binding.js';
import type { Logger } from '../core/logger.js';
import type { GatewayScope } from '../core/plugin.js';
import { registry } from '../plugins/index.js';
import { compileGateway, compileGatewayAsync, type CompileOptions, type Runtime } from '../engine/compile.js';
import { templateFactory } from '../engine/templates.js';

/**
 * Compiles a gateway configuration with the plugin registry. Its own module (re-exported by
 * gateway.ts) so `switchyard validate` compiles without importing the server, Admin API and
 * cluster modules (docs/benchmarks.md#startup-and-memory).
 * `gatewayPath` locates files beside the config (the `plugins/` folder of script nodes).
 */
export function compileWith(
  config: GatewayConfig,
  logger: Logger,
  env: NodeJS.ProcessEnv,
  gatewayPath?: string,
  scope?: GatewayScope,
): Runtime {
  return compileGateway(config, compileOptions(logger, env, gatewayPath, scope));
}

/**
 * `compileWith` in slices that let requests on the running configuration proceed (reloads, admin
 * writes). `${secret:…}` references not read yet (an Admin write adding one) are read first.
 */
export async function compileWithAsync(
  config: GatewayConfig,
  logger: Logger,
  env: NodeJS.ProcessEnv,
  gatewayPath?: string,
  scope?: GatewayScope,
  previous?: Runtime,
): Promise<Runtime> {
  await secretsOf(env)?.prepare(config);
  return compileGatewayAsync(config, { ...compileOptions(logger, env, gatewayPath, scope), previous });
}

function compileOptions(
  logger: Logger,
  env: NodeJS.ProcessEnv,
  gatewayPath: string | undefined,
  scope: GatewayScope | undefined,
): CompileOptions {
  const configDir = gatewayPath === undefined ? undefined : dirname(resolve(gatewayPath));
  return { registry, logger, env, templateFactory: templateFactory(env), configDir, scope };
}
