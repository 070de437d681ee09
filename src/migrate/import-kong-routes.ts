import type { PluginConfigEntry } from '../config/gateway.js';
import { clean, node, uniqueName, type NodeStep, type Step } from './import-graph.js';
import type { ImportReport } from './import-report.js';
import {
  bool,
  escapeRegex,
  extraKeys,
  isObj,
  num,
  obj,
  objects,
  splitHostPort,
  str,
  strings,
  type Obj,
} from './import-source.js';

/**
 * Kong services, upstreams and targets as shared `upstream` configs, and Kong routes as route
 * matches plus the path rewrite Kong applies (strip_path, the service's path).
 */

export interface KongService {
  service: Obj;
  name: string;
  where: string;
}

export interface KongUpstreams {
  pluginConfigs: PluginConfigEntry[];
  /** The upstream node of a service: a `config_ref` to its shared config, with service settings. */
  nodeFor(svc: KongService, preserveHost: boolean): NodeStep | undefined;
}

const LB: Record<string, string> = {
  'round-robin': 'round_robin',
  'least-connections': 'least_connections',
  latency: 'ewma',
  'consistent-hashing': 'chash',
};

const UPSTREAM_KEYS = [
  'id',
  'name',
  'algorithm',
  'hash_on',
  'hash_fallback',
  'hash_on_header',
  'hash_fallback_header',
  'hash_on_cookie',
  'hash_on_cookie_path',
  'hash_on_query_arg',
  'hash_fallback_query_arg',
  'hash_on_uri_capture',
  'hash_fallback_uri_capture',
  'healthchecks',
  'slots',
  'host_header',
  'targets',
  'tags',
  'use_srv_name',
  'created_at',
  'updated_at',
];

function hashOn(u: Obj, where: string, report: ImportReport): string | undefined {
  const on = str(u.hash_on) ?? 'none';
  switch (on) {
    case 'none':
      return undefined;
    case 'consumer':
      return 'consumer_name';
    case 'ip':
      return 'remote_addr';
    case 'header':
      return `http_${(str(u.hash_on_header) ?? '').toLowerCase().replace(/-/g, '_')}`;
    case 'cookie':
      return `cookie_${str(u.hash_on_cookie) ?? ''}`;
    case 'path':
      return 'uri';
    case 'query_arg':
      return `arg_${str(u.hash_on_query_arg) ?? ''}`;
    default:
      report.unmappedItem(`${where}.hash_on`, `${on}: hashed on the client address instead`);
      return 'remote_addr';
  }
}

function healthChecks(u: Obj, where: string, report: ImportReport): Obj {
  const hc = obj(u.healthchecks, `${where}.healthchecks`);
  const active = obj(hc.active, `${where}.healthchecks.active`);
  const healthy = obj(active.healthy, `${where}.healthchecks.active.healthy`);
  const unhealthy = obj(active.unhealthy, `${where}.healthchecks.active.unhealthy`);
  const out: Obj = {};
  const intervals = [num(healthy.interval) ?? 0, num(unhealthy.interval) ?? 0].filter((i) => i > 0);
  if (intervals.length > 0) {
    const type = str(active.type) ?? 'http';
    if (type === 'tcp')
      report.unmappedItem(`${where}.healthchecks.active.type`, 'tcp probes: probed with HTTP GET instead');
    if (intervals.length === 2 && intervals[0] !== intervals[1])
      report.note(
        `${where}.healthchecks.active`,
        'one probe interval (the shorter) for healthy and unhealthy targets',
      );
    const failures = Math.max(
      num(unhealthy.http_failures) ?? 0,
      num(unhealthy.tcp_failures) ?? 0,
      num(unhealthy.timeouts) ?? 0,
    );
    out.active = clean({
      path: str(active.http_path) ?? '/',
      interval_ms: Math.max(10, Math.round(Math.min(...intervals) * 1000)),
      timeout_ms: Math.max(1, Math.round((num(active.timeout) ?? 1) * 1000)),
      healthy_statuses:
        strings(healthy.http_statuses).length > 0 ? strings(healthy.http_statuses).map(Number) : undefined,
      healthy_threshold: Math.max(1, num(healthy.successes) ?? 2),
      unhealthy_threshold: Math.max(1, failures || 3),
    });
  }
  const passive = obj(
    obj(hc.passive, `${where}.healthchecks.passive`).unhealthy,
    `${where}.healthchecks.passive.unhealthy`,
  );
  const fails = Math.max(num(passive.tcp_failures) ?? 0, num(passive.timeouts) ?? 0);
  // Kong's passive checks are off unless thresholds are set; so are they here then.
  out.passive = { max_fails: fails };
  if ((num(passive.http_failures) ?? 0) > 0)
    report.unmappedItem(
      `${where}.healthchecks.passive.unhealthy.http_failures`,
      '5xx answers never eject a target',
    );
  return out;
}

