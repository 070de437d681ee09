import type { Template, TemplateOptions } from '../core/plugin.js';
import { compileTemplate } from './compile.js';

/** Builds `PluginEnv.template` for one node: every field it compiles warns with these coordinates. */
export function templateFor(
  where: { policy: string; node: string },
  warn: (message: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): (text: string, key: string, options?: TemplateOptions) => Template {
  return function template(text, key, options = {}) {
    return compileTemplate(text, {
      ...options,
      where: { policy: where.policy, node: where.node, key },
      warn,
      env,
    });
  };
}
