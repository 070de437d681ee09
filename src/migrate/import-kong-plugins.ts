import { STATUS_CODES } from 'node:http';
import { node, type Step, type StoreSet } from './import-graph.js';
import type { ImportReport } from './import-report.js';
import { bool, headerVar, isObj, isSet, num, obj, str, strings, type Obj } from './import-source.js';

/**
 * Kong's bundled plugins as node steps. Each entry has Kong's static priority (the order plugins
 * run in, highest first), the config keys it reads, and a translation into request-side,
 * after-upstream and response-side steps. A set key outside `handled` is reported as not mapped.
 */

export interface KongPluginContext {
  /** The Kong plugin name, where a note holds for every instance. */
  name: string;
  config: Obj;
  /** Where the plugin instance is in the source, for the report. */
  where: string;
  /** A stable slug of the instance (its scope), for shared counter groups and cache ids. */
  key: string;
  report: ImportReport;
  stores: StoreSet;
  /** Consumers (output names) that belong to any of these ACL groups. */
  consumersInGroups(groups: string[]): string[];
  /** The output name of a consumer referenced by id, username or custom_id. */
  consumerName(ref: string): string | undefined;
}

export interface KongTranslation {
  request?: Step[];
  afterUpstream?: Step[];
  response?: Step[];
}

export interface KongPlugin {
  priority: number;
  /** Identifies a consumer: consumer-scoped plugins apply to the plugins running after it. */
  auth?: boolean;
  handled: readonly string[];
  translate(ctx: KongPluginContext): KongTranslation;
}

const ERROR_BODY =
  'the answer\'s status is Kong\'s but its JSON body has another shape (Kong sends {"message": …})';

function anonymous(ctx: KongPluginContext): string | undefined {
  const ref = str(ctx.config.anonymous);
  if (ref === undefined || ref === '') return undefined;
  const name = ctx.consumerName(ref);
  if (name === undefined)
    ctx.report.unmappedItem(`${ctx.where}.config.anonymous`, 'names no consumer of the file');
  return name;
}

const keyAuth: KongPlugin = {
  priority: 1250,
  auth: true,
  handled: [
    'key_names',
    'key_in_header',
    'key_in_query',
    'key_in_body',
    'hide_credentials',
    'anonymous',
    'run_on_preflight',
    'realm',
  ],
  translate(ctx) {
    const names = strings(ctx.config.key_names);
    const keyName = names[0] ?? 'apikey';
    if (names.length > 1)
      ctx.report.unmappedItem(
        `${ctx.where}.config.key_names`,
        `one key name is read (${keyName}); the others are not`,
      );
    if (bool(ctx.config.key_in_body) === true)
      ctx.report.unmappedItem(`${ctx.where}.config.key_in_body`, 'a key in the request body is not read');
    if (bool(ctx.config.key_in_header) === false)
      ctx.report.note(
        `${ctx.where}.config.key_in_header`,
        `the key is still read from the ${keyName} header`,
      );
    ctx.report.note(`${ctx.name} plugin`, `401: ${ERROR_BODY}`);
    return {
      request: [
        node('key-auth', 'key-auth', {
          header_name: keyName,
          query_param: bool(ctx.config.key_in_query) === false ? undefined : keyName,
          use_consumers: true,
          hide_credentials: bool(ctx.config.hide_credentials),
          anonymous_consumer: anonymous(ctx),
        }),
      ],
    };
  },
};

const basicAuth: KongPlugin = {
  priority: 1100,
  auth: true,
  handled: ['hide_credentials', 'anonymous', 'realm'],
  translate(ctx) {
    ctx.report.note(`${ctx.name} plugin`, `401: ${ERROR_BODY}`);
    return {
      request: [
        node('basic-auth', 'basic-auth', {
          use_consumers: true,
          hide_credentials: bool(ctx.config.hide_credentials),
          realm: str(ctx.config.realm) ?? 'service',
          anonymous_consumer: anonymous(ctx),
        }),
      ],
    };
  },
};

