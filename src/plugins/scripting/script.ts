import { basename, dirname } from 'node:path';
import { outsideScriptFolders, readScript, resolveScriptPath } from '../../lua/sources.js';
import type { ScriptUnit } from '../../lua/program.js';
import { ConfigError, definePlugin, READS_FILE } from '../../core/plugin.js';
import {
  defaultModulesDir,
  loadProgram,
  memoryLimitSchema,
  modulesDirFor,
  relativeWithoutConfig,
  timeoutSchema,
} from './lua-node.js';

/**
 * Runs a Lua script's `execute(ctx)` against the request. The script
 * returns the context, and may name the port: `return ctx, "respond"`
 * answers the request with the response it prepared.
 *
 * @example
 * ```yaml
 * - id: tag
 *   type: script
 *   config:
 *     inline: |
 *       function execute(ctx)
 *         ctx.request.headers["x-tag"] = { "lua" }
 *         return ctx
 *       end
 * ```
 */
export const script = definePlugin({
  type: 'script',
  category: 'scripting',
  description: 'Run a Lua script that reads and changes the request context, or answers the request itself.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      runtime: {
        type: 'string',
        enum: ['lua'],
        default: 'lua',
        description: 'Only lua runs in the gateway.',
      },
      source: {
        type: 'string',
        [READS_FILE]: true,
        description:
          'Script file, relative to the plugins/ folder beside the config folder (or absolute, inside plugins/ or the config folder).',
      },
      inline: { type: 'string', description: 'Script text; source wins when both are set.' },
      timeout_ms: {
        ...timeoutSchema,
        description: 'Budget per request (top level plus execute); 0 disables it.',
      },
      memory_limit_mb: memoryLimitSchema,
      modules_path: {
        type: 'string',
        [READS_FILE]: true,
        description:
          'Folder `require` loads modules from; defaults to the script file folder (inline: plugins/).',
      },
    },
  },
  outputs: {
    success: { kind: 'success', description: 'The script returned the context; the request continues.' },
    respond: {
      kind: 'outcome',
      description:
        'The script prepared ctx.response and returned "respond"; wire to client (or a custom handler).',
    },
  },
  templated: [],
  // The body is handed to Lua, so an upstream before a script node must buffer.
  readsResponseBody: () => true,
  create(config, env) {
    let unit: ScriptUnit;
    let fallbackModules: string | undefined;
    if (config.source !== undefined) {
      const path = resolveScriptPath(config.source, env.configDir);
      if (path === undefined) throw relativeWithoutConfig('source', config.source);
      const outside = outsideScriptFolders(path, env.configDir);
      if (outside !== undefined) throw new ConfigError('source', `LUA_LOAD_ERROR: ${outside}`);
      let text: string;
      try {
        text = readScript(path);
      } catch (err) {
        throw new ConfigError('source', `LUA_LOAD_ERROR: ${(err as Error).message}`);
      }
      unit = { source: text, chunkName: `=${basename(path)}`, label: path };
      fallbackModules = dirname(path);
    } else if (config.inline !== undefined) {
      unit = { source: config.inline, chunkName: '=inline', label: 'inline' };
      fallbackModules = defaultModulesDir(env);
    } else {
      throw new ConfigError('', 'one of source or inline is required');
    }
    const program = loadProgram(
      [unit],
      {
        timeoutMs: config.timeout_ms,
        memoryLimitMb: config.memory_limit_mb,
        modulesDir: modulesDirFor(config.modules_path, fallbackModules, env),
        ports: ['success', 'respond'],
      },
      env,
      () => (config.source !== undefined ? 'source' : 'inline'),
    );
    return {
      run: (ctx) => program.run(ctx),
      close: () => program.close(),
    };
  },
});
