import type { PluginEnv } from '../core/plugin.js';

/**
 * A WARN for a failing backend that a node rides out (a degraded limit, a
 * cache miss): logged once, then at most every `intervalMs`, so an outage
 * does not write one line per request.
 */
export function throttledWarning(
  env: PluginEnv,
  intervalMs = 10_000,
): (err: unknown, message: string) => void {
  let last = -Infinity;
  return (err, message) => {
    const now = Date.now();
    if (now - last < intervalMs) return;
    last = now;
    env.logger.warn(
      { policy: env.policy, node_id: env.nodeId, err: err instanceof Error ? err.message : String(err) },
      message,
    );
  };
}