export function kongUpstream(doc: Obj, report: ImportReport): KongUpstreams {
  const byName = new Map<string, { u: Obj; where: string; targets: Obj[] }>();
  objects(doc.upstreams, 'upstreams').forEach((u, i) => {
    const name = str(u.name) ?? `upstream-${i + 1}`;
    const entry = {
      u,
      where: `upstreams[${name}]`,
      targets: objects(u.targets, `upstreams[${name}].targets`),
    };
    byName.set(name, entry);
    if (str(u.id) !== undefined) byName.set(str(u.id) ?? '', entry);
    for (const key of extraKeys(u, UPSTREAM_KEYS))
      report.unmappedItem(`${entry.where}.${key}`, 'has no equivalent');
  });
  objects(doc.targets, 'targets').forEach((t, i) => {
    const ref = isObj(t.upstream) ? (str(t.upstream.name) ?? str(t.upstream.id)) : str(t.upstream);
    const entry = ref === undefined ? undefined : byName.get(ref);
    if (entry === undefined) report.unmappedItem(`targets[${i}]`, 'names no upstream of the file');
    else entry.targets.push(t);
  });

  const pluginConfigs: PluginConfigEntry[] = [];
  const names = new Set<string>();
  const shared = new Map<string, string>();
  const entryFor = (key: string, preferred: string, config: Obj): string => {
    const found = shared.get(key);
    if (found !== undefined) return found;
    const name = uniqueName(preferred, names);
    shared.set(key, name);
    pluginConfigs.push({ name, type: 'upstream', config: clean(config) });
    return name;
  };

  return {
    pluginConfigs,
    nodeFor(svc, preserveHost) {
      const s = svc.service;
      let protocol = str(s.protocol) ?? 'http';
      let host = str(s.host);
      let port = num(s.port);
      const url = str(s.url);
      if (url !== undefined) {
        try {
          const u = new URL(url);
          protocol = u.protocol.replace(/:$/, '');
          host = u.hostname.replace(/^\[|\]$/g, '');
          if (u.port !== '') port = Number(u.port);
        } catch {
          report.unmappedItem(`${svc.where}.url`, 'not a URL');
          return undefined;
        }
      }
      if (!['http', 'https', 'grpc', 'grpcs'].includes(protocol)) {
        report.unmappedItem(
          `${svc.where}.protocol`,
          `${protocol}: L4 services go in system.yaml stream: by hand`,
        );
        return undefined;
      }
      if (host === undefined) {
        report.unmappedItem(svc.where, 'no host');
        return undefined;
      }
      port ??= protocol === 'https' || protocol === 'grpcs' ? 443 : 80;
      const local: Obj = { scheme: protocol };
      const timeouts = [s.connect_timeout, s.write_timeout, s.read_timeout].map(num);
      if (timeouts.some((t) => t !== undefined)) {
        local.timeout_ms = timeouts.reduce<number>((sum, t) => sum + (t ?? 60000), 0);
        local.stream_idle_timeout_ms = timeouts[2] ?? 60000;
        report.note(
          svc.where,
          'connect, write and read timeouts add up to one timeout_ms; read_timeout also bounds the silence within a body',
        );
      }
      local.retries = num(s.retries) ?? 5;
      if (bool(s.tls_verify) === false) local.ssl_verify = false;
      for (const key of ['client_certificate', 'ca_certificates'])
        if (s[key] !== undefined && s[key] !== null)
          report.unmappedItem(`${svc.where}.${key}`, 'set upstream ca_cert_path / client_cert_path by hand');

      const up = byName.get(host);
      let ref: string;
      if (up !== undefined) {
        const targets = up.targets
          .map((t) => ({ ...splitHostPort(str(t.target) ?? '', 8000), weight: num(t.weight) ?? 100 }))
          .filter((t) => t.host !== '');
        if (targets.length === 0) {
          report.unmappedItem(`${up.where}.targets`, 'an upstream without targets');
          return undefined;
        }
        const algorithm = str(up.u.algorithm) ?? 'round-robin';
        let lb = LB[algorithm];
        if (lb === undefined) {
          report.unmappedItem(`${up.where}.algorithm`, `${algorithm}: balanced round robin instead`);
          lb = 'round_robin';
        }
        const hash = lb === 'chash' ? hashOn(up.u, up.where, report) : undefined;
        if (lb === 'chash' && hash === undefined) lb = 'round_robin';
        if (str(up.u.hash_fallback) !== undefined && str(up.u.hash_fallback) !== 'none')
          report.note(
            `${up.where}.hash_fallback`,
            'a request without the hash key is hashed on the client address',
          );
        const hostHeader = str(up.u.host_header);
        ref = entryFor(`upstream\u0000${host}`, str(up.u.name) ?? host, {
          targets,
          load_balancing: lb,
          hash_on: hash,
          pass_host: 'rewrite',
          upstream_host: hostHeader ?? host,
          health_check: healthChecks(up.u, up.where, report),
        });
      } else {
        ref = entryFor(`service\u0000${svc.name}`, svc.name, {
          targets: [{ host, port }],
          health_check: { passive: { max_fails: 0 } },
        });
      }
      if (preserveHost) local.pass_host = 'pass';
      return { kind: 'node', id: 'upstream', type: 'upstream', config_ref: ref, config: local };
    },
  };
}

