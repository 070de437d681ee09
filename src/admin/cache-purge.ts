import type { Gateway } from '../gateway.js';
import type { CacheTarget } from '../core/plugin.js';
import { adminError, json } from './http.js';
import type { AdminRoute } from './router.js';

/** One backend's outcome in a purge answer (docs/admin-api.md). */
export interface PurgeOutcome {
  backend: 'local' | 'redis';
  store?: string;
  removed: number;
}

export type PurgeResult =
  | { kind: 'not_found' }
  | { kind: 'purged'; purged: PurgeOutcome[] }
  | { kind: 'failed'; purged: PurgeOutcome[]; failures: string[] };

/**
 * Every backend holding namespace `id` in the running configuration, once
 * each: all `local` nodes share one cache, and nodes naming one store share it.
 */
export function cacheTargets(gateway: Gateway, id: string): CacheTarget[] {
  const byBackend = new Map<string, CacheTarget>();
  for (const policy of gateway.runtime.policies.values()) {
    for (const node of policy.nodes.values()) {
      const target = node.instance.cache;
      if (target?.id !== id) continue;
      const key = `${target.backend}\u0000${target.store}`;
      if (!byBackend.has(key)) byBackend.set(key, target);
    }
  }
  return [...byBackend.values()];
}

/**
 * Purges namespace `id` from every backend that holds it. A `local` backend
 * is this process only; a store backend is shared, so that purge is
 * cluster-wide. Used by `DELETE /api/cache/:id` (and meant for the MCP tool).
 */
export async function purgeCache(gateway: Gateway, id: string): Promise<PurgeResult> {
  const targets = cacheTargets(gateway, id);
  if (targets.length === 0) return { kind: 'not_found' };
  const settled = await Promise.allSettled(targets.map((t) => t.purge()));
  const purged: PurgeOutcome[] = [];
  const failures: string[] = [];
  settled.forEach((outcome, i) => {
    const target = targets[i] as CacheTarget;
    const where = target.backend === 'local' ? 'local' : `${target.backend} (store '${target.store}')`;
    if (outcome.status === 'rejected') {
      const reason = outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason);
      failures.push(`${where}: ${reason}`);
      return;
    }
    purged.push(
      target.backend === 'local'
        ? { backend: 'local', removed: outcome.value }
        : { backend: target.backend, store: target.store, removed: outcome.value },
    );
  });
  gateway.logger.info({ id, purged, failures }, 'cache namespace purged');
  return failures.length === 0 ? { kind: 'purged', purged } : { kind: 'failed', purged, failures };
}

export function cacheRoutes(gateway: Gateway): AdminRoute[] {
  return [
    {
      method: 'DELETE',
      path: '/api/cache/:id',
      auth: true,
      handler: async ({ params }) => {
        const id = params['id'] ?? '';
        const result = await purgeCache(gateway, id);
        if (result.kind === 'not_found') {
          throw adminError('not_found', {
            message: `no proxy-cache pair with id '${id}' in any policy`,
          });
        }
        if (result.kind === 'failed') {
          throw adminError('cache_purge_failed', {
            message: `purging '${id}' failed on ${result.failures.join('; ')}`,
            id,
            purged: result.purged,
          });
        }
        return json(200, { id, purged: result.purged });
      },
    },
  ];
}
