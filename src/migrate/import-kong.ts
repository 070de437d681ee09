import {
  buildPolicy,
  PolicySet,
  shareConfigs,
  StoreSet,
  uniqueName,
  type NodeStep,
  type PolicyPlan,
  type Step,
} from './import-graph.js';
import { KONG_PLUGINS, type KongPlugin, type KongTranslation } from './import-kong-plugins.js';
import { kongConsumers, type KongConsumers } from './import-kong-consumers.js';
import { kongRoutes, kongUpstream, type KongService } from './import-kong-routes.js';
import type { ImportReport } from './import-report.js';
import { isObj, objects, str, extraKeys, type ImportResult, type Obj } from './import-source.js';

/**
 * `switchyard import kong`: a Kong 3.x declarative (decK) file as a gateway.yaml. Services and
 * their routes become routes and policies; plugins are resolved per route with Kong's
 * precedence (consumer+route+service > consumer+route > consumer+service > route+service >
 * consumer > route > service > global), ordered by Kong's plugin priorities, and
 * consumer-scoped ones branch on the consumer once it is known.
 */

const TOP_LEVEL = new Set([
  '_format_version',
  '_transform',
  '_info',
  '_workspace',
  '_comment',
  'services',
  'routes',
  'upstreams',
  'targets',
  'consumers',
  'plugins',
  'certificates',
  'snis',
  'keyauth_credentials',
  'basicauth_credentials',
  'jwt_secrets',
  'hmacauth_credentials',
  'acls',
]);

interface PluginInstance {
  name: string;
  config: Obj;
  where: string;
  key: string;
  service?: string;
  route?: string;
  consumer?: string;
}

/** Kong's order of specificity, most specific first (consumer groups are not read). */
function specificity(p: PluginInstance): number {
  const c = p.consumer !== undefined;
  const r = p.route !== undefined;
  const s = p.service !== undefined;
  if (c && r && s) return 8;
  if (c && r) return 7;
  if (c && s) return 6;
  if (r && s) return 5;
  if (c) return 4;
  if (r) return 3;
  if (s) return 2;
  return 1;
}

