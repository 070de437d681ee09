import { node, type NodeStep, type Step, type StoreSet } from './import-graph.js';
import type { ImportReport } from './import-report.js';
import { bool, isObj, num, str, strings, type Obj } from './import-source.js';

/**
 * APISIX plugins onto the node types of the same name (the catalogue holds APISIX's plugins),
 * with their config translated where the keys differ: comma lists of cors, Redis settings as a
 * store, the auth plugins' header names, the two halves of proxy-cache. Ordered by APISIX's
 * priorities; response-side plugins go before the client.
 */

export interface ApisixPluginContext {
  name: string;
  config: Obj;
  where: string;
  report: ImportReport;
  stores: StoreSet;
  /** Targets of an upstream referenced by id (traffic-split). */
  upstreamTargets(ref: unknown): Obj[] | undefined;
}

export interface ApisixTranslation {
  request?: Step[];
  afterUpstream?: Step[];
  response?: Step[];
}

/** APISIX's static priorities (higher runs first) of the plugins that have a node type here. */
export const APISIX_PRIORITY: Readonly<Record<string, number>> = {
  'real-ip': 23000,
  'request-id': 12015,
  'fault-injection': 11000,
  mocking: 10900,
  'serverless-pre-function': 10000,
  cors: 4000,
  'ip-restriction': 3000,
  'ua-restriction': 2999,
  'referer-restriction': 2990,
  csrf: 2980,
  'uri-blocker': 2900,
  'request-validation': 2800,
  'multi-auth': 2600,
  'openid-connect': 2599,
  'cas-auth': 2597,
  'authz-casbin': 2560,
  'authz-casdoor': 2559,
  'wolf-rbac': 2555,
  'ldap-auth': 2540,
  'hmac-auth': 2530,
  'basic-auth': 2520,
  'jwt-auth': 2510,
  'jwe-decrypt': 2509,
  'key-auth': 2500,
  'consumer-restriction': 2400,
  'attach-consumer-label': 2399,
  'forward-auth': 2002,
  opa: 2001,
  'authz-keycloak': 2000,
  'proxy-cache': 1085,
  'body-transformer': 1080,
  'proxy-mirror': 1010,
  'proxy-rewrite': 1008,
  workflow: 1006,
  'api-breaker': 1005,
  'limit-conn': 1003,
  'limit-count': 1002,
  'limit-req': 1001,
  brotli: 996,
  gzip: 995,
  'traffic-split': 966,
  redirect: 900,
  'response-rewrite': 899,
  degraphql: 509,
  'grpc-transcode': 506,
  'grpc-web': 505,
  prometheus: 500,
  datadog: 495,
  loggly: 411,
  'http-logger': 410,
  'splunk-hec-logging': 409,
  'skywalking-logger': 408,
  'google-cloud-logging': 407,
  'sls-logger': 406,
  'tcp-logger': 405,
  syslog: 401,
  'udp-logger': 400,
  'file-logger': 399,
  'clickhouse-logger': 398,
  'tencent-cloud-cls': 397,
  'elasticsearch-logger': 413,
  'loki-logger': 414,
  'error-log-logger': 1091,
  opentelemetry: 12009,
  zipkin: 12011,
  skywalking: 12010,
  'aws-lambda': -1899,
  'azure-functions': -1900,
  openwhisk: -1901,
  openfunction: -1902,
  'serverless-post-function': -2000,
};

export const APISIX_AUTH = new Set([
  'key-auth',
  'basic-auth',
  'jwt-auth',
  'hmac-auth',
  'jwe-decrypt',
  'multi-auth',
  'ldap-auth',
]);

const RESPONSE_SIDE = new Set([
  'response-rewrite',
  'gzip',
  'brotli',
  'prometheus',
  'datadog',
  'loggly',
  'http-logger',
  'splunk-hec-logging',
  'skywalking-logger',
  'google-cloud-logging',
  'sls-logger',
  'tcp-logger',
  'syslog',
  'udp-logger',
  'file-logger',
  'clickhouse-logger',
  'tencent-cloud-cls',
  'elasticsearch-logger',
  'loki-logger',
  'serverless-post-function',
]);

/** Answers the request itself: its success goes to the response side, not the upstream. */
const ANSWERING = new Set(['mocking']);

