import { createHash } from 'node:crypto';
import { pipeline, Transform, type Readable } from 'node:stream';
import type { Context, HeaderMap } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import { compatNames } from '../../config/compat-names.js';
import type { CacheEvent } from '../../core/gateway-scope.js';
import {
  ConfigError,
  definePlugin,
  type CacheTarget,
  type PluginEnv,
  type Template,
} from '../../core/plugin.js';
import { mentionsResponseBody } from '../response-body-refs.js';
import { throttledWarning } from '../throttled-warning.js';
import { resolveCacheBackend } from './cache-backend.js';
import {
  namespacePrefix,
  storableHeaders,
  type CachedResponse,
  type ResponseCache,
} from './response-cache.js';

type Phase = 'lookup' | 'store' | 'purge';

interface ProxyCacheConfig {
  phase?: Phase;
  role?: Phase;
  id: string;
  cache_key: string | string[];
  cache_ttl: number;
  cache_http_statuses?: number[];
  cache_http_status?: number[];
  cache_method: string[];
  hide_cache_headers: boolean;
  no_cache: string[];
  cache_bypass: string[];
  policy: 'local' | 'redis' | 'kvstore';
  store?: string;
  max_object_bytes: number;
  cache_status_header?: string;
}

type CachePort = 'success' | 'hit';

/** What the lookup half learned about a request, for the store half of the same pair. */
interface Note {
  key: string;
  bypass: boolean;
  /**
   * The response headers nodes before the upstream set (limit quotas, CORS…): the live map, which
   * later request-path nodes still write into until the upstream's answer replaces it, and a copy
   * taken at the lookup for when nothing replaced it. Neither belongs in a shared entry.
   */
  live: HeaderMap;
  copy: HeaderMap;
}

/** Per request and per pair id; the store half reuses the key the lookup computed before any rewrite. */
const notes = new WeakMap<Context, Map<string, Note>>();

const DEFAULT_STATUSES = [200, 301, 404];
/** A control character in an id could forge the `<id>\u0001` prefix boundary of another namespace. */
const hasControl = (text: string): boolean => [...text].some((c) => c < ' ' || c === '\u007f');
const NEVER_STORED = /(?:^|[\s,])(?:no-store|private|no-cache)(?:$|[\s,=])/i;
const EMPTY = Buffer.alloc(0);

const statusList = {
  type: 'array',
  minItems: 1,
  items: { type: 'integer', minimum: 100, maximum: 599 },
} as const;

const conditionList = (what: string) =>
  ({
    type: 'array',
    items: { type: 'string' },
    default: [],
    description: `${what} when any entry renders non-empty and not "0"; {{…}} templates (e.g. {{request.query.nocache}}).`,
  }) as const;

/**
 * Response cache as node halves sharing a namespace `id`: `lookup` before the
 * upstream answers hits itself (port `hit`), `store` after it keeps cacheable
 * responses, `purge` (on a write path) empties the namespace. A failing
 * backend is a miss, never an error; only a failed purge reports.
 *
 * @example
 * ```yaml
 * - { id: cache, type: proxy-cache, config: { phase: lookup, id: products } }
 * - { id: keep, type: proxy-cache, config: { phase: store, id: products, cache_ttl: 60 } }
 * ```
 */
