import { canonicalConfig } from '../../../config/canonical.js';
import { rollbackTo } from '../../config-history.js';
import { invalidInput, notFound, toToolError } from '../errors.js';
import { maskSecrets } from '../secrets.js';
import type { InputSchema, ToolDef } from './types.js';

const VERSION_ARG: InputSchema = {
  type: 'object',
  properties: {
    version: { type: 'integer', minimum: 1, description: 'A version from list_config_history.' },
  },
  required: ['version'],
  additionalProperties: false,
};

const versionOf = (args: Record<string, unknown>): number => {
  const version = args['version'];
  if (typeof version !== 'number' || !Number.isInteger(version))
    throw invalidInput("'version' must be an integer", 'call list_config_history for the versions kept');
  return version;
};

/** The configuration history and rollback (docs/mcp.md#history-and-rollback). */
export const historyTools: ToolDef[] = [
  {
    name: 'list_config_history',
    scope: 'read',
    description:
      'The versions of the applied configuration, newest first: {versions: [{version, time, user, source (startup, file, signal, admin, mcp, apply, rollback, etcd), summary, sha256}]}. Bounded by admin.history.max_versions.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    run: async (_args, ctx) => ({ versions: await ctx.gateway.history.versions() }),
  },
  {
    name: 'get_config_version',
    scope: 'read',
    description:
      'The whole configuration of one history version (secrets <redacted>), to compare with the running one before a rollback.',
    inputSchema: VERSION_ARG,
    run: async (args, ctx) => {
      const version = versionOf(args);
      const content = await ctx.gateway.history.content(version);
      if (content === undefined) throw notFound('version', String(version));
      return { version, config: maskSecrets(canonicalConfig(content), ctx.redaction) };
    },
  },
  {
    name: 'rollback_config',
    scope: 'write',
    description:
      'Apply the content of an earlier history version again. It becomes a new version (source rollback) with the same sha256 as its target; answers that entry.',
    inputSchema: VERSION_ARG,
    run: async (args, ctx) => {
      const version = versionOf(args);
      try {
        return await rollbackTo(ctx.gateway, version);
      } catch (err) {
        throw toToolError(err, true);
      }
    },
  },
];
