import { applyContext } from '../../lua/marshal.js';
import { luaPool, type LuaPool } from '../../lua/pool.js';
import type { ScriptUnit } from '../../lua/program.js';
import { outsideScriptFolders, pluginsDir, resolveScriptPath } from '../../lua/sources.js';
import { fromWire, snapshot, type ProgramSpec } from '../../lua/worker-protocol.js';
import type { Context } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { ConfigError, type PluginEnv } from '../../core/plugin.js';

/** Schema of `timeout_ms`, shared by the script node types. */
export const timeoutSchema = { type: 'integer', minimum: 0, default: 5000 } as const;

/** Schema of `memory_limit_mb`, shared by the script node types. */
export const memoryLimitSchema = {
  type: 'integer',
  minimum: 1,
  maximum: 1024,
  default: 64,
  description:
    'Memory one run may hold (strings and tables), in MiB; a run that needs more fails with LUA_MEMORY_LIMIT.',
} as const;

/** `modules_path`: where `require` looks; relative paths start at the plugins folder like `source`. */
export function modulesDirFor(
  modulesPath: string | undefined,
  fallback: string | undefined,
  env: PluginEnv,
): string | undefined {
  if (modulesPath === undefined) return fallback;
  const dir = resolveScriptPath(modulesPath, env.configDir);
  if (dir === undefined) throw relativeWithoutConfig('modules_path', modulesPath);
  const outside = outsideScriptFolders(dir, env.configDir);
  if (outside !== undefined) throw new ConfigError('modules_path', outside);
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

/** A node's scripts, compiled in the Lua workers (src/lua/pool.ts); `run` resolves with the port. */
export class ScriptProgram {
  readonly #pool: LuaPool;
  readonly #id: number;
  readonly #spec: ProgramSpec;
  readonly #logger: Logger;

  constructor(pool: LuaPool, id: number, spec: ProgramSpec, logger: Logger) {
    this.#pool = pool;
    this.#id = id;
    this.#spec = spec;
    this.#logger = logger;
    retired.register(this, { pool, id }, this);
  }

  async run(ctx: Context): Promise<'success' | 'respond'> {
    // The sandbox's deadline is the only bound of a run without a time budget.
    const signal = this.#spec.timeoutMs === 0 ? ctx.signal : undefined;
    const reply = await this.#pool.run(this.#id, this.#spec, snapshot(ctx), signal);
    logPrints(this.#logger, reply.prints);
    if (!reply.ok) {
      throw new NodeError(reply.code, reply.message, {
        metadata: reply.script === undefined ? {} : { script: reply.script },
      });
    }
    const result = reply.result;
    if (result === undefined) throw new NodeError('LUA_EXECUTION_ERROR', 'the Lua worker returned no result');
    applyContext(ctx, fromWire(result.back));
    return result.port;
  }

  close(): void {
    retired.unregister(this);
    this.#pool.drop(this.#id);
  }
}

/** A program whose node was dropped without `close` still leaves the workers. */
const retired = new FinalizationRegistry<{ pool: LuaPool; id: number }>(({ pool, id }) => pool.drop(id));

let shapesReported = false;

/** One WARN per process when a Lua worker found fengari's private objects unlike 0.1.5's (src/lua/fengari-internals.ts). */
function reportShapes(logger: Logger, fallback: string | undefined): void {
  if (fallback === undefined || shapesReported) return;
  shapesReported = true;
  logger.warn(
    { problem: fallback },
    "fengari's private objects are not the ones src/lua was written for: Lua runs through fengari's public API only (slower, same results)",
  );
}

function logPrints(logger: Logger, prints: readonly string[]): void {
  for (const line of prints) logger.info({ lua: line }, 'lua print');
}

export interface LoadOptions {
  timeoutMs: number;
  memoryLimitMb: number;
  modulesDir: string | undefined;
  ports: ('success' | 'respond')[];
}

/**
 * Compiles the units and runs the compile-time validation in a Lua worker;
 * a failure becomes a ConfigError on `keyOf(unit)` that names the Lua error code.
 */
export function loadProgram(
  units: ScriptUnit[],
  options: LoadOptions,
  env: PluginEnv,
  keyOf: (unit: ScriptUnit) => string,
): ScriptProgram {
  const logger = env.logger.child({ policy: env.policy, node: env.nodeId });
  const pool = luaPool();
  const spec: ProgramSpec = { units, ...options };
  const id = pool.register(spec);
  const reply = pool.loadSync(id, spec);
  reportShapes(logger, reply.fallback);
  logPrints(logger, reply.prints);
  if (!reply.ok) {
    const unit = units[reply.unit !== undefined && reply.unit >= 0 ? reply.unit : 0];
    throw new ConfigError(unit === undefined ? '' : keyOf(unit), `${reply.code}: ${reply.message}`);
  }
  return new ScriptProgram(pool, id, spec, logger);
}
