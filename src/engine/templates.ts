import type { PluginEnv } from '../core/plugin.js';
import { templateFor } from '../template/index.js';

/** Builds the per-node `env.template` function handed to plugins; warnings carry their own coordinates. */
export function templateFactory(
  env: NodeJS.ProcessEnv,
): (where: { policy: string; node: string }, warn: (message: string) => void) => PluginEnv['template'] {
  return (where, warn) => templateFor(where, warn, env);
}