export function importKong(doc: Obj, report: ImportReport): ImportResult {
  for (const key of Object.keys(doc))
    if (!TOP_LEVEL.has(key)) report.unmappedItem(key, 'this kind of entity is not imported');
  const format = str(doc._format_version);
  if (format !== undefined && !/^[123](\.|$)/.test(format))
    report.note('_format_version', `${format}: read as a 3.x file`);

  const consumers = kongConsumers(doc, report);
  const stores = new StoreSet();
  const services = new Map<string, KongService>();
  const routes: { route: Obj; where: string; service: string | undefined }[] = [];
  const plugins: PluginInstance[] = [];
  const addPlugins = (
    list: unknown,
    where: string,
    scope: Omit<PluginInstance, 'name' | 'config' | 'where' | 'key'>,
  ) => {
    objects(list, `${where}.plugins`).forEach((p, i) => {
      const name = str(p.name) ?? '';
      // Top-level plugins may repeat a name (scoped by service, route, consumer): their index tells them apart.
      const pWhere = where === '' ? `plugins[${i}:${name}]` : `${where}.plugins[${name || i}]`;
      if (p.enabled === false) {
        report.note(pWhere, 'disabled in the source: not imported');
        return;
      }
      const ref = (value: unknown): string | undefined =>
        isObj(value) ? (str(value.name) ?? str(value.id)) : str(value);
      const instance: PluginInstance = {
        name,
        config: isObj(p.config) ? p.config : {},
        where: pWhere,
        key: '',
        ...scope,
      };
      const service = ref(p.service);
      const route = ref(p.route);
      const consumer = ref(p.consumer);
      if (service !== undefined) instance.service = service;
      if (route !== undefined) instance.route = route;
      if (consumer !== undefined) instance.consumer = consumer;
      instance.key = [
        instance.service && `service=${instance.service}`,
        instance.route && `route=${instance.route}`,
        instance.consumer && `consumer=${instance.consumer}`,
        name,
      ]
        .filter(Boolean)
        .join('.');
      plugins.push(instance);
    });
  };

  objects(doc.services, 'services').forEach((s, i) => {
    const name = str(s.name) ?? str(s.id) ?? `service-${i + 1}`;
    const where = `services[${name}]`;
    services.set(name, { service: s, name, where });
    if (str(s.id) !== undefined) services.set(str(s.id) ?? '', { service: s, name, where });
    objects(s.routes, `${where}.routes`).forEach((r, j) => {
      const rWhere = `${where}.routes[${str(r.name) ?? j}]`;
      routes.push({ route: r, where: rWhere, service: name });
      const routeName = str(r.name) ?? str(r.id);
      if (routeName !== undefined) addPlugins(r.plugins, rWhere, { route: routeName, service: name });
      else if (isObj(r) && r.plugins !== undefined)
        report.unmappedItem(`${rWhere}.plugins`, 'plugins of a route without a name');
    });
    addPlugins(s.plugins, where, { service: name });
  });
  objects(doc.routes, 'routes').forEach((r, j) => {
    const rWhere = `routes[${str(r.name) ?? j}]`;
    const svc = isObj(r.service) ? (str(r.service.name) ?? str(r.service.id)) : str(r.service);
    const service = svc === undefined ? undefined : (services.get(svc)?.name ?? svc);
    routes.push({ route: r, where: rWhere, service });
    const routeName = str(r.name) ?? str(r.id);
    if (routeName !== undefined)
      addPlugins(r.plugins, rWhere, { route: routeName, ...(service ? { service } : {}) });
  });
  for (const c of consumers.entries) addPlugins(c.source.plugins, c.where, { consumer: c.name });
  addPlugins(doc.plugins, '', {});
  // A route plugin also names its route's service when the route has one: Kong's route+service.
  const routeService = new Map<string, string>();
  for (const r of routes) {
    const n = str(r.route.name) ?? str(r.route.id);
    if (n !== undefined && r.service !== undefined) routeService.set(n, r.service);
  }
  for (const p of plugins) {
    if (p.consumer !== undefined) p.consumer = consumers.nameOf(p.consumer) ?? p.consumer;
    if (p.route !== undefined && p.service === undefined) {
      const s = routeService.get(p.route);
      if (s !== undefined) p.service = s;
    }
    if (KONG_PLUGINS[p.name] === undefined)
      report.unmappedItem(p.where, `plugin ${p.name || '(no name)'} has no translation`);
  }

  const upstreams = kongUpstream(doc, report);
  const policies = new PolicySet();
  const routeNames = new Set<string>();
  const outRoutes: { route: Obj; sort: number[] }[] = [];

  for (const r of routes) {
    const svc = r.service === undefined ? undefined : services.get(r.service);
    if (svc === undefined) {
      report.unmappedItem(
        r.where,
        r.service === undefined ? 'a route without a service' : `service ${r.service} is not in the file`,
      );
      continue;
    }
    const routeName = str(r.route.name) ?? str(r.route.id);
    const mapped = kongRoutes(r.route, r.where, svc, upstreams, report);
    if (mapped === undefined) continue;
    const plan = planRoute(
      { route: routeName, service: svc.name },
      plugins,
      consumers,
      stores,
      report,
      mapped.rewrite,
      mapped.upstream,
    );
    const policy = policies.policyFor([svc.name, `${svc.name}-${routeName ?? 'route'}`], buildPolicy(plan));
    mapped.matches.forEach((m, i) => {
      const base = routeName ?? `${svc.name}-route`;
      const name = uniqueName(mapped.matches.length === 1 ? base : `${base}-${i + 1}`, routeNames);
      outRoutes.push({ route: { name, match: m.match, policy }, sort: m.sort });
    });
  }
  for (const p of plugins) {
    if (p.route !== undefined && !routes.some((r) => (str(r.route.name) ?? str(r.route.id)) === p.route))
      report.unmappedItem(p.where, `route ${p.route} is not in the file`);
  }

  // Kong tries the most specific route first; here the first declared match wins.
  outRoutes.sort((a, b) => {
    for (let i = 0; i < Math.max(a.sort.length, b.sort.length); i++) {
      const d = (b.sort[i] ?? 0) - (a.sort[i] ?? 0);
      if (d !== 0) return d;
    }
    return 0;
  });

  const pluginConfigs = [...upstreams.pluginConfigs];
  shareConfigs(policies.policies, pluginConfigs);
  const gateway: Record<string, unknown> = {};
  if (stores.stores.length > 0) gateway.stores = stores.stores;
  if (consumers.output.length > 0) gateway.consumers = consumers.output;
  if (pluginConfigs.length > 0) gateway.plugin_configs = pluginConfigs;
  gateway.routes = outRoutes.map((r) => r.route);
  gateway.policies = policies.policies;
  const files = consumers.certificates(doc);
  return { gateway, files };
}