function commaList(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return strings(value);
  const text = str(value);
  if (text === undefined) return undefined;
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** APISIX's `redis_*` keys (limit-count) as a store. */
function redisStore(ctx: ApisixPluginContext, c: Obj): string | undefined {
  const host = str(c.redis_host);
  if (host === undefined) {
    ctx.report.unmappedItem(`${ctx.where}.redis_host`, 'policy redis without redis_host');
    return undefined;
  }
  const password = str(c.redis_password);
  const username = str(c.redis_username);
  const database = num(c.redis_database);
  return ctx.stores.storeFor(host, num(c.redis_port) ?? 6379, {
    ...(password === undefined ? {} : { password }),
    ...(username === undefined ? {} : { username }),
    ...(database === undefined ? {} : { database }),
    ...(bool(c.redis_ssl) === undefined ? {} : { tls: bool(c.redis_ssl) as boolean }),
  });
}

const omit = (c: Obj, keys: string[]): Obj =>
  Object.fromEntries(Object.entries(c).filter(([k]) => !keys.includes(k)));

/** The node config of one APISIX plugin; `undefined` when it cannot be mapped (reported). */
function configFor(ctx: ApisixPluginContext): Obj | undefined {
  const c = ctx.config;
  switch (ctx.name) {
    case 'key-auth':
      return {
        header_name: str(c.header) ?? 'apikey',
        query_param: str(c.query) ?? 'apikey',
        use_consumers: true,
        hide_credentials: bool(c.hide_credentials),
      };
    case 'basic-auth':
      return { use_consumers: true, hide_credentials: bool(c.hide_credentials) };
    case 'jwt-auth':
      return {
        use_consumers: true,
        header_name: str(c.header),
        query_param: str(c.query) ?? 'jwt',
        cookie_name: str(c.cookie) ?? 'jwt',
        hide_credentials: bool(c.hide_credentials),
        key_claim_name: str(c.key_claim_name),
      };
    case 'hmac-auth': {
      const algorithms = strings(c.allowed_algorithms);
      return {
        use_consumers: true,
        clock_skew: num(c.clock_skew),
        signed_headers: strings(c.signed_headers).length > 0 ? strings(c.signed_headers) : undefined,
        hide_credentials: bool(c.hide_credentials),
        algorithm:
          algorithms.length > 0
            ? algorithms.includes('hmac-sha256')
              ? 'hmac-sha256'
              : algorithms[0]
            : undefined,
      };
    }
    case 'limit-count': {
      const policy = str(c.policy) ?? 'local';
      const out = omit(c, [
        'redis_host',
        'redis_port',
        'redis_password',
        'redis_username',
        'redis_database',
        'redis_timeout',
        'redis_ssl',
        'redis_ssl_verify',
        'redis_cluster_nodes',
        'redis_cluster_name',
        'redis_cluster_ssl',
        'redis_cluster_ssl_verify',
        'window_type',
        'sync_interval',
        'policy',
        '_meta',
      ]);
      if (policy === 'redis') {
        const store = redisStore(ctx, c);
        if (store === undefined) return undefined;
        return { ...out, policy: 'redis', store };
      }
      if (policy !== 'local')
        ctx.report.unmappedItem(
          `${ctx.where}.policy`,
          `${policy}: counted in this process; declare a store by hand`,
        );
      if (str(c.window_type) === 'sliding')
        ctx.report.note(`${ctx.where}.window_type`, 'sliding: counted in fixed windows');
      return out;
    }
    case 'limit-req': {
      const key = str(c.key) ?? 'remote_addr';
      const keyType = str(c.key_type) ?? 'var';
      const keyFrom =
        key === 'remote_addr' && keyType === 'var'
          ? 'remote_addr'
          : /^http_/.test(key)
            ? `header:${key.slice(5).replace(/_/g, '-')}`
            : undefined;
      if (keyFrom === undefined) {
        ctx.report.unmappedItem(`${ctx.where}.key`, `${key}: limits are kept per client address or header`);
        return undefined;
      }
      if (num(c.rejected_code) !== undefined && num(c.rejected_code) !== 429)
        ctx.report.unmappedItem(`${ctx.where}.rejected_code`, 'a limited request is always answered 429');
      return {
        rate: num(c.rate),
        burst: Math.max(1, Math.ceil((num(c.rate) ?? 1) + (num(c.burst) ?? 0))),
        key_from: keyFrom,
        nodelay: bool(c.nodelay) ?? false,
      };
    }
    case 'cors': {
      const origins = commaList(c.allow_origins) ?? ['*'];
      return {
        allowed_origins: origins.includes('**') ? ['*'] : origins,
        allowed_origins_by_regex:
          strings(c.allow_origins_by_regex).length > 0 ? strings(c.allow_origins_by_regex) : undefined,
        allowed_methods: (commaList(c.allow_methods) ?? ['*']).map((m) => (m === '**' ? '*' : m)),
        allowed_headers: (commaList(c.allow_headers) ?? ['*']).map((m) => (m === '**' ? '*' : m)),
        expose_headers: commaList(c.expose_headers)?.filter((h) => h !== '*'),
        max_age: num(c.max_age) ?? 5,
        allow_credentials: bool(c.allow_credential) ?? false,
      };
    }
    case 'ip-restriction':
      if (str(c.message) !== undefined)
        ctx.report.unmappedItem(`${ctx.where}.message`, "the denial message is the node's own");
      return { allow: strings(c.whitelist), deny: strings(c.blacklist) };
    case 'ua-restriction':
      return {
        allowlist:
          strings(c.allowlist ?? c.whitelist).length > 0 ? strings(c.allowlist ?? c.whitelist) : undefined,
        denylist:
          strings(c.denylist ?? c.blacklist).length > 0 ? strings(c.denylist ?? c.blacklist) : undefined,
        bypass_missing: bool(c.bypass_missing),
        rejected_msg: str(c.message),
      };
    case 'prometheus':
      return {};
    default:
      return omit(c, ['_meta']);
  }
}

/** The steps of one APISIX plugin. */
export function translateApisix(ctx: ApisixPluginContext): ApisixTranslation {
  if (isObj(ctx.config._meta) && Object.keys(ctx.config._meta).length > 0)
    ctx.report.note(
      `${ctx.where}._meta`,
      'plugin metadata (filter, priority, error_response) is not carried over',
    );
  if (ctx.name === 'proxy-cache') {
    const c = ctx.config;
    const strategy = str(c.cache_strategy) ?? 'disk';
    ctx.report.note(
      `${ctx.where}.cache_strategy`,
      `${strategy}: entries are kept in this process (policy: local)`,
    );
    const common = {
      id: ctx.where.replace(/[^A-Za-z0-9_.:-]/g, '-'),
      policy: 'local',
      cache_key: strings(c.cache_key).length > 0 ? strings(c.cache_key) : ['$host', '$request_uri'],
      cache_ttl: num(c.cache_ttl),
      cache_http_statuses: Array.isArray(c.cache_http_status) ? c.cache_http_status.map(Number) : undefined,
      cache_method: strings(c.cache_method).length > 0 ? strings(c.cache_method) : undefined,
      hide_cache_headers: bool(c.hide_cache_headers),
      cache_status_header: 'Apisix-Cache-Status',
    };
    for (const key of ['cache_bypass', 'no_cache', 'cache_control'])
      if (c[key] !== undefined && c[key] !== null && c[key] !== false)
        ctx.report.unmappedItem(`${ctx.where}.${key}`, 'not translated');
    return {
      request: [node('proxy-cache', 'proxy-cache', { phase: 'lookup', ...common })],
      afterUpstream: [node('proxy-cache-store', 'proxy-cache', { phase: 'store', ...common })],
    };
  }
  if (ctx.name === 'traffic-split') return trafficSplit(ctx);
  const type = ctx.name === 'limit-req' ? 'rate-limit' : ctx.name;
  if (APISIX_PRIORITY[ctx.name] === undefined) {
    ctx.report.unmappedItem(ctx.where, `plugin ${ctx.name} has no node type`);
    return {};
  }
  const config = configFor(ctx);
  if (config === undefined) return {};
  if (ctx.name === 'cors')
    return {
      request: [node('cors', 'cors', config)],
      response: [
        node('cors-response', 'cors', config, {
          preflight: { step: node('preflight-200', 'response-rewrite', { status_code: 200 }) },
        }),
      ],
    };
  if (ctx.name === 'request-id')
    return {
      request: [node('request-id', 'request-id', { ...config, include_in_response: false })],
      ...(bool(ctx.config.include_in_response) === false
        ? {}
        : { response: [node('request-id-response', 'request-id', config)] }),
    };
  const step: NodeStep = node(
    ctx.name,
    type,
    config,
    ANSWERING.has(ctx.name) ? { success: 'reply' } : undefined,
  );
  return RESPONSE_SIDE.has(ctx.name) ? { response: [step] } : { request: [step] };
}

/** APISIX `nodes` (a map "host:port" → weight, or a list) as targets. */
export function apisixTargets(nodes: unknown): Obj[] {
  if (Array.isArray(nodes))
    return nodes
      .filter(isObj)
      .map((n) => ({ host: str(n.host) ?? '', port: num(n.port) ?? 80, weight: num(n.weight) ?? 1 }));
  if (!isObj(nodes)) return [];
  return Object.entries(nodes).map(([addr, weight]) => {
    const at = addr.lastIndexOf(':');
    const host = at > 0 ? addr.slice(0, at).replace(/^\[|\]$/g, '') : addr;
    return { host, port: at > 0 ? Number(addr.slice(at + 1)) : 80, weight: num(weight) ?? 1 };
  });
}

function trafficSplit(ctx: ApisixPluginContext): ApisixTranslation {
  const rules = Array.isArray(ctx.config.rules) ? ctx.config.rules.filter(isObj) : [];
  const out = rules.map((rule, i) => ({
    ...(Array.isArray(rule.match) ? { match: rule.match } : {}),
    weighted_upstreams: (Array.isArray(rule.weighted_upstreams)
      ? rule.weighted_upstreams.filter(isObj)
      : []
    ).map((w, j) => {
      const weight = num(w.weight) ?? 1;
      const targets = isObj(w.upstream)
        ? apisixTargets(w.upstream.nodes)
        : w.upstream_id !== undefined
          ? ctx.upstreamTargets(w.upstream_id)
          : undefined;
      if (w.upstream_id !== undefined && targets === undefined)
        ctx.report.unmappedItem(
          `${ctx.where}.rules[${i}].weighted_upstreams[${j}].upstream_id`,
          'names no upstream of the file',
        );
      return targets === undefined ? { weight } : { weight, upstream: { targets } };
    }),
  }));
  return { request: [node('traffic-split', 'traffic-split', { rules: out })] };
}
