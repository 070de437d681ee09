import type { SystemConfig } from '../config/system.js';
import type { Logger } from '../observability/logger.js';
import type { StreamListener } from './listener.js';
import { startTcpStream } from './tcp.js';
import { startUdpStream } from './udp.js';

export type { StreamListener } from './listener.js';

/**
 * Binds every `stream:` listener of system.yaml (docs/configuration.md#systemyaml): at startup,
 * fail-fast (one that cannot bind closes the others and rejects), never
 * hot-reloaded. Connect attempts are bounded by `timeouts.connection_seconds`,
 * UDP sessions expire after `timeouts.idle_seconds` without traffic.
 */
export async function startStreamListeners(system: SystemConfig, logger: Logger): Promise<StreamListener[]> {
  const started: StreamListener[] = [];
  try {
    for (const config of system.stream) {
      started.push(
        config.protocol === 'udp'
          ? await startUdpStream(config, { logger, idleTimeoutMs: system.timeouts.idle_seconds * 1000 })
          : await startTcpStream(config, {
              logger,
              connectTimeoutMs: system.timeouts.connection_seconds * 1000,
            }),
      );
    }
  } catch (err) {
    await closeStreamListeners(started, 0);
    throw err;
  }
  return started;
}

export async function closeStreamListeners(
  listeners: readonly StreamListener[],
  graceMs: number,
): Promise<void> {
  await Promise.all(listeners.map((l) => l.close(graceMs)));
}
