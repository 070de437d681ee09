import { parseSystemConfig, type SystemConfig } from '../../src/config/system.js';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { Gateway } from '../../src/gateway.js';
import { silentLogger, type Logger } from '../../src/core/logger.js';

export interface RunningGateway {
  gateway: Gateway;
  /** `http://127.0.0.1:<port>` of the data plane. */
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * Starts a gateway in this process on a random loopback port. `systemYaml` is
 * merged under a listener on 127.0.0.1:0 unless it sets its own.
 */
export async function startGateway(
  gatewayYaml: string,
  options: { systemYaml?: string; gatewayPath?: string; logger?: Logger; env?: NodeJS.ProcessEnv } = {},
): Promise<RunningGateway> {
  const system: SystemConfig = parseSystemConfig(
    options.systemYaml ??
      'listener: { bind: 127.0.0.1, port: 0 }\ntimeouts: { shutdown_timeout_seconds: 5 }\n',
    options.env,
  );
  const gateway = Gateway.create(
    {
      system,
      logger: options.logger ?? silentLogger,
      ...(options.gatewayPath === undefined ? {} : { gatewayPath: options.gatewayPath }),
      ...(options.env === undefined ? {} : { env: options.env }),
    },
    options.gatewayPath === undefined ? parseGatewayConfig(gatewayYaml) : undefined,
  );
  const address = await gateway.listen();
  return {
    gateway,
    port: address.port,
    url: `http://127.0.0.1:${address.port}`,
    stop: () => gateway.shutdown(),
  };
}
