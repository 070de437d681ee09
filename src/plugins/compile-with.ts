import { dirname, resolve } from 'node:path';
import type { GatewayConfig } from '../config/gateway.js';
import type { Logger } from '../core/logger.js';
import type { GatewayScope } from '../core/plugin.js';
import { registry } from '../plugins/index.js';
import { compileGateway, type Runtime } from '../engine/compile.js';
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
  const configDir = gatewayPath === undefined ? undefined : dirname(resolve(gatewayPath));
  return compileGateway(config, {
    registry,
    logger,
    env,
    templateFactory: templateFactory(env),
    configDir,
    scope,
  });
}