const jwt: KongPlugin = {
  priority: 1450,
  auth: true,
  handled: [
    'uri_param_names',
    'cookie_names',
    'header_names',
    'key_claim_name',
    'claims_to_verify',
    'secret_is_base64',
    'anonymous',
    'run_on_preflight',
    'maximum_expiration',
    'realm',
  ],
  translate(ctx) {
    const c = ctx.config;
    const pick = (key: string, fallback: string | undefined): string | undefined => {
      const all =
        c[key] === undefined || c[key] === null
          ? fallback === undefined
            ? []
            : [fallback]
          : strings(c[key]);
      if (all.length > 1)
        ctx.report.unmappedItem(`${ctx.where}.config.${key}`, `only the first (${all[0]}) is read`);
      return all[0];
    };
    if (bool(c.secret_is_base64) === true)
      ctx.report.unmappedItem(
        `${ctx.where}.config.secret_is_base64`,
        'consumer secrets are used as text, not base64-decoded',
      );
    if ((num(c.maximum_expiration) ?? 0) > 0)
      ctx.report.unmappedItem(
        `${ctx.where}.config.maximum_expiration`,
        'no limit on how far exp may lie ahead',
      );
    if (!strings(c.claims_to_verify).includes('exp'))
      ctx.report.note(
        ctx.where,
        'every token must carry exp (Kong checks it only when claims_to_verify lists it)',
      );
    ctx.report.note(`${ctx.name} plugin`, `401: ${ERROR_BODY}`);
    return {
      request: [
        node('jwt', 'jwt-auth', {
          use_consumers: true,
          key_claim_name: str(c.key_claim_name) ?? 'iss',
          header_name: pick('header_names', 'authorization'),
          query_param: pick('uri_param_names', 'jwt'),
          cookie_name: pick('cookie_names', undefined),
          anonymous_consumer: anonymous(ctx),
          realm: str(c.realm),
        }),
      ],
    };
  },
};

const HMAC = ['hmac-sha256', 'hmac-sha512', 'hmac-sha1'];

const hmacAuth: KongPlugin = {
  priority: 1030,
  auth: true,
  handled: [
    'hide_credentials',
    'clock_skew',
    'anonymous',
    'validate_request_body',
    'enforce_headers',
    'algorithms',
    'realm',
  ],
  translate(ctx) {
    const c = ctx.config;
    const allowed = strings(c.algorithms);
    const algorithm = allowed.length === 0 ? 'hmac-sha256' : HMAC.find((a) => allowed.includes(a));
    if (algorithm === undefined) {
      ctx.report.unmappedItem(
        `${ctx.where}.config.algorithms`,
        'none of hmac-sha1, hmac-sha256, hmac-sha512',
      );
      return {};
    }
    if (allowed.length > 1)
      ctx.report.note(`${ctx.where}.config.algorithms`, `one algorithm is accepted: ${algorithm}`);
    if (bool(c.validate_request_body) === true)
      ctx.report.unmappedItem(
        `${ctx.where}.config.validate_request_body`,
        'the Digest of the body is not checked',
      );
    ctx.report.note(
      `${ctx.name} plugin`,
      'clients sign the Switchyard way (Authorization: Signature keyId=…, docs/plugins/hmac-auth.md), not with Kong\'s "hmac username=…" header',
    );
    const enforce = strings(c.enforce_headers).map((h) => (h === 'request-line' ? '@request-target' : h));
    return {
      request: [
        node('hmac-auth', 'hmac-auth', {
          use_consumers: true,
          algorithm,
          clock_skew: num(c.clock_skew),
          signed_headers: enforce.length > 0 ? enforce : undefined,
          hide_credentials: bool(c.hide_credentials),
          anonymous_consumer: anonymous(ctx),
          realm: str(c.realm),
        }),
      ],
    };
  },
};

