import type { Gateway } from '../gateway.js';
import { StoreError } from '../stores/index.js';
import { adminError, type AdminError, json, notFound } from './http.js';
import type { AdminRoute } from './router.js';

/** The Admin answer for a failed store operation: 504 past the budget, 502 otherwise (docs/admin-api.md). */
export function storeFailure(err: unknown): AdminError {
  if (!(err instanceof StoreError)) throw err;
  const fields = { message: err.message, store: err.store };
  return err.code === 'STORE_TIMEOUT'
    ? adminError('store_timeout', fields)
    : adminError('store_unavailable', fields);
}

/**
 * `POST /api/stores/:name/ping`: PING through the running configuration's
 * connection (resolved placeholders, shared client) and report latency and
 * the server version; never any connection detail.
 */
export function storePingRoute(gateway: Gateway): AdminRoute {
  return {
    method: 'POST',
    path: '/api/stores/:name/ping',
    auth: true,
    handler: async ({ params }) => {
      const name = params.name as string;
      const store = gateway.runtime.stores.get(name);
      if (store === undefined) throw notFound();
      try {
        const { latency_ms, server_version } = await store.ping();
        return json(200, { status: 'ok', latency_ms, version: server_version, server_version });
      } catch (err) {
        throw storeFailure(err);
      }
    },
  };
}
