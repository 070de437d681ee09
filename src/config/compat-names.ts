/**
 * Every branded name that is part of a wire or storage contract, resolved in
 * one place: ours by default, the reference implementation's with
 * `compat.reference_names: true` (so a running reference deployment can be
 * taken over: its clients, its etcd tree and its Redis keys keep working),
 * and each one overridable on its own. docs/reference-compatibility.md lists
 * every name; docs/configuration.md the `compat:` keys.
 */

/**
 * How store-backed state is laid out: `switchyard` (our counters and sealed
 * sessions) or `reference` (wall-clock counter windows under
 * `cnt:<window>:<key>`, and sessions sealed by the reference also open).
 */
export type StoreLayout = 'switchyard' | 'reference';

export interface CompatNames {
  /** Request header that turns tracing on (`debug.trigger_header` wins). */
  readonly debugHeader: string;
  /** Response header carrying the id of a header-triggered trace (`debug.trace_id_header` wins). */
  readonly traceIdHeader: string;
  /** proxy-cache's HIT/MISS/BYPASS response header (a node's `cache_status_header` wins). */
  readonly cacheStatusHeader: string;
  /** Realm of the Admin API's Basic challenge (`admin.realm` wins). */
  readonly adminRealm: string;
  /** etcd key prefix of the shared configuration (`config.etcd.prefix` wins). */
  readonly etcdPrefix: string;
  /** Key prefix of every `stores:` entry (a store's `key_prefix` wins). */
  readonly storeKeyPrefix: string;
  readonly storeLayout: StoreLayout;
}

export const SWITCHYARD_NAMES: CompatNames = Object.freeze({
  debugHeader: 'x-switchyard-debug',
  traceIdHeader: 'x-switchyard-trace-id',
  cacheStatusHeader: 'switchyard-cache-status',
  adminRealm: 'switchyard admin',
  etcdPrefix: '/switchyard',
  storeKeyPrefix: 'sy',
  storeLayout: 'switchyard',
});

export const REFERENCE_NAMES: CompatNames = Object.freeze({
  debugHeader: 'x-featherbit-debug',
  traceIdHeader: 'x-featherbit-trace-id',
  cacheStatusHeader: 'featherbit-cache-status',
  adminRealm: 'featherbit admin',
  etcdPrefix: '/featherbit',
  storeKeyPrefix: 'fb',
  storeLayout: 'reference',
});

/** system.yaml `compat:`. */
export interface CompatConfig {
  reference_names?: boolean;
  debug_header?: string;
  trace_id_header?: string;
  cache_status_header?: string;
  admin_realm?: string;
  etcd_prefix?: string;
  store_key_prefix?: string;
  store_layout?: StoreLayout;
}

/** The names a `compat:` block selects: the switch picks the base set, each key overrides one name. */
export function resolveCompatNames(compat: CompatConfig | undefined): CompatNames {
  const base = compat?.reference_names === true ? REFERENCE_NAMES : SWITCHYARD_NAMES;
  if (compat === undefined) return base;
  return Object.freeze({
    debugHeader: (compat.debug_header ?? base.debugHeader).toLowerCase(),
    traceIdHeader: (compat.trace_id_header ?? base.traceIdHeader).toLowerCase(),
    cacheStatusHeader: (compat.cache_status_header ?? base.cacheStatusHeader).toLowerCase(),
    adminRealm: compat.admin_realm ?? base.adminRealm,
    etcdPrefix: compat.etcd_prefix ?? base.etcdPrefix,
    storeKeyPrefix: compat.store_key_prefix ?? base.storeKeyPrefix,
    storeLayout: compat.store_layout ?? base.storeLayout,
  });
}

// system.yaml is read once per process, so its names are too; compiling
// (store prefixes, proxy-cache, limit counters, sessions) reads them here.
let current: CompatNames = SWITCHYARD_NAMES;

/** Installs the names of the system.yaml this process serves (the gateway does it at startup). */
export function useCompatNames(names: CompatNames): void {
  current = names;
}

/** The names in force in this process. */
export function compatNames(): CompatNames {
  return current;
}
