import { LuaProgram, ScriptLoadError, type ProgramOptions, type ScriptUnit } from '../../lua/program.js';
import { pluginsDir, resolveScriptPath } from '../../lua/sources.js';
import { ConfigError, type PluginEnv } from '../define.js';

/** Schema of `timeout_ms`, shared by the script node types. */
export const timeoutSchema = { type: 'integer', minimum: 0, default: 5000 } as const;

/** `modules_path`: where `require` looks; relative paths start at the plugins folder like `source`. */
export function modulesDirFor(
  modulesPath: string | undefined,
  fallback: string | undefined,
  env: PluginEnv,
): string | undefined {
  if (modulesPath === undefined) return fallback;
  const dir = resolveScriptPath(modulesPath, env.configDir);
  if (dir === undefined) throw relativeWithoutConfig('modules_path', modulesPath);
  return dir;
}

/** The default `require` folder of inline code: the plugins folder, when the config came from a file. */
export function defaultModulesDir(env: PluginEnv): string | undefined {
  return pluginsDir(env.configDir);
}

export function relativeWithoutConfig(key: string, path: string): ConfigError {
  return new ConfigError(
    key,
    `'${path}' is relative, but this configuration has no gateway.yaml location to find the plugins/ folder from; use an absolute path`,
  );
}

/**
 * Compiles the units and runs the compile-time validation; a failure becomes
 * a ConfigError on `keyOf(unit)` that names the Lua error code.
 */
export function loadProgram(
  units: readonly ScriptUnit[],
  options: Omit<ProgramOptions, 'logger'>,
  env: PluginEnv,
  keyOf: (unit: ScriptUnit) => string,
): LuaProgram {
  try {
    return LuaProgram.load(units, {
      ...options,
      logger: env.logger.child({ policy: env.policy, node: env.nodeId }),
    });
  } catch (err) {
    if (err instanceof ScriptLoadError) throw new ConfigError(keyOf(err.unit), `${err.code}: ${err.message}`);
    throw err;
  }
}
