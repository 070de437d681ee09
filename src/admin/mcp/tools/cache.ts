import { cacheTargets, purgeCache } from '../../cache-purge.js';
import { ToolError } from '../errors.js';
import { flag, requiredStr } from './args.js';
import type { ToolDef } from './types.js';

export const purgeCacheTool: ToolDef = {
  name: 'purge_cache',
  scope: 'write',
  description:
    'Purge a proxy-cache namespace (the `id` shared by a cache lookup/store pair) from every backend that holds it: a local backend on this instance only, a store backend cluster-wide. dry_run lists the backends without deleting. Answers {id, purged: [{backend, store?, removed}]}.',
  inputSchema: {
    type: 'object',
    properties: {
      id: { type: 'string', minLength: 1, description: 'The proxy-cache id.' },
      dry_run: { type: 'boolean', description: 'Only list the backends. Default false.' },
    },
    required: ['id'],
    additionalProperties: false,
  },
  run: async (args, ctx) => {
    const id = requiredStr(args, 'id');
    const missing = new ToolError('not_found', `no proxy-cache pair with id '${id}' in any policy`);
    if (flag(args, 'dry_run')) {
      const targets = cacheTargets(ctx.gateway, id);
      if (targets.length === 0) throw missing;
      return {
        id,
        dry_run: true,
        backends: targets.map((t) =>
          t.backend === 'local' ? { backend: 'local' } : { backend: t.backend, store: t.store },
        ),
      };
    }
    const result = await purgeCache(ctx.gateway, id);
    if (result.kind === 'not_found') throw missing;
    if (result.kind === 'failed')
      throw new ToolError(
        'store_error',
        `purging '${id}' failed on ${result.failures.join('; ')}`,
        result.failures,
      );
    return { id, purged: result.purged };
  },
};
