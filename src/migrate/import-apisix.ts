import type { ConsumerConfig, PluginConfigEntry } from '../config/gateway.js';
import {
  buildPolicy,
  clean,
  PolicySet,
  shareConfigs,
  StoreSet,
  uniqueName,
  type NodeStep,
  type Step,
} from './import-graph.js';
import {
  APISIX_AUTH,
  APISIX_PRIORITY,
  apisixTargets,
  translateApisix,
  type ApisixTranslation,
} from './import-apisix-plugins.js';
import type { ImportReport } from './import-report.js';
import { isObj, num, objects, str, strings, type ImportResult, type Obj } from './import-source.js';

/**
 * `switchyard import apisix`: a standalone apisix.yaml as a gateway.yaml. Plugins merge with
 * APISIX's precedence (consumer > consumer group > route > plugin config > service); global
 * rules run before the route's plugins in every policy; consumer and consumer-group plugins
 * branch on the consumer after the auth nodes.
 */

const TOP_LEVEL = new Set([
  'routes',
  'services',
  'upstreams',
  'consumers',
  'consumer_groups',
  'plugin_configs',
  'global_rules',
  'ssls',
]);
const CREDENTIAL_PLUGINS: Record<string, (c: Obj) => Obj | undefined> = {
  'key-auth': (c) => (str(c.key) === undefined ? undefined : { key: str(c.key) }),
  'basic-auth': (c) =>
    str(c.username) === undefined
      ? undefined
      : { username: str(c.username), password: str(c.password) ?? '' },
  'jwt-auth': (c) =>
    str(c.key) === undefined
      ? undefined
      : clean({
          key: str(c.key),
          secret: str(c.secret),
          public_key: str(c.public_key),
          algorithm: str(c.algorithm),
        }),
  'hmac-auth': (c) => {
    const key = str(c.access_key) ?? str(c.key_id);
    return key === undefined ? undefined : { access_key: key, secret_key: str(c.secret_key) };
  },
};

const LB: Record<string, string> = {
  roundrobin: 'round_robin',
  chash: 'chash',
  ewma: 'ewma',
  least_conn: 'least_connections',
};

const byId = (list: Obj[]) => new Map(list.map((o, i) => [str(o.id) ?? String(i + 1), o]));

