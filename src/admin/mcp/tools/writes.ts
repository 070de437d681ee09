import { dryRun, listOf, mutate, putItem, removeItem, type Named } from '../../resources.js';
import type { GatewayConfig } from '../../../config/gateway.js';
import { invalidInput, notFound, toToolError } from '../errors.js';
import { restoreSecrets } from '../secrets.js';
import { definition, flag, requiredStr, str } from './args.js';
import { adminKind, TOOL_KINDS, type ToolKind } from './kinds.js';
import type { InputSchema, ToolContext, ToolDef } from './types.js';

/** What every put_/delete_ answers. */
export interface WriteResult {
  applied: boolean;
  dry_run: boolean;
  /** `route:orders`, … */
  changed: string[];
  created?: boolean;
  warnings: readonly string[];
}

const DRY_RUN = {
  type: 'boolean',
  description:
    'Validate and compile the whole resulting configuration without applying or saving it. Default false.',
};

const SHAPES: Record<string, string> = {
  routes:
    '{"match": {"path": "/orders/*", "methods"?: ["GET"], "hosts"?: ["api.example.com"], "headers"?: {...}}, "policy": "<policy name>", "priority"?: 0}. The policy must exist; a new route is appended: routes are tried by priority (integer, higher first, default 0), then in list order, and the first match wins.',
  policies:
    '{"nodes": [{"id": "in", "type": "listener"}, {"id": "m", "type": "mocking", "config": {...}}, {"id": "out", "type": "client"}], "edges": [{"from": "in.out", "to": "m.in"}, {"from": "m.success", "to": "out.in"}], "error_handler"?: "<node id>"}. Every success and outcome port must be wired.',
  supernodes:
    '{"nodes": [{"id": "input", "type": "input"}, ..., {"id": "output", "type": "output"}], "edges": [...], "description"?: "..."}.',
  plugin_configs:
    '{"type": "<node type>", "config": {...}, "description"?: "..."}; nodes use it with config_ref.',
  stores: '{"type": "redis", "url": "${REDIS_URL}", ...}. Keep secrets as ${ENV} placeholders.',
  global_rules:
    '{"supernode": "<supernode name>", "params"?: {...}, "description"?: "..."}. The supernode is spliced after the listener of every policy, or with "phase": "response" before every client node (except in policies with global_rules: false), in list order; its only output boundary must be `output`.',
};

/**
 * Runs one edit through the Admin API's write path: with `dry_run` the
 * edited copy is only compiled; otherwise validate → compile → persist →
 * swap, live for the next request.
 */
async function write(
  ctx: ToolContext,
  dry: boolean,
  changed: string[],
  edit: (draft: GatewayConfig) => void,
): Promise<WriteResult> {
  try {
    const warnings = dry ? await dryRun(ctx.gateway, edit) : (await mutate(ctx.gateway, edit)).warnings;
    ctx.logger.info(
      { tool: 'mcp', token: ctx.principal.name ?? 'unnamed', changed, dry_run: dry },
      dry ? 'mcp dry run passed' : 'mcp change applied',
    );
    return { applied: !dry, dry_run: dry, changed, warnings };
  } catch (err) {
    throw toToolError(err, !dry);
  }
}

function writeTools(kind: ToolKind): ToolDef[] {
  const shape = SHAPES[kind.section] as string;
  const putSchema: InputSchema = {
    type: 'object',
    properties: {
      name: {
        type: 'string',
        description: `The ${kind.singular} name; wins over a name inside the definition.`,
      },
      definition: {
        type: ['object', 'string'],
        description: `The ${kind.singular} as a JSON object or a YAML string: ${shape}`,
      },
      [kind.singular]: { type: ['object', 'string'], description: 'Alias of `definition`.' },
      dry_run: DRY_RUN,
    },
    additionalProperties: false,
  };
  return [
    {
      name: `put_${kind.singular}`,
      scope: 'write',
      description: `Create or replace a ${kind.singular.replace('_', ' ')} (upsert). Definition: ${shape} Call with dry_run=true first; a successful write is live at once and saved like an Admin API change. Values shown as <redacted> by the read tools may be sent back unchanged: the stored secret is kept.`,
      inputSchema: putSchema,
      run: async (args, ctx) => {
        const body = definition(args, ['definition', kind.singular]);
        const name = str(args, 'name') ?? (typeof body['name'] === 'string' ? body['name'].trim() : '');
        if (name === '')
          throw invalidInput(`give the ${kind.singular} name as 'name' or inside the definition`);
        const stored = listOf(ctx.gateway.runtime.config, kind.section).find((i) => i.name === name);
        const { value, missing } = restoreSecrets({ ...body, name }, stored);
        if (missing.length > 0)
          throw invalidInput(
            `<redacted> stands for a stored secret, but nothing is stored at ${missing.join(', ')}; send the real value or a \${ENV} placeholder`,
          );
        const admin = adminKind(ctx.gateway, kind.section);
        let created = false;
        const result = await write(ctx, flag(args, 'dry_run'), [`${kind.singular}:${name}`], (draft) => {
          created = putItem(draft, admin, value as Named, { upsert: true });
        });
        return { ...result, created };
      },
    },
    {
      name: `delete_${kind.singular}`,
      scope: 'write',
      description: `Delete a ${kind.singular.replace('_', ' ')} by name. Refused with invalid_config while something still references it (the errors list the referrers). dry_run supported.`,
      inputSchema: {
        type: 'object',
        properties: { name: { type: 'string', minLength: 1 }, dry_run: DRY_RUN },
        required: ['name'],
        additionalProperties: false,
      },
      run: (args, ctx) => {
        const name = requiredStr(args, 'name');
        if (!listOf(ctx.gateway.runtime.config, kind.section).some((i) => i.name === name))
          throw notFound(kind.singular, name);
        const admin = adminKind(ctx.gateway, kind.section);
        return write(ctx, flag(args, 'dry_run'), [`${kind.singular}:${name}`], (draft) =>
          removeItem(draft, admin, name),
        );
      },
    },
  ];
}

/** put_/delete_ for every section an agent may change (consumers stay read-only over MCP). */
export const writeToolsAll: ToolDef[] = TOOL_KINDS.filter((k) => k.section !== 'consumers').flatMap(
  writeTools,
);