export const proxyCache = definePlugin({
  type: 'proxy-cache',
  category: 'traffic',
  description:
    'Response cache as lookup/store (and purge) nodes sharing a namespace id; in-process LRU or a shared store.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['id'],
    properties: {
      phase: {
        type: 'string',
        enum: ['lookup', 'store', 'purge'],
        description: 'lookup (before the upstream), store (after it) or purge (empties the namespace).',
      },
      role: { type: 'string', enum: ['lookup', 'store', 'purge'], description: 'Alias of phase.' },
      id: { type: 'string', minLength: 1, description: 'Cache namespace shared by the halves of a pair.' },
      cache_key: {
        anyOf: [{ type: 'string' }, { type: 'array', minItems: 1, items: { type: 'string' } }],
        default: ['$request_method', '$host', '$uri'],
        description: 'Key components, each legacy $var and {{…}}; identical on both halves.',
      },
      cache_ttl: { type: 'integer', minimum: 1, default: 300, description: 'Freshness in seconds.' },
      cache_http_statuses: { ...statusList, description: 'Cacheable statuses (default [200, 301, 404]).' },
      cache_http_status: { ...statusList, description: 'Alias of cache_http_statuses (APISIX).' },
      cache_method: {
        type: 'array',
        minItems: 1,
        items: { type: 'string', minLength: 1 },
        default: ['GET', 'HEAD'],
        description: 'Cacheable request methods.',
      },
      hide_cache_headers: {
        type: 'boolean',
        default: false,
        description: 'Strip Cache-Control and Expires from responses served from the cache.',
      },
      no_cache: conditionList('Do not store the response'),
      cache_bypass: conditionList('Skip the lookup (and the store)'),
      policy: {
        type: 'string',
        enum: ['local', 'redis', 'kvstore'],
        default: 'local',
        description:
          "'local' (this process, LRU of cache.max_entries) or 'redis' / 'kvstore' (a named store).",
      },
      store: {
        type: 'string',
        minLength: 1,
        description: "The stores: entry holding entries (policy 'redis').",
      },
      max_object_bytes: {
        type: 'integer',
        minimum: 1,
        default: 1048576,
        description: 'Larger response bodies are served but not cached.',
      },
      cache_status_header: {
        type: 'string',
        minLength: 1,
        description:
          "Response header carrying HIT, MISS or BYPASS; default system.yaml compat's cache_status_header (switchyard-cache-status, or featherbit-cache-status with compat.reference_names).",
      },
    },
  },
  outputs: {
    success: { kind: 'success' },
    hit: { kind: 'outcome', description: 'The response was served from cache; wire to client.' },
  },
  templated: ['cache_key[]', 'no_cache[]', 'cache_bypass[]'],
  // The store half tees a streamed response into the cache as it is relayed (below), so it forces
  // buffering only when a no_cache condition renders the response body.
  readsResponseBody: (config: ProxyCacheConfig) =>
    (config.phase ?? config.role) === 'store' &&
    (config.no_cache ?? []).some((text) => mentionsResponseBody(text, true)),
  create(config: ProxyCacheConfig, env) {
    if (config.phase !== undefined && config.role !== undefined && config.phase !== config.role) {
      throw new ConfigError('role', `contradicts phase '${config.phase}'`);
    }
    const phase = config.phase ?? config.role;
    if (phase === undefined) throw new ConfigError('phase', "is required: 'lookup', 'store' or 'purge'");
    if (hasControl(config.id)) throw new ConfigError('id', 'must not contain control characters');
    const cache = resolveCacheBackend(config, env);
    const metrics = env.scope.metrics;
    const count = (event: CacheEvent): void => metrics.cacheEvent(cache.backend, cache.store, event);
    const target: CacheTarget = {
      id: config.id,
      phase,
      backend: cache.backend,
      store: cache.store,
      purge: async () => {
        const removed = await cache.purge(config.id);
        count('purge');
        return removed;
      },
    };
    const settings = compileSettings(config, env);
    if (phase === 'purge') return { cache: target, run: purgeRun(config, cache, target) };
    if (phase === 'lookup') return { cache: target, run: lookupRun(settings, cache, count, env) };
    return { cache: target, run: storeRun(settings, cache, count, env) };
  },
});

interface Settings {
  id: string;
  methods: ReadonlySet<string>;
  keyOf(ctx: Context): string;
  bypass(ctx: Context): boolean;
  noCache(ctx: Context): boolean;
  statuses: ReadonlySet<number>;
  ttl: number;
  maxBytes: number;
  statusHeader: string;
  hideCacheHeaders: boolean;
}

