import { readFileSync } from 'node:fs';
import { yamlLibrary } from '../config/yaml-data.js';
import { ConfigRejected, formatIssues } from '../config/schema-validate.js';
import type { Gateway } from '../gateway.js';
import { registry } from '../plugins/index.js';
import { listEnvVarNames, listVars } from '../template/index.js';
import { acmeNotReady, acmeRoutes } from './acme-routes.js';
import { certFileRoutes } from './cert-files.js';
import { mcpAdminRoutes } from './mcp/admin-routes.js';
import { cacheRoutes } from './cache-purge.js';
import { pluginCatalog } from './catalog.js';
import { debugRoutes } from './debug-routes.js';
import { traceTestRoutes } from './trace-test.js';
import { AdminError, json, readJsonObject, bodyLimitsOf } from './http.js';
import { adminProblemBody } from '../core/errors.js';
import { resourceKinds, resourceRoutes } from './resources.js';
import { sessionRoutes } from './sessions.js';
import { storePingRoute } from './store-ping.js';
import { templatePreviewRoute } from './template-preview.js';
import type { AdminRoute } from './router.js';
import { validatePolicy } from './validate-policy.js';
import { whoamiRoute } from './whoami.js';
import { routeOrderRoute } from './route-order.js';
import { configHistoryRoutes } from './config-history.js';
import { auditRoutes } from './audit.js';
import { shadowRoutes } from './shadow-routes.js';
import { dirname, resolve } from 'node:path';
import { listScripts } from '../lua/sources.js';

const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/**
 * The whole Admin API as data: the server dispatches from this table, and a
 * test walks it to prove that only `auth: false` routes answer without
 * credentials.
 */
export function adminRoutes(gateway: Gateway, startedAt: number = Date.now()): AdminRoute[] {
  return [
    { method: 'GET', path: '/healthz', auth: false, handler: () => json(200, { status: 'ok' }) },
    {
      method: 'GET',
      path: '/readyz',
      auth: false,
      handler: () => {
        const pending = gateway.notReady();
        if (pending !== undefined) return json(503, { status: 'not_ready', reason: pending });
        if (gateway.runtime.router.size === 0)
          return json(503, { status: 'not_ready', reason: 'the route table is empty' });
        const acme = acmeNotReady(gateway);
        return acme === undefined ? json(200, { status: 'ready' }) : json(503, acme);
      },
    },
    {
      method: 'GET',
      path: '/metrics',
      auth: true,
      handler: async () => {
        const { contentType, body } = await gateway.renderMetrics();
        return { status: 200, body, contentType };
      },
    },
    ...resourceKinds(gateway).flatMap((kind) => resourceRoutes(gateway, kind)),
    storePingRoute(gateway),
    templatePreviewRoute(gateway),
    ...sessionRoutes(gateway),
    {
      method: 'POST',
      path: '/api/policies/validate',
      auth: true,
      handler: async ({ req }) =>
        json(200, validatePolicy(gateway, await readJsonObject(req, bodyLimitsOf(gateway.system)))),
    },
    { method: 'GET', path: '/api/plugins', auth: true, handler: () => json(200, pluginCatalog(registry)) },
    ...cacheRoutes(gateway),
    ...debugRoutes(gateway),
    ...traceTestRoutes(gateway),
    ...acmeRoutes(gateway),
    ...certFileRoutes(gateway),
    ...mcpAdminRoutes(gateway),
    whoamiRoute(gateway),
    routeOrderRoute(gateway),
    ...configHistoryRoutes(gateway),
    ...auditRoutes(gateway),
    ...shadowRoutes(gateway),
    { method: 'GET', path: '/api/vars', auth: true, handler: () => json(200, listVars()) },
    {
      method: 'GET',
      path: '/api/scripts',
      auth: true,
      // The plugins/ folder beside the folder holding gateway.yaml (docs/admin-api.md).
      handler: () =>
        json(
          200,
          listScripts(gateway.gatewayPath === undefined ? undefined : dirname(resolve(gateway.gatewayPath))),
        ),
    },
    {
      method: 'GET',
      path: '/api/env-vars',
      auth: true,
      handler: () => json(200, listEnvVarNames(gateway.env)),
    },
    {
      method: 'GET',
      path: '/api/status',
      auth: true,
      handler: () => {
        const config = gateway.runtime.config;
        return json(200, {
          version: VERSION,
          routes: config.routes.length,
          policies: config.policies.length,
          supernodes: config.supernodes.length,
          plugin_configs: config.plugin_configs.length,
          stores: config.stores.length,
          consumers: config.consumers.length,
          global_rules: config.global_rules.length,
          config_source: gateway.system.config.source,
          persist: gateway.system.config.persist,
          uptime_seconds: Math.floor((Date.now() - startedAt) / 1000),
        });
      },
    },
    {
      method: 'GET',
      path: '/api/config/export',
      auth: true,
      handler: () => ({
        status: 200,
        body: yamlLibrary().stringify(gateway.runtime.config, { lineWidth: 0 }),
        contentType: 'text/yaml; charset=utf-8',
      }),
    },
    {
      method: 'POST',
      path: '/api/config/reload',
      auth: true,
      handler: async () => {
        try {
          const runtime = await gateway.reload('file');
          return json(200, {
            status: 'reloaded',
            routes: runtime.config.routes.length,
            policies: runtime.config.policies.length,
          });
        } catch (err) {
          if (!(err instanceof ConfigRejected)) throw err;
          throw new AdminError(500, adminProblemBody(formatIssues(err.issues), err.issues));
        }
      },
    },
  ];
}