const acl: KongPlugin = {
  priority: 950,
  handled: [
    'allow',
    'deny',
    'whitelist',
    'blacklist',
    'hide_groups_header',
    'include_consumer_groups',
    'always_use_authenticated_groups',
  ],
  translate(ctx) {
    const c = ctx.config;
    const allow = [...strings(c.allow), ...strings(c.whitelist)];
    const deny = [...strings(c.deny), ...strings(c.blacklist)];
    if (bool(c.hide_groups_header) !== true)
      ctx.report.note(ctx.where, 'no X-Consumer-Groups header is sent upstream');
    // Consumers and their groups are all in the file, so a group list is a list of consumer names.
    const base = {
      type: 'consumer_name',
      rejected_code: 403,
      rejected_msg: 'You cannot consume this service',
    };
    if (allow.length > 0) {
      const members = ctx.consumersInGroups(allow);
      // No consumer in an allowed group: nobody passes. A name no consumer can have keeps that.
      return {
        request: [
          node('acl', 'consumer-restriction', {
            ...base,
            whitelist: members.length > 0 ? members : ['\u0000none'],
          }),
        ],
      };
    }
    if (deny.length > 0) {
      const members = ctx.consumersInGroups(deny);
      if (members.length === 0) return {};
      return { request: [node('acl', 'consumer-restriction', { ...base, blacklist: members })] };
    }
    ctx.report.unmappedItem(ctx.where, 'neither allow nor deny is set');
    return {};
  },
};

const WINDOWS: [string, number][] = [
  ['second', 1],
  ['minute', 60],
  ['hour', 3600],
  ['day', 86400],
  ['month', 2592000],
  ['year', 31536000],
];

/** Kong's Redis settings (3.6+: `redis: {…}`; before: `redis_host`…) as a store name. */
function redisStore(ctx: KongPluginContext): string | undefined {
  const c = ctx.config;
  const r = isObj(c.redis) ? c.redis : {};
  const host = str(r.host) ?? str(c.redis_host);
  if (host === undefined) {
    ctx.report.unmappedItem(`${ctx.where}.config.redis`, 'policy redis without a Redis host');
    return undefined;
  }
  if (
    isSet(r.sentinel_addresses) ||
    isSet(r.cluster_addresses) ||
    isSet(r.cluster_nodes) ||
    isSet(r.sentinel_nodes)
  )
    ctx.report.unmappedItem(
      `${ctx.where}.config.redis`,
      'Sentinel and Cluster settings are not carried over; declare the store by hand',
    );
  const password = str(r.password) ?? str(c.redis_password);
  const username = str(r.username) ?? str(c.redis_username);
  const database = num(r.database) ?? num(c.redis_database);
  const tls = bool(r.ssl) ?? bool(c.redis_ssl);
  return ctx.stores.storeFor(host, num(r.port) ?? num(c.redis_port) ?? 6379, {
    ...(password === undefined ? {} : { password }),
    ...(username === undefined ? {} : { username }),
    ...(database === undefined ? {} : { database }),
    ...(tls === undefined ? {} : { tls }),
  });
}