function compileSettings(config: ProxyCacheConfig, env: PluginEnv): Settings {
  const { cache_http_statuses: statuses, cache_http_status: alias } = config;
  if (statuses !== undefined && alias !== undefined && statuses.join() !== alias.join()) {
    throw new ConfigError('cache_http_status', 'contradicts cache_http_statuses');
  }
  const components = typeof config.cache_key === 'string' ? [config.cache_key] : config.cache_key;
  const parts = components.map((c, i) => env.template(c, `cache_key[${i}]`, { legacy: true }));
  const prefix = namespacePrefix(config.id);
  const statusHeader = (config.cache_status_header ?? compatNames().cacheStatusHeader).toLowerCase();
  return {
    id: config.id,
    methods: new Set(config.cache_method.map((m) => m.toUpperCase())),
    keyOf(ctx) {
      const hash = createHash('sha256');
      for (const part of parts) hash.update(part.render(ctx)).update('\u0000');
      return prefix + hash.digest('base64url');
    },
    bypass: anyTruthy(config.cache_bypass, 'cache_bypass', env),
    noCache: anyTruthy(config.no_cache, 'no_cache', env),
    statuses: new Set(statuses ?? alias ?? DEFAULT_STATUSES),
    ttl: config.cache_ttl,
    maxBytes: config.max_object_bytes,
    statusHeader,
    hideCacheHeaders: config.hide_cache_headers,
  };
}

