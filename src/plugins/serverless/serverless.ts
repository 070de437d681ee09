import type { ScriptUnit } from '../../lua/program.js';
import { definePlugin, READS_FILE } from '../../core/plugin.js';
import {
  defaultModulesDir,
  loadProgram,
  memoryLimitSchema,
  modulesDirFor,
  timeoutSchema,
} from '../scripting/lua-node.js';

/**
 * The shared definition behind `serverless-pre-function` and
 * `serverless-post-function`: identical config and behaviour; where the node
 * sits in the graph (before or after the upstream) is what makes it "pre" or
 * "post".
 */
export function serverlessFunction<T extends string>(type: T, description: string) {
  return definePlugin({
    type,
    category: 'serverless',
    description,
    schema: {
      type: 'object',
      additionalProperties: false,
      required: ['functions'],
      properties: {
        functions: {
          type: 'array',
          minItems: 1,
          items: { type: 'string' },
          description: 'Lua sources, each defining execute(ctx); run in order.',
        },
        phase: {
          type: 'string',
          description: 'Accepted for compatibility; graph position decides the phase.',
        },
        timeout_ms: { ...timeoutSchema, description: 'Budget per function and request; 0 disables it.' },
        memory_limit_mb: memoryLimitSchema,
        modules_path: {
          type: 'string',
          [READS_FILE]: true,
          description: 'Folder `require` loads modules from; defaults to the plugins/ folder.',
        },
      },
    },
    outputs: {
      success: {
        kind: 'success',
        description: 'Every function returned the context; the request continues.',
      },
    },
    templated: [],
    readsResponseBody: () => true,
    create(config, env) {
      const units: ScriptUnit[] = config.functions.map((source, i) => ({
        source,
        chunkName: `=functions[${i}]`,
        label: `functions[${i}]`,
      }));
      const program = loadProgram(
        units,
        {
          timeoutMs: config.timeout_ms,
          memoryLimitMb: config.memory_limit_mb,
          modulesDir: modulesDirFor(config.modules_path, defaultModulesDir(env), env),
          ports: ['success'],
        },
        env,
        (unit) => unit.label,
      );
      return {
        run: async (ctx) => (await program.run(ctx)) as 'success',
        close: () => program.close(),
      };
    },
  });
}