type Scope = { route: string | undefined; service: string };

/** The effective instance of each plugin name for a route and an (optional) consumer. */
function resolve(
  plugins: PluginInstance[],
  scope: Scope,
  consumer: string | undefined,
): Map<string, PluginInstance> {
  const best = new Map<string, PluginInstance>();
  for (const p of plugins) {
    if (KONG_PLUGINS[p.name] === undefined) continue;
    if (p.route !== undefined && p.route !== scope.route) continue;
    if (p.service !== undefined && p.service !== scope.service) continue;
    if (p.consumer !== undefined && p.consumer !== consumer) continue;
    const current = best.get(p.name);
    if (current === undefined || specificity(p) > specificity(current)) best.set(p.name, p);
  }
  return best;
}

function planRoute(
  scope: Scope,
  plugins: PluginInstance[],
  consumers: KongConsumers,
  stores: StoreSet,
  report: ImportReport,
  rewrite: Step[],
  upstream: NodeStep,
): PolicyPlan {
  const translate = (p: PluginInstance | undefined): KongTranslation => {
    if (p === undefined) return {};
    const def = KONG_PLUGINS[p.name] as KongPlugin;
    if (!def.handled.includes('*'))
      for (const key of extraKeys(p.config, def.handled))
        report.unmappedItem(`${p.where}.config.${key}`, 'has no equivalent');
    return def.translate({
      name: p.name,
      config: p.config,
      where: p.where,
      key: p.key,
      report,
      stores,
      consumersInGroups: (groups) => consumers.inGroups(groups),
      consumerName: (ref) => consumers.nameOf(ref),
    });
  };
  const priority = (name: string): number => KONG_PLUGINS[name]?.priority ?? 0;
  const base = resolve(plugins, scope, undefined);
  const authPriorities = [...base.keys()].filter((n) => KONG_PLUGINS[n]?.auth === true).map(priority);
  // Plugins after the last auth plugin know the consumer: their consumer-scoped instances apply.
  const lastAuth = authPriorities.length > 0 ? Math.min(...authPriorities) : Infinity;
  const perConsumer = new Map<string, Map<string, PluginInstance>>();
  if (authPriorities.length > 0) {
    for (const c of consumers.withPlugins(plugins)) perConsumer.set(c, resolve(plugins, scope, c));
  } else {
    for (const p of plugins)
      if (
        p.consumer !== undefined &&
        (p.route === undefined || p.route === scope.route) &&
        (p.service === undefined || p.service === scope.service) &&
        KONG_PLUGINS[p.name]
      )
        report.note(
          p.where,
          `the route ${scope.route ?? ''} has no auth plugin, so no consumer is known and this plugin never runs there`,
        );
  }
  const names = new Set(base.keys());
  for (const set of perConsumer.values())
    for (const n of set.keys()) if (priority(n) < lastAuth) names.add(n);
  const ordered = [...names].sort((a, b) => priority(b) - priority(a));

  /** The steps of one plugin name in one phase, branching on the consumer where instances differ. */
  const steps = (name: string, phase: keyof KongTranslation, consumerAware: boolean): Step[] => {
    const fallback = base.get(name);
    const otherwise = translate(fallback)[phase] ?? [];
    if (!consumerAware) return otherwise;
    const cases: { consumers: string[]; instance: PluginInstance | undefined }[] = [];
    for (const [c, set] of perConsumer) {
      const mine = set.get(name);
      if (mine === fallback) continue;
      const same = cases.find((k) => k.instance === mine);
      if (same) same.consumers.push(c);
      else cases.push({ consumers: [c], instance: mine });
    }
    const same = JSON.stringify(otherwise);
    const differing = cases
      .map((k) => ({ consumers: k.consumers, steps: translate(k.instance)[phase] ?? [] }))
      .filter((k) => JSON.stringify(k.steps) !== same);
    if (differing.length === 0) return otherwise;
    return [
      {
        kind: 'switch',
        id: `${name}-by-consumer`,
        cases: differing,
        otherwise,
      },
    ];
  };
  return {
    request: [...ordered.flatMap((n) => steps(n, 'request', priority(n) < lastAuth)), ...rewrite],
    upstream,
    afterUpstream: ordered.flatMap((n) => steps(n, 'afterUpstream', false)),
    response: ordered.flatMap((n) => steps(n, 'response', authPriorities.length > 0)),
  };
}