const ROUTE_KEYS = [
  'id',
  'name',
  'paths',
  'hosts',
  'methods',
  'headers',
  'protocols',
  'strip_path',
  'preserve_host',
  'regex_priority',
  'path_handling',
  'https_redirect_status_code',
  'request_buffering',
  'response_buffering',
  'tags',
  'service',
  'plugins',
  'created_at',
  'updated_at',
];

export interface KongRouteMatch {
  match: Obj;
  /** Larger first: Kong tries routes with more criteria first, then longer paths. */
  sort: number[];
}

export function kongRoutes(
  route: Obj,
  where: string,
  svc: KongService,
  upstreams: KongUpstreams,
  report: ImportReport,
): { matches: KongRouteMatch[]; rewrite: Step[]; upstream: NodeStep } | undefined {
  for (const key of extraKeys(route, ROUTE_KEYS))
    report.unmappedItem(`${where}.${key}`, 'has no route-level equivalent');
  const protocols = strings(route.protocols);
  if (protocols.length > 0 && !protocols.some((p) => p === 'http' || p === 'grpc'))
    report.note(`${where}.protocols`, 'served over plain HTTP too (a route does not match on the scheme)');
  const upstream = upstreams.nodeFor(svc, bool(route.preserve_host) === true);
  if (upstream === undefined) return undefined;

  const paths: string[] = [];
  for (const p of strings(route.paths)) {
    if (p.startsWith('~'))
      report.unmappedItem(
        `${where}.paths`,
        `regex path ${p}: routes match prefixes, not regular expressions`,
      );
    else paths.push(p);
  }
  if (strings(route.paths).length > 0 && paths.length === 0) return undefined;
  if (paths.some((p) => p !== '/' && !p.endsWith('/')))
    report.note(
      'routes',
      "a prefix path stops at a segment: Kong's /users also matches /usersx, the imported /users/* matches /users and /users/… only",
    );
  const hosts: string[] = [];
  for (const h of strings(route.hosts)) {
    const bare = h.replace(/:\d+$/, '');
    if (bare.endsWith('.*') || (bare.includes('*') && !bare.startsWith('*.')))
      report.unmappedItem(`${where}.hosts`, `${h}: only a leading *. wildcard is supported`);
    else hosts.push(bare);
    if (bare !== h) report.note(`${where}.hosts`, `${h}: the port is not matched`);
  }
  if (strings(route.hosts).length > 0 && hosts.length === 0) return undefined;
  // One route per combination of header values (a route matches one value per header).
  let headerSets: Record<string, string>[] = [{}];
  for (const [name, values] of Object.entries(obj(route.headers, `${where}.headers`))) {
    const plain = strings(values).filter((v) => {
      if (!v.startsWith('~*')) return true;
      report.unmappedItem(`${where}.headers.${name}`, 'a regex header value has no route-level equivalent');
      return false;
    });
    if (plain.length === 0) return undefined;
    headerSets = headerSets.flatMap((set) => plain.map((v) => ({ ...set, [name.toLowerCase()]: v })));
  }
  if (headerSets.length > 32) {
    report.unmappedItem(`${where}.headers`, 'more than 32 header combinations');
    return undefined;
  }
  const methods = strings(route.methods).map((m) => m.toUpperCase());
  const criteria = [
    paths.length > 0,
    hosts.length > 0,
    methods.length > 0,
    headerSets.some((h) => Object.keys(h).length > 0),
  ].filter(Boolean).length;

  const matches: KongRouteMatch[] = [];
  for (const p of paths.length > 0 ? paths : ['/']) {
    const path = p === '/' ? '/*' : p.endsWith('/') ? `${p}*` : `${p}/*`;
    for (const headers of headerSets) {
      const match: Obj = { path };
      if (hosts.length === 1) match.host = hosts[0];
      else if (hosts.length > 1) match.hosts = hosts;
      if (methods.length > 0) match.methods = methods;
      if (Object.keys(headers).length > 0) match.headers = headers;
      matches.push({
        match,
        sort: [
          criteria,
          Object.keys(headers).length,
          hosts.some((h) => !h.startsWith('*.')) ? 1 : 0,
          p.length,
        ],
      });
    }
  }

  const rewrite: Step[] = [];
  const strip = bool(route.strip_path) ?? true;
  const s = svc.service;
  let servicePath = str(s.path);
  const url = str(s.url);
  if (url !== undefined) {
    try {
      servicePath = new URL(url).pathname;
    } catch {
      servicePath = undefined;
    }
  }
  const prefix =
    servicePath !== undefined && servicePath !== '/' && servicePath !== '' ? servicePath : undefined;
  const stripped = strip ? [...paths].filter((p) => p !== '/').sort((a, b) => b.length - a.length) : [];
  if (stripped.length > 0 || prefix !== undefined) {
    rewrite.push(
      node('path', 'proxy-rewrite', {
        regex_uri:
          stripped.length > 0
            ? stripped.flatMap((p) => [`^${escapeRegex(p.replace(/\/$/, ''))}/?(.*)$`, '/$1'])
            : undefined,
        add_path_prefix: prefix,
      }),
    );
  }
  return { matches, rewrite, upstream };
}