/** APISIX `no_cache` / `cache_bypass`: true when any entry renders to something other than '' or '0'. */
function anyTruthy(entries: string[], key: string, env: PluginEnv): (ctx: Context) => boolean {
  const templates: Template[] = entries.map((text, i) => {
    // Only the fifteen legacy groups read `$var`; here it would be a constant, always-true string.
    if (/^\$[A-Za-z_{]/.test(text.trim()) && !text.includes('{{')) {
      throw new ConfigError(
        `${key}[${i}]`,
        `'${text}' is not read as a variable here; write a {{…}} template`,
      );
    }
    return env.template(text, `${key}[${i}]`);
  });
  if (templates.length === 0) return () => false;
  return (ctx) =>
    templates.some((t) => {
      const value = t.render(ctx);
      return value !== '' && value !== '0';
    });
}

function lookupRun(
  s: Settings,
  cache: ResponseCache,
  count: (event: CacheEvent) => void,
  env: PluginEnv,
): (ctx: Context) => CachePort | Promise<CachePort> {
  const warn = throttledWarning(env);
  const answer = (ctx: Context, got: CachedResponse | undefined | 'invalid'): CachePort => {
    if (got === undefined || got === 'invalid') {
      if (got === 'invalid') count('invalid_entry');
      count('miss');
      return 'success';
    }
    count('hit');
    serve(ctx, got, s);
    return 'hit';
  };
  const failed = (err: unknown): CachePort => {
    count('backend_error');
    count('miss');
    warn(err, 'proxy-cache: the cache backend failed; treating the lookup as a miss');
    return 'success';
  };
  return (ctx) => {
    if (!s.methods.has(ctx.request.method)) return 'success';
    const key = s.keyOf(ctx);
    const bypass = s.bypass(ctx);
    let byId = notes.get(ctx);
    if (byId === undefined) notes.set(ctx, (byId = new Map<string, Note>()));
    const live = ctx.response.headers;
    byId.set(s.id, { key, bypass, live, copy: { ...live } });
    if (bypass) return 'success';
    let got: ReturnType<ResponseCache['get']>;
    try {
      got = cache.get(key);
    } catch (err) {
      return failed(err);
    }
    if (got instanceof Promise) return got.then((g) => answer(ctx, g), failed);
    return answer(ctx, got);
  };
}

/**
 * Puts `entry` on the response as an upstream answer would: the entry's headers over those the
 * nodes before the lookup set on this request (so a quota header is this request's own).
 */
function serve(ctx: Context, entry: CachedResponse, s: Settings): void {
  const res = ctx.response;
  res.discardStream();
  res.status = entry.status;
  const headers: HeaderMap = { ...res.headers };
  for (const name in entry.headers) {
    const value = entry.headers[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? [...value] : value;
  }
  if (s.hideCacheHeaders) {
    delete headers['cache-control'];
    delete headers['expires'];
  }
  headers['age'] = String(Math.max(0, Math.floor((Date.now() - entry.storedAt) / 1000)));
  headers[s.statusHeader] = 'HIT';
  res.headers = headers;
  res.body = entry.body;
}

function storeRun(
  s: Settings,
  cache: ResponseCache,
  count: (event: CacheEvent) => void,
  env: PluginEnv,
): (ctx: Context) => CachePort | Promise<CachePort> {
  const warn = throttledWarning(env);
  const failed = (err: unknown): CachePort => {
    count('backend_error');
    warn(err, 'proxy-cache: the cache backend failed; the response was served but not stored');
    return 'success';
  };
  return (ctx) => {
    if (!s.methods.has(ctx.request.method)) return 'success';
    const note = notes.get(ctx)?.get(s.id);
    const res = ctx.response;
    if (note?.bypass === true || (note === undefined && s.bypass(ctx))) {
      res.headers[s.statusHeader] = 'BYPASS';
      return 'success';
    }
    res.headers[s.statusHeader] = 'MISS';
    if (s.noCache(ctx)) return 'success';
    const status = res.status === 0 ? 200 : res.status;
    if (!s.statuses.has(status) || !storable(res.headers)) return 'success';
    const key = note?.key ?? s.keyOf(ctx);
    // Taken now: nodes after this one (CORS on the way to the client…) are not part of the entry.
    const headers = storableHeaders(res.headers, s.statusHeader, earlierHeaders(res.headers, note));
    if (res.stream !== null) {
      res.stream = teeIntoCache(
        res.stream,
        s.maxBytes,
        (body) => {
          const entry: CachedResponse = {
            status,
            headers,
            body,
            storedAt: Date.now(),
          };
          try {
            const put = cache.put(key, entry, s.ttl);
            if (put instanceof Promise) put.catch(failed);
          } catch (err) {
            failed(err);
          }
        },
        () => count('size_skip'),
      );
      return 'success';
    }
    const body = res.body ?? EMPTY;
    if (body.length > s.maxBytes) {
      count('size_skip');
      return 'success';
    }
    const entry: CachedResponse = { status, headers, body, storedAt: Date.now() };
    let put: void | Promise<void>;
    try {
      put = cache.put(key, entry, s.ttl);
    } catch (err) {
      return failed(err);
    }
    if (put instanceof Promise) return put.then(() => 'success' as const, failed);
    return 'success';
  };
}

/**
 * The headers the request path had set when the upstream answered: an upstream replaces the map
 * and carries over the names it did not send itself (src/outbound/upstream-pool.ts), so the lookup's
 * live map holds them; when no answer replaced it, the copy taken at the lookup does. Without a
 * lookup half nothing tells them apart.
 */
function earlierHeaders(current: HeaderMap, note: Note | undefined): HeaderMap | undefined {
  if (note === undefined) return undefined;
  return current === note.live ? note.copy : note.live;
}

/**
 * Relays `source` unchanged while keeping a copy of up to `maxBytes`: `complete` gets the whole body
 * once the stream ended normally; past the cap the copy is dropped (`tooLarge`) and the relay goes on.
 * An upstream failure mid-stream ends the relay with an error and stores nothing.
 */
function teeIntoCache(
  source: Readable,
  maxBytes: number,
  complete: (body: Buffer) => void,
  tooLarge: () => void,
): Readable {
  let chunks: Buffer[] | null = [];
  let size = 0;
  const tee = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (chunks !== null) {
        size += chunk.length;
        if (size > maxBytes) {
          chunks = null;
          tooLarge();
        } else chunks.push(chunk);
      }
      done(null, chunk);
    },
    flush(done) {
      if (chunks !== null) complete(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
      done();
    },
  });
  return pipeline(source, tee, () => undefined);
}

/** The upstream said this response is not for shared caches, or it sets a cookie. */
function storable(headers: HeaderMap): boolean {
  if (headers['set-cookie'] !== undefined) return false;
  const cc = headers['cache-control'];
  if (cc === undefined) return true;
  return !NEVER_STORED.test(Array.isArray(cc) ? cc.join(',') : cc);
}

function purgeRun(
  config: ProxyCacheConfig,
  cache: ResponseCache,
  target: CacheTarget,
): (ctx: Context) => Promise<CachePort> {
  return async () => {
    try {
      await target.purge();
      return 'success';
    } catch (err) {
      throw new NodeError('CACHE_PURGE_FAILED', `proxy-cache: purging '${config.id}' failed`, {
        metadata: { id: config.id, backend: cache.backend, store: cache.store },
        cause: err,
      });
    }
  };
}
