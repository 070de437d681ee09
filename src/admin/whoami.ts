import type { Gateway } from '../gateway.js';
import { basicAuthVerifier } from './auth.js';
import { json } from './http.js';
import type { AdminRoute } from './router.js';

/**
 * `GET /api/whoami`: the caller's user name and role, so the editor can show a
 * read-only console to a `viewer` (docs/admin-api.md#roles). The request has
 * already passed HTTP Basic; an account listed in `admin.users` carries its own
 * role, and the main `admin.username` account is always `admin`.
 */
export function whoamiRoute(gateway: Gateway): AdminRoute {
  const verify = basicAuthVerifier(gateway.system.admin?.users ?? []);
  return {
    method: 'GET',
    path: '/api/whoami',
    auth: true,
    handler: ({ req }) => {
      const outcome = verify(req.headers.authorization);
      if (outcome.kind === 'ok') return json(200, { username: outcome.username, role: outcome.role });
      return json(200, { username: gateway.system.admin?.username ?? 'admin', role: 'admin' });
    },
  };
}