const rateLimiting: KongPlugin = {
  priority: 910,
  handled: [
    ...WINDOWS.map(([w]) => w),
    'limit_by',
    'header_name',
    'path',
    'policy',
    'fault_tolerant',
    'hide_client_headers',
    'error_code',
    'error_message',
    'sync_rate',
    'redis',
    'redis_host',
    'redis_port',
    'redis_password',
    'redis_username',
    'redis_database',
    'redis_ssl',
    'redis_ssl_verify',
    'redis_server_name',
    'redis_timeout',
  ],
  translate(ctx) {
    const c = ctx.config;
    const by = str(c.limit_by) ?? 'consumer';
    let key: string | undefined;
    let keyType = 'var';
    if (by === 'consumer' || by === 'credential') key = '$consumer_name';
    else if (by === 'ip') key = '$remote_addr';
    else if (by === 'header' && str(c.header_name) !== undefined) key = headerVar(str(c.header_name) ?? '');
    else if (by === 'service') {
      key = 'service';
      keyType = 'constant';
    } else if (by === 'path') {
      key = '$uri';
      ctx.report.note(`${ctx.where}.config.limit_by`, 'path: counted per request path, for every path');
    }
    if (key === undefined) {
      ctx.report.unmappedItem(`${ctx.where}.config.limit_by`, `limit_by ${by} has no counter key`);
      return {};
    }
    if (by === 'credential')
      ctx.report.note(`${ctx.where}.config.limit_by`, 'credential: counted per consumer');
    const policy = str(c.policy) ?? 'local';
    let store: string | undefined;
    if (policy === 'redis') {
      store = redisStore(ctx);
      if (store === undefined) return {};
    } else if (policy === 'cluster') {
      ctx.report.note(
        `${ctx.where}.config.policy`,
        'cluster: counted in this gateway process (use a store to share counts)',
      );
    }
    ctx.report.note(
      `${ctx.name} plugin`,
      `429: ${ERROR_BODY}; the quota headers are X-RateLimit-Limit/-Remaining/-Reset, without the window suffix`,
    );
    const steps: Step[] = [];
    for (const [window, seconds] of WINDOWS) {
      const count = num(c[window]);
      if (count === undefined) continue;
      steps.push(
        node(`rate-limiting-${window}`, 'limit-count', {
          count: Math.max(1, Math.floor(count)),
          time_window: seconds,
          key_type: keyType,
          key,
          policy: store === undefined ? 'local' : 'redis',
          store,
          group: `kong:${ctx.key}:${window}`,
          rejected_code: num(c.error_code) ?? 429,
          rejected_msg: str(c.error_message) ?? 'API rate limit exceeded',
          show_limit_quota_header: bool(c.hide_client_headers) !== true,
          allow_degradation: bool(c.fault_tolerant) ?? true,
        }),
      );
      if (count < 1) ctx.report.note(`${ctx.where}.config.${window}`, 'a limit below 1 becomes 1');
    }
    if (steps.length === 0) ctx.report.unmappedItem(ctx.where, 'no window (second … year) is set');
    return { request: steps };
  },
};

const responseRateLimiting: KongPlugin = {
  priority: 900,
  handled: ['*'],
  translate(ctx) {
    ctx.report.unmappedItem(
      ctx.where,
      "limits counted from the upstream's X-Kong-Limit header: no node counts usage an upstream reports",
    );
    return {};
  },
};

