import type { Gateway } from '../gateway.js';
import { deleteSession, deleteSubjectSessions, listSessions, SESSION_ID } from '../sessions/index.js';
import { StoreError, type Store } from '../stores/index.js';
import { adminError, badRequest, json, notFound } from './http.js';
import type { AdminRoute } from './router.js';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 1000;

function storeOf(gateway: Gateway, name: string | null | undefined): Store {
  if (name === null || name === undefined || name === '') throw badRequest('store is required');
  const store = gateway.runtime.stores.get(name);
  if (store === undefined) throw notFound();
  return store;
}

/** docs/admin-api.md: any store failure behind the session endpoints is a 502. */
async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (!(err instanceof StoreError)) throw err;
    throw adminError('store_unavailable', { message: err.message, store: err.store });
  }
}

function limitOf(raw: string | null): number {
  if (raw === null || raw === '') return DEFAULT_LIMIT;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIMIT) {
    throw badRequest(`limit must be an integer from 1 to ${MAX_LIMIT}`);
  }
  return n;
}

const optional = (value: string | null): string | undefined =>
  value === null || value === '' ? undefined : value;

/**
 * Server-side sessions of the interactive auth plugins (`kvstore` storage):
 * list metadata (never payloads), revoke one, revoke every session of a subject.
 * Revocation takes effect on the next request: sessions are read from the store
 * on every request. Cookie-storage sessions are not in any store and cannot be
 * listed or revoked.
 */
export function sessionRoutes(gateway: Gateway): AdminRoute[] {
  return [
    {
      method: 'GET',
      path: '/api/sessions',
      auth: true,
      handler: async ({ query }) => {
        const store = storeOf(gateway, query.get('store'));
        const page = await guarded(() =>
          listSessions(store, {
            subject: optional(query.get('subject')),
            plugin: optional(query.get('plugin')),
            limit: limitOf(query.get('limit')),
            cursor: optional(query.get('cursor')),
          }),
        );
        return json(200, page);
      },
    },
    {
      method: 'DELETE',
      path: '/api/sessions',
      auth: true,
      handler: async ({ query }) => {
        const store = storeOf(gateway, query.get('store'));
        const subject = optional(query.get('subject'));
        if (subject === undefined) throw badRequest('subject is required');
        const revoked = await guarded(() => deleteSubjectSessions(store, subject));
        return json(200, { revoked });
      },
    },
    {
      method: 'DELETE',
      path: '/api/sessions/:store/:id',
      auth: true,
      handler: async ({ params }) => {
        const id = params.id as string;
        if (!SESSION_ID.test(id))
          throw badRequest('invalid session id: expected 32 lowercase hex characters');
        const store = storeOf(gateway, params.store);
        await guarded(() => deleteSession(store, id));
        return json(200, { status: 'deleted' });
      },
    },
  ];
}
