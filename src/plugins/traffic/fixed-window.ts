import { compatNames } from '../../config/compat-names.js';
import type { Context, HeaderMap } from '../../core/context.js';
import { ConfigError, type PluginEnv } from '../../core/plugin.js';
import { compileLimitKey, keyTypeSchema, type KeyType } from './limit-key.js';
import {
  LocalWindowCounters,
  StoreWindowCounter,
  type WindowCounter,
  type WindowResult,
} from './window-counter.js';

/** The keys limit-count and workflow's limit-count action share. */
export interface FixedWindowConfig {
  count: number;
  time_window: number;
  key?: string;
  key_type: KeyType;
  policy: 'local' | 'redis' | 'kvstore';
  store?: string;
  rejected_code: number;
  rejected_msg?: string;
  show_limit_quota_header: boolean;
  allow_degradation: boolean;
}

export const fixedWindowProperties = {
  count: { type: 'integer', minimum: 1, description: 'Requests allowed per window.' },
  time_window: { type: 'integer', minimum: 1, description: 'Window length in seconds.' },
  key: {
    type: 'string',
    description:
      'Counter key: legacy $var and {{…}} template (default $remote_addr); an empty rendering counts by client IP.',
  },
  key_type: keyTypeSchema,
  policy: {
    type: 'string',
    enum: ['local', 'redis', 'kvstore'],
    default: 'local',
    description:
      "'local' (this process) or 'redis' / 'kvstore' (one counter in a named store, exact across gateway processes).",
  },
  store: {
    type: 'string',
    minLength: 1,
    description: "The stores: entry holding the counters (policy 'redis').",
  },
  rejected_code: {
    type: 'integer',
    minimum: 200,
    maximum: 599,
    default: 503,
    description: 'Status of a rejected request.',
  },
  rejected_msg: { type: 'string', minLength: 1, description: 'Rejection body: {"error_msg": rejected_msg}.' },
  show_limit_quota_header: {
    type: 'boolean',
    default: true,
    description: 'Add X-RateLimit-Limit, -Remaining and -Reset.',
  },
  allow_degradation: {
    type: 'boolean',
    default: false,
    description: 'When the store fails, let the request through (fail open) instead of failing it.',
  },
} as const;

/** Where the counters live and how a request is counted; built once per node (or workflow rule). */
export interface FixedWindow {
  readonly limit: number;
  readonly backend: 'local' | 'redis';
  /** Counts the request; rejects (store backends only) when the store fails. */
  take(ctx: Context): WindowResult | Promise<WindowResult>;
}

/**
 * Resolves the backend and compiles the key. `namespace` keeps the counters
 * of distinct nodes apart (`limit-count:<policy>/<node>`, or a group).
 */
export function compileFixedWindow(
  config: FixedWindowConfig,
  env: PluginEnv,
  namespace: string,
  path = '',
): FixedWindow {
  const at = (key: string): string => (path === '' ? key : `${path}.${key}`);
  const counter = resolveCounter(config, env, at);
  const keyOf = compileLimitKey(env, config.key, config.key_type, at('key'));
  const limit = config.count;
  const windowMs = config.time_window * 1000;
  return {
    limit,
    // A `workers` worker's local counter is a gateway-wide one held by the primary (docs/workers.md).
    backend: counter instanceof StoreWindowCounter ? 'redis' : 'local',
    take: referenceKeys(counter)
      ? (ctx) => counter.take(referenceKey(config, keyOf(ctx)), limit, windowMs)
      : (ctx) => counter.take(`${namespace}:${keyOf(ctx)}`, limit, windowMs),
  };
}

function resolveCounter(
  config: FixedWindowConfig,
  env: PluginEnv,
  at: (key: string) => string,
): WindowCounter {
  if (config.policy === 'local') {
    if (config.store !== undefined) env.warn(at('store'), "ignored: policy is 'local'");
    return env.scope.shared('limits.fixed-window', () => new LocalWindowCounters());
  }
  if (config.store === undefined) {
    throw new ConfigError(at('store'), `is required when policy is '${config.policy}'`);
  }
  const store = env.stores.get(config.store);
  if (store === undefined) throw new ConfigError(at('store'), `unknown store '${config.store}'`);
  return new StoreWindowCounter(store, compatNames().storeLayout);
}

// The reference keys store counters by `[group:]key` alone, no node namespace (docs/reference-compatibility.md).
const referenceKeys = (counter: WindowCounter): boolean =>
  counter instanceof StoreWindowCounter && counter.layout === 'reference';

function referenceKey(config: FixedWindowConfig, key: string): string {
  const group = (config as { group?: string }).group;
  return group === undefined ? key : `${group}:${key}`;
}

/** `X-RateLimit-*` as APISIX sends them (lowercase in the header map). */
export function setQuotaHeaders(headers: HeaderMap, limit: number, result: WindowResult): void {
  headers['x-ratelimit-limit'] = String(limit);
  headers['x-ratelimit-remaining'] = String(result.remaining);
  headers['x-ratelimit-reset'] = String(result.resetSeconds);
}
