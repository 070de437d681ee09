import type { PluginDefinition } from './define.js';
import { client } from './structural/client.js';
import { listener } from './structural/listener.js';
import { echo } from './core/echo.js';
import { mocking } from './core/mocking.js';
import { proxyRewrite } from './core/proxy-rewrite.js';
import { realIp } from './core/real-ip.js';
import { requestId } from './core/request-id.js';
import { upstream } from './core/upstream.js';
import { errorHandler } from './errors/error-handler.js';
import { authPlugins } from './auth/index.js';
import { externalAuthzPlugins } from './auth/external-authz.js';
import { providerAuthPlugins } from './auth/providers.js';
import { securityPlugins } from './security/index.js';
import { faasPlugins } from './faas/index.js';
import { bodyTransformer } from './core/body-transformer/index.js';
import { brotli } from './core/brotli.js';
import { degraphql } from './core/degraphql.js';
import { errorPage } from './errors/error-page.js';
import { exitTransformer } from './errors/exit-transformer.js';
import { gzip } from './core/gzip.js';
import { redirect } from './core/redirect.js';
import { responseRewrite } from './core/response-rewrite.js';
import { setVars } from './core/set-vars.js';
import { apiBreaker } from './traffic/api-breaker.js';
import { condition } from './flow/condition.js';
import { dataMask } from './security/data-mask.js';
import { faultInjection } from './traffic/fault-injection.js';
import { proxyMirror } from './traffic/proxy-mirror.js';
import { trafficLabel } from './traffic/traffic-label.js';
import { trafficSplit } from './traffic/traffic-split.js';
import { scriptingPlugins } from './scripting/index.js';
import { storePlugins } from './stores/index.js';
import { casAuth } from './auth/cas-auth.js';
import { limitPlugins } from './limits/index.js';
import { cachePlugins } from './cache/index.js';
import { observabilityPlugins } from './observability/index.js';

type AnyPlugin = PluginDefinition<never, string>;

/**
 * The only list of node types. Compiler, /api/plugins, the editor, MCP and
 * docs all read it. Each family folder exports its definitions; add a family
 * with one import and one entry below.
 */
const families: readonly (readonly unknown[])[] = [
  [listener, client],
  [upstream, mocking, echo, proxyRewrite, realIp, requestId],
  [errorHandler],
  securityPlugins,
  faasPlugins,
  authPlugins,
  externalAuthzPlugins,
  providerAuthPlugins,
  [responseRewrite, redirect, setVars, bodyTransformer, degraphql, gzip, brotli],
  [exitTransformer, errorPage],
  [condition],
  [faultInjection, trafficLabel, trafficSplit, apiBreaker, proxyMirror],
  [dataMask],
  scriptingPlugins,
  storePlugins,
  [casAuth],
  limitPlugins,
  cachePlugins,
  observabilityPlugins,
];

const definitions = families.flat() as AnyPlugin[];

export const registry: ReadonlyMap<string, AnyPlugin> = buildRegistry(definitions);

function buildRegistry(list: AnyPlugin[]): Map<string, AnyPlugin> {
  const map = new Map<string, AnyPlugin>();
  for (const def of list) {
    if (map.has(def.type)) throw new Error(`plugin type '${def.type}' is registered twice`);
    map.set(def.type, def);
  }
  return map;
}
