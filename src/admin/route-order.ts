import type { Gateway } from '../gateway.js';
import { badRequest, bodyLimitsOf, json, readJsonObject } from './http.js';
import { mutate } from './resources.js';
import type { AdminRoute } from './router.js';

/**
 * `PUT /api/route-order` with `{"names": [...]}`: puts the routes in this
 * declaration order, which decides among routes of equal `priority` (first
 * match wins, docs/routing.md#priority). `names` must list every route
 * exactly once, so a reorder never adds or drops one; the editor's
 * drag-to-reorder sends it (docs/editor.md#routes). With etcd the new order is
 * stored as the `order` field of the routes whose place changed, in one write
 * guarded like any other (docs/etcd.md#route-order), so every gateway on the
 * prefix runs it and it survives restarts.
 */
export function routeOrderRoute(gateway: Gateway): AdminRoute {
  return {
    method: 'PUT',
    path: '/api/route-order',
    auth: true,
    handler: async ({ req }) => {
      const body = await readJsonObject(req, bodyLimitsOf(gateway.system));
      const names = body.names;
      if (!Array.isArray(names) || !names.every((n): n is string => typeof n === 'string')) {
        throw badRequest('names must be an array of route names', [
          { path: 'names', message: 'must be an array of strings' },
        ]);
      }
      await mutate(gateway, (draft) => {
        const byName = new Map(draft.routes.map((r) => [r.name, r]));
        const missing = draft.routes.filter((r) => !names.includes(r.name)).map((r) => r.name);
        const unknown = names.filter((n) => !byName.has(n));
        if (missing.length > 0 || unknown.length > 0 || new Set(names).size !== names.length) {
          const message = `names must list every route exactly once (missing: ${missing.join(', ') || 'none'}; unknown: ${unknown.join(', ') || 'none'})`;
          throw badRequest(message, [{ path: 'names', message }]);
        }
        draft.routes = names.map((n) => byName.get(n) as (typeof draft.routes)[number]);
      });
      return json(200, { status: 'reordered', names });
    },
  };
}