const KONG_CORS_METHODS = ['GET', 'HEAD', 'PUT', 'PATCH', 'POST', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT'];

const cors: KongPlugin = {
  priority: 2000,
  handled: [
    'origins',
    'methods',
    'headers',
    'exposed_headers',
    'credentials',
    'max_age',
    'preflight_continue',
    'private_network',
  ],
  translate(ctx) {
    const c = ctx.config;
    const plain: string[] = [];
    const regex: string[] = [];
    // Kong reads an origin with characters beyond a plain origin's as a regex matched whole.
    for (const o of strings(c.origins)) {
      if (o === '*' || /^[A-Za-z0-9.:/-]+$/.test(o)) plain.push(o);
      else regex.push(`^(?:${o})$`);
    }
    if (bool(c.preflight_continue) === true)
      ctx.report.unmappedItem(
        `${ctx.where}.config.preflight_continue`,
        'preflights are answered by the gateway, never proxied',
      );
    if (bool(c.private_network) === true)
      ctx.report.unmappedItem(
        `${ctx.where}.config.private_network`,
        'no Access-Control-Allow-Private-Network header',
      );
    const methods = strings(c.methods);
    const headers = strings(c.headers);
    const config = {
      allowed_origins: plain.length === 0 && regex.length === 0 ? ['*'] : plain,
      allowed_origins_by_regex: regex.length > 0 ? regex : undefined,
      allowed_methods: methods.length > 0 ? methods : KONG_CORS_METHODS,
      allowed_headers: headers.length > 0 ? headers : undefined,
      expose_headers: strings(c.exposed_headers).length > 0 ? strings(c.exposed_headers) : undefined,
      max_age: num(c.max_age) ?? -1,
      allow_credentials: bool(c.credentials) ?? false,
    };
    return {
      request: [node('cors', 'cors', config)],
      // The upstream's headers replace the response's: the CORS headers go on after it, and a
      // preflight answers 200 as Kong's does.
      response: [
        node('cors-response', 'cors', config, {
          preflight: { step: node('preflight-200', 'response-rewrite', { status_code: 200 }) },
        }),
      ],
    };
  },
};

const ipRestriction: KongPlugin = {
  priority: 990,
  handled: ['allow', 'deny', 'whitelist', 'blacklist', 'status', 'message'],
  translate(ctx) {
    const c = ctx.config;
    const allow = [...strings(c.allow), ...strings(c.whitelist)];
    const deny = [...strings(c.deny), ...strings(c.blacklist)];
    if (num(c.status) !== undefined && num(c.status) !== 403)
      ctx.report.unmappedItem(`${ctx.where}.config.status`, 'a denial is always 403');
    if (str(c.message) !== undefined)
      ctx.report.unmappedItem(`${ctx.where}.config.message`, "the denial message is the node's own");
    return { request: [node('ip-restriction', 'ip-restriction', { allow, deny })] };
  },
};

const UNITS: Record<string, number> = { bytes: 1, kilobytes: 1024, megabytes: 1024 * 1024 };

const requestSizeLimiting: KongPlugin = {
  priority: 951,
  handled: ['allowed_payload_size', 'size_unit', 'require_content_length'],
  translate(ctx) {
    const c = ctx.config;
    const unit = UNITS[str(c.size_unit) ?? 'megabytes'];
    if (unit === undefined) {
      ctx.report.unmappedItem(`${ctx.where}.config.size_unit`, 'not bytes, kilobytes or megabytes');
      return {};
    }
    if (bool(c.require_content_length) === true)
      ctx.report.unmappedItem(
        `${ctx.where}.config.require_content_length`,
        'a body without Content-Length is measured, not refused',
      );
    const max = Math.floor((num(c.allowed_payload_size) ?? 128) * unit);
    if (max > 10 * 1024 * 1024)
      ctx.report.note(
        ctx.where,
        'bodies over system.yaml listener.max_request_body_bytes (default 10 MiB) get 413 first',
      );
    return { request: [node('request-size-limiting', 'request-size-limit', { max_bytes: max })] };
  },
};

const MOCK_TYPES = ['application/json', 'application/xml', 'text/plain', 'text/html', 'text/xml'];

const requestTermination: KongPlugin = {
  priority: 2,
  handled: ['status_code', 'message', 'body', 'content_type', 'trigger', 'echo'],
  translate(ctx) {
    const c = ctx.config;
    if (isSet(c.trigger))
      ctx.report.unmappedItem(
        `${ctx.where}.config.trigger`,
        'the termination applies to every request, not only to those carrying the trigger',
      );
    if (bool(c.echo) === true)
      ctx.report.unmappedItem(`${ctx.where}.config.echo`, 'the request is not echoed back');
    const status = num(c.status_code) ?? 503;
    const body = str(c.body);
    let contentType = 'application/json; charset=utf-8';
    let example: string;
    if (body !== undefined) {
      example = body;
      contentType = str(c.content_type) ?? contentType;
    } else {
      example = JSON.stringify({ message: str(c.message) ?? STATUS_CODES[status] ?? 'Request terminated' });
    }
    if (!MOCK_TYPES.includes(contentType.split(';')[0]?.trim().toLowerCase() ?? '')) {
      ctx.report.unmappedItem(
        `${ctx.where}.config.content_type`,
        'answered as text/plain (a mocking node serves JSON, XML, HTML or text)',
      );
      contentType = 'text/plain';
    }
    if (/\$|\{\{/.test(example))
      ctx.report.note(
        `${ctx.where}.config.body`,
        'the body is a template: $name and {{…}} in it are rendered',
      );
    return {
      request: [
        node(
          'request-termination',
          'mocking',
          {
            response_status: status,
            response_example: example,
            content_type: contentType,
            with_mock_header: false,
          },
          { success: 'reply' },
        ),
      ],
    };
  },
};

/** `name:value` pairs of Kong's transformer lists. */
function pairs(value: unknown): [string, string][] {
  return strings(value).map((entry) => {
    const at = entry.indexOf(':');
    return at < 0 ? [entry, ''] : [entry.slice(0, at), entry.slice(at + 1)];
  });
}

function transformerSections(
  ctx: KongPluginContext,
  bodyKey: string,
  bodyWhat: string,
): {
  remove: string[];
  set: Record<string, string>;
  add: [string, string][];
} {
  const c = ctx.config;
  const section = (name: string) => obj(c[name], `${ctx.where}.config.${name}`);
  for (const name of ['remove', 'rename', 'replace', 'add', 'append']) {
    const s = section(name);
    for (const key of Object.keys(s)) {
      if (!isSet(s[key])) continue;
      if (key === 'headers' && name !== 'rename') continue;
      if (key === 'uri' && name === 'replace') continue;
      const what = key === bodyKey ? bodyWhat : key === 'querystring' ? 'query string' : key;
      ctx.report.unmappedItem(`${ctx.where}.config.${name}.${key}`, `${name} of ${what} has no equivalent`);
    }
  }
  const set: Record<string, string> = {};
  for (const [k, v] of pairs(section('replace').headers)) set[k] = v;
  for (const [k, v] of pairs(section('add').headers)) set[k] = v;
  if (pairs(section('add').headers).length > 0)
    ctx.report.note(
      `${ctx.where}.config.add.headers`,
      'an added header replaces one already there (Kong keeps it)',
    );
  if (pairs(section('replace').headers).length > 0)
    ctx.report.note(
      `${ctx.where}.config.replace.headers`,
      'a replaced header is also set when it was absent',
    );
  for (const [k, v] of [...Object.entries(set), ...pairs(section('append').headers)])
    if (/\$\(|\$[A-Za-z_]|\{\{/.test(v))
      ctx.report.note(`${ctx.where}.config`, `header ${k}: its value is a template here`);
  return {
    remove: strings(section('remove').headers),
    set,
    add: pairs(section('append').headers),
  };
}

const requestTransformer: KongPlugin = {
  priority: 801,
  handled: ['remove', 'rename', 'replace', 'add', 'append', 'http_method'],
  translate(ctx) {
    const { remove, set, add } = transformerSections(ctx, 'body', 'the body');
    const uri = str(obj(ctx.config.replace, `${ctx.where}.config.replace`).uri);
    if (uri !== undefined && uri.includes('$('))
      ctx.report.unmappedItem(
        `${ctx.where}.config.replace.uri`,
        'Kong templates ($(uri_captures…)) are not translated',
      );
    const headers = {
      add: add.length > 0 ? add.map(([name, value]) => ({ name, value })) : undefined,
      set: Object.keys(set).length > 0 ? set : undefined,
      remove: remove.length > 0 ? remove : undefined,
    };
    return {
      request: [
        node('request-transformer', 'proxy-rewrite', {
          uri: uri !== undefined && !uri.includes('$(') ? uri : undefined,
          method: str(ctx.config.http_method)?.toUpperCase(),
          headers: headers.add || headers.set || headers.remove ? headers : undefined,
        }),
      ],
    };
  },
};

const responseTransformer: KongPlugin = {
  priority: 800,
  handled: ['remove', 'rename', 'replace', 'add', 'append'],
  translate(ctx) {
    const { remove, set, add } = transformerSections(ctx, 'json', 'the JSON body');
    const headers = {
      add: add.length > 0 ? add.map(([name, value]) => `${name}: ${value}`) : undefined,
      set: Object.keys(set).length > 0 ? set : undefined,
      remove: remove.length > 0 ? remove : undefined,
    };
    return { response: [node('response-transformer', 'response-rewrite', { headers })] };
  },
};

const proxyCache: KongPlugin = {
  priority: 100,
  handled: [
    'response_code',
    'request_method',
    'content_type',
    'cache_ttl',
    'strategy',
    'cache_control',
    'storage_ttl',
    'memory',
    'vary_headers',
    'vary_query_params',
    'ignore_uri_case',
    'response_headers',
  ],
  translate(ctx) {
    const c = ctx.config;
    const strategy = str(c.strategy) ?? 'memory';
    if (strategy !== 'memory') {
      ctx.report.unmappedItem(
        `${ctx.where}.config.strategy`,
        `${strategy}: only memory is translated (policy: local)`,
      );
    }
    if (bool(c.cache_control) === true)
      ctx.report.unmappedItem(
        `${ctx.where}.config.cache_control`,
        'Cache-Control directives of requests are not obeyed',
      );
    if (isSet(c.content_type) || c.content_type === undefined)
      ctx.report.note(`${ctx.where}.config.content_type`, 'answers are cached whatever their Content-Type');
    if (isSet(c.vary_query_params))
      ctx.report.note(`${ctx.where}.config.vary_query_params`, 'the key holds the whole query string');
    if (bool(c.ignore_uri_case) === true)
      ctx.report.unmappedItem(`${ctx.where}.config.ignore_uri_case`, 'the key is case-sensitive');
    ctx.report.note(
      `${ctx.name} plugin`,
      'the status header X-Cache-Status says HIT/MISS/BYPASS (Kong: Hit/Miss/Bypass)',
    );
    const varyHeaders = strings(c.vary_headers).map(headerVar);
    const common = {
      id: `kong-${ctx.key}`.replace(/[^A-Za-z0-9_.:-]/g, '-'),
      policy: 'local',
      cache_key: ['$request_method', '$host', '$request_uri', '$consumer_name', ...varyHeaders],
      cache_ttl: Math.max(1, num(c.cache_ttl) ?? 300),
      cache_http_statuses: isSet(c.response_code)
        ? (c.response_code as unknown[]).map(Number)
        : [200, 301, 404],
      cache_method: isSet(c.request_method) ? strings(c.request_method) : ['GET', 'HEAD'],
      cache_status_header: 'X-Cache-Status',
    };
    return {
      request: [node('proxy-cache', 'proxy-cache', { phase: 'lookup', ...common })],
      afterUpstream: [node('proxy-cache-store', 'proxy-cache', { phase: 'store', ...common })],
    };
  },
};

const correlationId: KongPlugin = {
  priority: 100001,
  handled: ['header_name', 'generator', 'echo_downstream'],
  translate(ctx) {
    const c = ctx.config;
    const header = str(c.header_name) ?? 'Kong-Request-ID';
    const generator = str(c.generator) ?? 'uuid#counter';
    if (generator !== 'uuid')
      ctx.report.note(`${ctx.where}.config.generator`, `${generator}: ids are random UUIDs`);
    const echo = bool(c.echo_downstream) === true;
    return {
      request: [node('correlation-id', 'request-id', { header_name: header, include_in_response: false })],
      ...(echo
        ? {
            response: [
              node('correlation-id-response', 'request-id', {
                header_name: header,
                include_in_response: true,
              }),
            ],
          }
        : {}),
    };
  },
};

const prometheus: KongPlugin = {
  priority: 13,
  handled: [
    'per_consumer',
    'status_code_metrics',
    'latency_metrics',
    'bandwidth_metrics',
    'upstream_health_metrics',
    'ai_metrics',
  ],
  translate(ctx) {
    ctx.report.note(
      `${ctx.name} plugin`,
      'the gateway serves its own series on /metrics of the admin listener (gateway_*, not kong_*)',
    );
    return { response: [node('prometheus', 'prometheus')] };
  },
};

const httpLog: KongPlugin = {
  priority: 12,
  handled: [
    'http_endpoint',
    'method',
    'content_type',
    'timeout',
    'keepalive',
    'retry_count',
    'queue_size',
    'flush_timeout',
    'headers',
    'custom_fields_by_lua',
    'queue',
  ],
  translate(ctx) {
    const c = ctx.config;
    const endpoint = str(c.http_endpoint);
    if (endpoint === undefined) {
      ctx.report.unmappedItem(`${ctx.where}.config.http_endpoint`, 'missing');
      return {};
    }
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      ctx.report.unmappedItem(`${ctx.where}.config.http_endpoint`, 'not a URL');
      return {};
    }
    let auth: string | undefined;
    if (url.username !== '' || url.password !== '') {
      auth = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
      url.username = '';
      url.password = '';
    }
    if (isSet(c.custom_fields_by_lua))
      ctx.report.unmappedItem(
        `${ctx.where}.config.custom_fields_by_lua`,
        'Lua-computed fields are not added',
      );
    ctx.report.note(`${ctx.name} plugin`, "entries have the gateway's fields (docs/logging.md), not Kong's");
    const queue = isObj(c.queue) ? c.queue : {};
    const headers = isObj(c.headers) ? c.headers : undefined;
    return {
      response: [
        node('http-log', 'http-logger', {
          uri: url.toString(),
          method: str(c.method),
          headers,
          auth_header: auth,
          timeout: (num(c.timeout) ?? 10000) / 1000,
          batch_max_size: num(queue.max_batch_size) ?? num(c.queue_size) ?? 1,
          inactive_timeout: num(queue.max_coalescing_delay) ?? num(c.flush_timeout) ?? 1,
          max_retry_count: num(c.retry_count),
        }),
      ],
    };
  },
};

const fileLog: KongPlugin = {
  priority: 9,
  handled: ['path', 'reopen', 'custom_fields_by_lua'],
  translate(ctx) {
    const path = str(ctx.config.path);
    if (path === undefined) {
      ctx.report.unmappedItem(`${ctx.where}.config.path`, 'missing');
      return {};
    }
    if (isSet(ctx.config.custom_fields_by_lua))
      ctx.report.unmappedItem(
        `${ctx.where}.config.custom_fields_by_lua`,
        'Lua-computed fields are not added',
      );
    ctx.report.note(`${ctx.name} plugin`, "entries have the gateway's fields (docs/logging.md), not Kong's");
    return { response: [node('file-log', 'file-logger', { path, batch_max_size: 1 })] };
  },
};

const botDetection: KongPlugin = {
  priority: 2500,
  handled: ['allow', 'deny', 'whitelist', 'blacklist'],
  translate(ctx) {
    const c = ctx.config;
    const allow = [...strings(c.allow), ...strings(c.whitelist)];
    const deny = [...strings(c.deny), ...strings(c.blacklist)];
    ctx.report.note(
      `${ctx.name} plugin`,
      "Kong's built-in list of known bots is not carried over: only config.deny is refused",
    );
    if (deny.length === 0) return {};
    const restrict = node('bot-detection', 'ua-restriction', {
      denylist: deny,
      bypass_missing: true,
      rejected_code: 403,
      rejected_msg: 'Forbidden',
    });
    if (allow.length === 0) return { request: [restrict] };
    // An allowed User-Agent passes even when a deny pattern matches it.
    const pattern = allow.map((a) => `(?:${a})`).join('|');
    return {
      request: [
        node(
          'bot-detection-allow',
          'condition',
          { conditions: [['http_user_agent', '~~', pattern]] },
          {
            true: 'next',
            false: { step: restrict },
          },
        ),
      ],
    };
  },
};

export const KONG_PLUGINS: Readonly<Record<string, KongPlugin>> = {
  'key-auth': keyAuth,
  'basic-auth': basicAuth,
  jwt,
  'hmac-auth': hmacAuth,
  acl,
  'rate-limiting': rateLimiting,
  'response-ratelimiting': responseRateLimiting,
  cors,
  'ip-restriction': ipRestriction,
  'request-size-limiting': requestSizeLimiting,
  'request-termination': requestTermination,
  'request-transformer': requestTransformer,
  'response-transformer': responseTransformer,
  'proxy-cache': proxyCache,
  'correlation-id': correlationId,
  prometheus,
  'http-log': httpLog,
  'file-log': fileLog,
  'bot-detection': botDetection,
};
