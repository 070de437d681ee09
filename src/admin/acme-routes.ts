import type { Gateway } from '../gateway.js';
import { adminError, json, notFound } from './http.js';
import type { AdminRoute } from './router.js';

/**
 * `GET /api/acme/certs` and `POST /api/acme/certs/:id/renew[?force=true]`
 * (docs/admin-api.md). With ACME off the list says so in its body and renew is 501.
 */
export function acmeRoutes(gateway: Gateway): AdminRoute[] {
  return [
    {
      method: 'GET',
      path: '/api/acme/certs',
      auth: true,
      handler: () => {
        const acme = gateway.acme;
        if (acme === undefined) return json(200, { enabled: false, certs: [] });
        return json(200, { enabled: true, storage: acme.storageKind, certs: acme.list() });
      },
    },
    {
      method: 'POST',
      path: '/api/acme/certs/:id/renew',
      auth: true,
      handler: ({ params, query }) => {
        const acme = gateway.acme;
        if (acme === undefined) throw adminError('acme_disabled');
        const force = query.get('force') === 'true';
        switch (acme.renew(params.id as string, force)) {
          case 'scheduled':
            return json(202, { scheduled: true });
          case 'not_due':
            return json(200, { scheduled: false, reason: 'not_due' });
          case 'in_progress':
            throw adminError('in_progress');
          case 'unknown':
            throw notFound();
        }
      },
    },
  ];
}

/** Why the gateway is not ready for traffic, or undefined when it is. */
export function acmeNotReady(gateway: Gateway): Record<string, unknown> | undefined {
  const placeholders = gateway.acme?.placeholders() ?? [];
  if (placeholders.length === 0) return undefined;
  return { status: 'not_ready', reason: 'acme placeholder certs', acme: { placeholder: placeholders } };
}
