import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { listOf } from '../../resources.js';
import { parseGatewayConfig, type GatewayConfig } from '../../../config/gateway.js';
import type { Gateway } from '../../../gateway.js';
import { toToolError, ToolError } from '../errors.js';
import { flag } from './args.js';
import { TOOL_KINDS } from './kinds.js';
import type { ToolDef } from './types.js';

/**
 * Items of the live config that gateway.yaml does not hold as they are:
 * what a reload would throw away. Empty when the file cannot be read or
 * parsed (the reload itself then reports why).
 */
export function unsavedChanges(gateway: Gateway): string[] {
  const path = gateway.gatewayPath;
  if (path === undefined || gateway.system.config.source !== 'file') return [];
  let disk: GatewayConfig;
  try {
    disk = parseGatewayConfig(readFileSync(path, 'utf8'));
  } catch {
    return [];
  }
  const live = gateway.runtime.config;
  const out: string[] = [];
  for (const kind of TOOL_KINDS) {
    const mine = listOf(live, kind.section);
    const theirs = listOf(disk, kind.section);
    for (const item of mine) {
      const other = theirs.find((i) => i.name === item.name);
      if (other === undefined) out.push(`${kind.singular} '${item.name}' exists only in memory`);
      else if (!isDeepStrictEqual(other, item))
        out.push(`${kind.singular} '${item.name}' differs from the file`);
    }
    for (const item of theirs) {
      if (!mine.some((i) => i.name === item.name))
        out.push(`${kind.singular} '${item.name}' exists only in the file`);
    }
  }
  return out;
}

export const reloadTool: ToolDef = {
  name: 'reload_config',
  scope: 'write',
  description:
    'Re-read the configuration source (gateway.yaml) and apply it, as POST /api/config/reload does. Not needed after put_*/delete_*: those are live at once. When the live configuration holds changes the file lacks (config.persist: false), it refuses with unsaved_changes listing them, unless discard_unsaved is true.',
  inputSchema: {
    type: 'object',
    properties: {
      discard_unsaved: {
        type: 'boolean',
        description: 'Reload even though live changes missing from the file would be lost. Default false.',
      },
    },
    additionalProperties: false,
  },
  run: async (args, ctx) => {
    const pending = unsavedChanges(ctx.gateway);
    if (pending.length > 0 && !flag(args, 'discard_unsaved')) {
      throw new ToolError(
        'unsaved_changes',
        'the live configuration has changes that gateway.yaml lacks; reloading would discard them',
        pending,
        'put_*/delete_* changes are live already; call reload_config with discard_unsaved=true to really return to the file',
      );
    }
    try {
      const reply = await ctx.admin('POST', '/api/config/reload');
      return { ...(reply.body as Record<string, unknown>), discarded: pending };
    } catch (err) {
      throw toToolError(err, true);
    }
  },
};