export function importApisix(doc: Obj, report: ImportReport): ImportResult {
  for (const key of Object.keys(doc))
    if (!TOP_LEVEL.has(key)) report.unmappedItem(key, 'this kind of resource is not imported');
  const upstreams = byId(objects(doc.upstreams, 'upstreams'));
  const services = byId(objects(doc.services, 'services'));
  const pluginConfigsIn = byId(objects(doc.plugin_configs, 'plugin_configs'));
  const groups = byId(objects(doc.consumer_groups, 'consumer_groups'));
  const stores = new StoreSet();
  const pluginConfigs: PluginConfigEntry[] = [];
  const configNames = new Set<string>();
  const upstreamRefs = new Map<string, string>();

  const upstreamConfig = (u: Obj, where: string): Obj | undefined => {
    const targets = apisixTargets(u.nodes);
    if (targets.length === 0) {
      report.unmappedItem(
        `${where}.nodes`,
        str(u.service_name) !== undefined ? 'service discovery is not imported' : 'no nodes',
      );
      return undefined;
    }
    const type = str(u.type) ?? 'roundrobin';
    let lb = LB[type];
    if (lb === undefined) {
      report.unmappedItem(`${where}.type`, `${type}: balanced round robin instead`);
      lb = 'round_robin';
    }
    let hashOn: string | undefined;
    if (lb === 'chash') {
      const on = str(u.hash_on) ?? 'vars';
      const key = str(u.key) ?? 'remote_addr';
      hashOn =
        on === 'header'
          ? `http_${key.toLowerCase().replace(/-/g, '_')}`
          : on === 'cookie'
            ? `cookie_${key}`
            : on === 'consumer'
              ? 'consumer_name'
              : key;
    }
    const checks = isObj(u.checks) ? u.checks : {};
    const active = isObj(checks.active) ? checks.active : undefined;
    const healthy = isObj(active?.healthy) ? active.healthy : {};
    const unhealthy = isObj(active?.unhealthy) ? active.unhealthy : {};
    const passive =
      isObj(checks.passive) && isObj(checks.passive.unhealthy) ? checks.passive.unhealthy : undefined;
    const intervals = [num(healthy.interval), num(unhealthy.interval)].filter(
      (n): n is number => n !== undefined && n > 0,
    );
    if (intervals.length === 2 && intervals[0] !== intervals[1])
      report.note(
        `${where}.checks.active`,
        'one probe interval (the shorter) for healthy and unhealthy targets',
      );
    const timeout = isObj(u.timeout) ? u.timeout : undefined;
    if (timeout !== undefined)
      report.note(
        `${where}.timeout`,
        'connect, send and read add up to one timeout_ms; read also bounds the silence within a body',
      );
    for (const key of ['tls', 'keepalive_pool', 'discovery_type', 'service_name'])
      if (u[key] !== undefined) report.unmappedItem(`${where}.${key}`, 'not imported');
    return clean({
      targets,
      load_balancing: lb,
      hash_on: hashOn,
      scheme: str(u.scheme),
      retries: num(u.retries),
      timeout_ms:
        timeout === undefined
          ? undefined
          : Math.round(
              ((num(timeout.connect) ?? 60) + (num(timeout.send) ?? 60) + (num(timeout.read) ?? 60)) * 1000,
            ),
      stream_idle_timeout_ms:
        timeout === undefined ? undefined : Math.round((num(timeout.read) ?? 60) * 1000),
      pass_host: str(u.pass_host),
      upstream_host: str(u.upstream_host),
      health_check: {
        ...(active === undefined
          ? {}
          : {
              active: clean({
                path: str(active.http_path) ?? '/',
                interval_ms: intervals.length > 0 ? Math.round(Math.min(...intervals) * 1000) : undefined,
                timeout_ms:
                  num(active.timeout) === undefined
                    ? undefined
                    : Math.round((num(active.timeout) ?? 1) * 1000),
                healthy_threshold: num(healthy.successes),
                unhealthy_threshold: num(unhealthy.http_failures) ?? num(unhealthy.tcp_failures),
                healthy_statuses: Array.isArray(healthy.http_statuses)
                  ? healthy.http_statuses.map(Number)
                  : undefined,
              }),
            }),
        ...(passive === undefined
          ? {}
          : { passive: { max_fails: num(passive.tcp_failures) ?? num(passive.http_failures) ?? 3 } }),
      },
    });
  };
  const sharedUpstream = (id: string): string | undefined => {
    const found = upstreamRefs.get(id);
    if (found !== undefined) return found;
    const u = upstreams.get(id);
    if (u === undefined) return undefined;
    const config = upstreamConfig(u, `upstreams[${id}]`);
    if (config === undefined) return undefined;
    const name = uniqueName(str(u.name) ?? `upstream-${id}`, configNames);
    pluginConfigs.push({ name, type: 'upstream', config });
    upstreamRefs.set(id, name);
    return name;
  };
  const upstreamNode = (route: Obj, service: Obj | undefined, where: string): NodeStep | undefined => {
    for (const [holder, w] of [
      [route, where],
      [service, `${where}.service`],
    ] as const) {
      if (holder === undefined) continue;
      if (isObj(holder.upstream)) {
        const config = upstreamConfig(holder.upstream, `${w}.upstream`);
        return config === undefined ? undefined : { kind: 'node', id: 'upstream', type: 'upstream', config };
      }
      const id = str(holder.upstream_id);
      if (id !== undefined) {
        const ref = sharedUpstream(id);
        if (ref === undefined)
          report.unmappedItem(`${w}.upstream_id`, `upstream ${id} is not in the file, or has no nodes`);
        return ref === undefined
          ? undefined
          : { kind: 'node', id: 'upstream', type: 'upstream', config_ref: ref };
      }
    }
    return undefined;
  };

  // Consumers: auth plugins are credentials; other plugins apply to requests once authenticated.
  const consumers: ConsumerConfig[] = [];
  const consumerPlugins = new Map<string, Obj>();
  for (const [i, c] of objects(doc.consumers, 'consumers').entries()) {
    const name = str(c.username) ?? `consumer-${i + 1}`;
    const where = `consumers[${name}]`;
    const out: ConsumerConfig = { name };
    const group = str(c.group_id);
    if (group !== undefined) out.group = group;
    if (str(c.desc) !== undefined) out.description = str(c.desc) as string;
    if (isObj(c.labels))
      out.labels = Object.fromEntries(Object.entries(c.labels).map(([k, v]) => [k, String(v)]));
    const credentials: Record<string, Record<string, unknown>> = {};
    const others: Obj = {};
    for (const [plugin, config] of Object.entries(isObj(c.plugins) ? c.plugins : {})) {
      const cred = CREDENTIAL_PLUGINS[plugin];
      if (cred !== undefined && isObj(config)) {
        const mapped = cred(config);
        if (mapped === undefined)
          report.unmappedItem(`${where}.plugins.${plugin}`, 'a credential without its identifying field');
        else credentials[plugin] = mapped;
      } else others[plugin] = config;
    }
    const fromGroup = group === undefined ? {} : (groups.get(group)?.plugins ?? {});
    if (group !== undefined && !groups.has(group))
      report.unmappedItem(`${where}.group_id`, `consumer group ${group} is not in the file`);
    consumerPlugins.set(name, { ...(isObj(fromGroup) ? fromGroup : {}), ...others });
    if (Object.keys(credentials).length > 0) out.credentials = credentials;
    consumers.push(out);
  }

  const globalPlugins: [string, Obj, string][] = [];
  for (const [i, rule] of objects(doc.global_rules, 'global_rules').entries())
    for (const [name, config] of Object.entries(isObj(rule.plugins) ? rule.plugins : {}))
      globalPlugins.push([
        name,
        isObj(config) ? config : {},
        `global_rules[${str(rule.id) ?? i}].plugins.${name}`,
      ]);

  const policies = new PolicySet();
  const routes: Obj[] = [];
  const routeNames = new Set<string>();
  for (const [i, r] of objects(doc.routes, 'routes').entries()) {
    const id = str(r.id) ?? String(i + 1);
    const where = `routes[${id}]`;
    if (num(r.status) === 0) {
      report.note(where, 'disabled (status 0): not imported');
      continue;
    }
    for (const key of ['vars', 'remote_addrs', 'remote_addr', 'filter_func', 'script'])
      if (r[key] !== undefined) report.unmappedItem(`${where}.${key}`, 'has no route-level equivalent');
    const service = str(r.service_id) === undefined ? undefined : services.get(str(r.service_id) ?? '');
    if (str(r.service_id) !== undefined && service === undefined) {
      report.unmappedItem(`${where}.service_id`, 'names no service of the file');
      continue;
    }
    const upstream = upstreamNode(r, service, where);
    if (upstream === undefined && !isObj(r.plugins)) {
      report.unmappedItem(where, 'no upstream');
      continue;
    }
    const pc =
      str(r.plugin_config_id) === undefined ? undefined : pluginConfigsIn.get(str(r.plugin_config_id) ?? '');
    const merged: Record<string, [Obj, string]> = {};
    const layer = (plugins: unknown, w: string) => {
      for (const [name, config] of Object.entries(isObj(plugins) ? plugins : {}))
        merged[name] = [isObj(config) ? config : {}, `${w}.plugins.${name}`];
    };
    layer(service?.plugins, `services[${str(r.service_id)}]`);
    layer(pc?.plugins, `plugin_configs[${str(r.plugin_config_id)}]`);
    layer(r.plugins, where);

    const translate = (name: string, config: Obj, w: string): ApisixTranslation =>
      translateApisix({
        name,
        config,
        where: w,
        report,
        stores,
        upstreamTargets: (ref) => {
          const u = upstreams.get(String(ref));
          return u === undefined ? undefined : apisixTargets(u.nodes);
        },
      });
    const prio = (n: string) => APISIX_PRIORITY[n] ?? 0;
    const names = Object.keys(merged).sort((a, b) => prio(b) - prio(a));
    const authPrio = names.filter((n) => APISIX_AUTH.has(n)).map(prio);
    const lastAuth = authPrio.length > 0 ? Math.min(...authPrio) : Infinity;
    const phase = (name: string, which: keyof ApisixTranslation): Step[] => {
      const base = merged[name];
      const otherwise = base === undefined ? [] : (translate(name, base[0], base[1])[which] ?? []);
      if (authPrio.length === 0 || (which === 'request' && prio(name) >= lastAuth)) return otherwise;
      const cases: { consumers: string[]; steps: Step[] }[] = [];
      for (const [consumer, plugins] of consumerPlugins) {
        if (!isObj(plugins[name])) continue;
        const steps = translate(name, plugins[name], `consumers[${consumer}].plugins.${name}`)[which] ?? [];
        if (JSON.stringify(steps) === JSON.stringify(otherwise)) continue;
        const same = cases.find((k) => JSON.stringify(k.steps) === JSON.stringify(steps));
        if (same) same.consumers.push(consumer);
        else cases.push({ consumers: [consumer], steps });
      }
      return cases.length === 0
        ? otherwise
        : [{ kind: 'switch', id: `${name}-by-consumer`, cases, otherwise }];
    };
    // Plugins only consumers carry (none on the route) still run for them after the auth nodes.
    if (authPrio.length > 0)
      for (const plugins of consumerPlugins.values())
        for (const n of Object.keys(plugins)) if (!names.includes(n) && prio(n) < lastAuth) names.push(n);
    names.sort((a, b) => prio(b) - prio(a));
    const stepsOf = phase;
    const global = (which: keyof ApisixTranslation) =>
      [...globalPlugins]
        .sort((a, b) => prio(b[0]) - prio(a[0]))
        .flatMap(([n, c, w]) => translate(n, c, w)[which] ?? []);
    const graph = buildPolicy({
      request: [...global('request'), ...names.flatMap((n) => stepsOf(n, 'request'))],
      ...(upstream === undefined ? {} : { upstream }),
      afterUpstream: names.flatMap((n) => (merged[n] === undefined ? [] : phase(n, 'afterUpstream'))),
      response: [...names.flatMap((n) => stepsOf(n, 'response')), ...global('response')],
    });
    const routeName = uniqueName(str(r.name) ?? id, routeNames);
    const policy = policies.policyFor([str(service?.name) ?? routeName, routeName], graph);
    const uris = [...strings(r.uris), ...strings(r.uri)];
    const hosts = [...strings(r.hosts), ...strings(r.host), ...(service ? strings(service.hosts) : [])];
    const methods = strings(r.methods).map((m) => m.toUpperCase());
    (uris.length > 0 ? uris : ['/*']).forEach((uri, j) => {
      const path = uri.replace(/\/:[^/]+/g, '/*');
      if (uri.endsWith('*') && !uri.endsWith('/*'))
        report.unmappedItem(`${where}.uri`, `${uri}: a prefix ends at a segment here (/*)`);
      const match: Obj = { path };
      if (hosts.length === 1) match.host = hosts[0];
      else if (hosts.length > 1) match.hosts = hosts;
      if (methods.length > 0) match.methods = methods;
      const route: Obj = {
        name: uris.length > 1 ? uniqueName(`${routeName}-${j + 1}`, routeNames) : routeName,
        match,
        policy,
      };
      if (num(r.priority) !== undefined && num(r.priority) !== 0) route.priority = num(r.priority);
      routes.push(route);
    });
    if (uris.some((u) => u.endsWith('/*')))
      report.note('routes', "a prefix /x/* also matches /x itself (APISIX's does not)");
  }
  shareConfigs(policies.policies, pluginConfigs);

  const files: ImportResult['files'] = [];
  for (const [i, ssl] of objects(doc.ssls, 'ssls').entries()) {
    const where = `ssls[${str(ssl.id) ?? i}]`;
    const snis = [...strings(ssl.snis), ...strings(ssl.sni)];
    const cert = str(ssl.cert);
    const key = str(ssl.key);
    if (cert === undefined || key === undefined || snis.length === 0) {
      report.unmappedItem(where, 'needs cert, key and snis');
      continue;
    }
    const stem = `${(snis[0] ?? 'cert').replace(/^\*\./, 'wildcard.').replace(/[^A-Za-z0-9.-]/g, '_')}-${i + 1}`;
    files.push(
      { path: `certs/${stem}.crt`, content: cert, where },
      { path: `certs/${stem}.key`, content: key, where },
    );
    if (report.systemYaml.length === 0) report.systemYaml.push('tls:', '  sni_certs:');
    for (const name of snis)
      report.systemYaml.push(
        `    - { server_name: "${name}", cert_path: certs/${stem}.crt, key_path: certs/${stem}.key }`,
      );
  }

  const gateway: Obj = {};
  if (stores.stores.length > 0) gateway.stores = stores.stores;
  if (consumers.length > 0) gateway.consumers = consumers;
  if (pluginConfigs.length > 0) gateway.plugin_configs = pluginConfigs;
  gateway.routes = routes;
  gateway.policies = policies.policies;
  return { gateway, files };
}
