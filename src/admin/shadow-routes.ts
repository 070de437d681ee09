import type { Gateway } from '../gateway.js';
import { shadowRecords } from '../plugins/traffic/shadow-compare.js';
import { json, notFound } from './http.js';
import type { AdminRoute } from './router.js';

/**
 * `GET /api/shadow/{policy}/{node}` (docs/admin-api.md, docs/plugins/proxy-mirror.md#comparing-answers):
 * the last mismatches of a `proxy-mirror` node with `compare: true`, newest first. Header values of
 * credential-shaped names were masked and bodies cut when recorded, so a viewer reads the same list.
 * 404 for a node that never compared.
 */
export function shadowRoutes(gateway: Gateway): AdminRoute[] {
  return [
    {
      method: 'GET',
      path: '/api/shadow/:policy/:node',
      auth: true,
      handler: ({ params }) => {
        const list = shadowRecords(gateway.scope).list(params['policy'] ?? '', params['node'] ?? '');
        if (list === undefined) throw notFound();
        return json(200, { mismatches: list });
      },
    },
  ];
}
