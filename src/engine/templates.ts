import type { PluginEnv, Template } from '../plugins/define.js';

/**
 * Builds the per-node `env.template` function handed to plugins.
 * Placeholder until the template compiler lands: every field renders verbatim.
 */
export function templateFactory(
  _env: NodeJS.ProcessEnv,
): (where: { policy: string; node: string }, warn: (message: string) => void) => PluginEnv['template'] {
  return () =>
    (text: string): Template => ({ source: text, isStatic: true, render: () => text });
}
