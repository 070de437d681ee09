import { renderTrace } from '../debug/render.js';
import { runSandbox, SandboxError } from '../debug/sandbox.js';
import type { TraceFilter } from '../debug/store.js';
import type { Gateway } from '../gateway.js';
import { AdminError, badRequest, json, notFound, readJsonObject, bodyLimitsOf } from './http.js';
import type { AdminRoute } from './router.js';

/**
 * `/api/debug/*` (docs/admin-api.md, docs/debugging.md). Everything but the config answers 404 while
 * debug mode is off: these endpoints dump request contexts and run nodes, so
 * they do not even admit to existing. The config always answers, so a UI can
 * explain which key to set.
 */
export function debugRoutes(gateway: Gateway): AdminRoute[] {
  const debug = gateway.debug;
  const enabled = (): void => {
    if (!debug.enabled) throw notFound();
  };
  return [
    {
      method: 'GET',
      path: '/api/debug/config',
      auth: true,
      handler: () => json(200, debug.settings()),
    },
    {
      method: 'GET',
      path: '/api/debug/traces',
      auth: true,
      handler: ({ query }) => {
        enabled();
        return json(200, debug.store.list(traceFilter(query)));
      },
    },
    {
      method: 'DELETE',
      path: '/api/debug/traces',
      auth: true,
      handler: () => {
        enabled();
        return json(200, { status: 'cleared', removed: debug.store.clear() });
      },
    },
    {
      method: 'GET',
      path: '/api/debug/traces/:id',
      auth: true,
      handler: ({ params }) => {
        enabled();
        const trace = debug.store.get(params['id'] ?? '');
        if (trace === undefined) throw notFound();
        return json(200, renderTrace(trace));
      },
    },
    {
      method: 'POST',
      path: '/api/debug/sandbox',
      auth: true,
      handler: async ({ req }) => {
        if (!debug.sandboxEnabled) throw notFound();
        try {
          return json(
            200,
            await runSandbox(gateway, await readJsonObject(req, bodyLimitsOf(gateway.system))),
          );
        } catch (err) {
          if (err instanceof SandboxError) throw new AdminError(err.status, err.body);
          throw err;
        }
      },
    },
  ];
}

/** `route`, `policy`, `status`, `source`, `limit`; a blank value is no filter. Shared with the MCP `list_traces` tool. */
export function traceFilter(query: URLSearchParams): TraceFilter {
  const value = (name: string): string | undefined => {
    const v = query.get(name)?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const filter: TraceFilter = {};
  const route = value('route');
  const policy = value('policy');
  const status = value('status');
  const source = value('source');
  const limit = value('limit');
  if (route !== undefined) filter.route = route;
  if (policy !== undefined) filter.policy = policy;
  if (status !== undefined) {
    const n = Number(status);
    if (!Number.isInteger(n) || n < 0)
      throw badRequest(`status must be an HTTP status code (got '${status}')`);
    filter.status = n;
  }
  if (source !== undefined) {
    const s = source.toLowerCase();
    // `request` is live traffic, as the reference names it; `live` stays an alias.
    if (s === 'live' || s === 'request') filter.source = 'request';
    else if (s === 'sandbox') filter.source = 'sandbox';
    else throw badRequest(`source must be 'request' (alias 'live') or 'sandbox' (got '${source}')`);
  }
  if (limit !== undefined) {
    const n = Number(limit);
    if (!Number.isInteger(n) || n < 0)
      throw badRequest(`limit must be a non-negative integer (got '${limit}')`);
    filter.limit = n;
  }
  return filter;
}
