import { isDeepStrictEqual } from 'node:util';
import type { Logger } from '../core/logger.js';
import { EtcdClient, EtcdConflict, type EtcdSettings, type RevisionedKeyValue } from './etcd-client.js';
import { EtcdConfigHistory, type PreparedVersion } from './etcd-history.js';
import {
  consumerSchema,
  emptyGatewayConfig,
  globalRuleSchema,
  pluginConfigSchema,
  policySchema,
  routeSchema,
  storeSchema,
  supernodeSchema,
  type GatewayConfig,
} from './gateway.js';
import { ConfigRejected, validateAgainst, type ConfigIssue } from './schema-validate.js';

/**
 * gateway.yaml kept in etcd, the reference gateway's layout: one key per
 * resource, `<prefix>/<family>/<name>`, whose value is the resource as JSON
 * (placeholders such as `${TOKEN}` stay as written). A route's document also
 * carries `order`, its place in the declaration order (docs/etcd.md#route-order):
 * routes come back by `order`, those without one (written by older gateways)
 * after them in key order, i.e. by name. Global rules come back in key order.
 */
const SCHEMAS = {
  routes: routeSchema,
  policies: policySchema,
  consumers: consumerSchema,
  supernodes: supernodeSchema,
  plugin_configs: pluginConfigSchema,
  stores: storeSchema,
  global_rules: globalRuleSchema,
} as const;
type Family = keyof typeof SCHEMAS;
const FAMILIES = Object.keys(SCHEMAS) as Family[];
/**
 * Families whose list order means something but is not stored: they run in key order, and a
 * write that reorders them is refused. Routes store theirs in `order` (ORDER_FIELD).
 */
const KEY_ORDERED: readonly Family[] = ['global_rules'];

/** The key of a route document that holds its place in the declaration order; not a route key. */
const ORDER_FIELD = 'order';
/** Spacing of `order` values written afresh: room to insert a route between two without renumbering. */
const ORDER_GAP = 1_000_000;
/** `order` values stay well inside the doubles that are exact integers. */
const ORDER_LIMIT = 2 ** 50;

/** etcd's default `--max-txn-ops`; and well under its 1.5 MiB request limit. */
const TXN_MAX_KEYS = 128;
const TXN_MAX_BYTES = 1024 * 1024;

interface Named {
  name: string;
}

export interface EtcdSourceSettings extends EtcdSettings {
  prefix: string;
}

/** One read of the prefix: the configuration and the mod_revision of each resource key it saw. */
export interface EtcdSnapshot {
  readonly config: GatewayConfig;
  readonly revisions: ReadonlyMap<string, string>;
  /** The stored `order` of each route that has one, by route name. */
  readonly orders: ReadonlyMap<string, number>;
  /** The store revision the read saw (etcd's decimal string). */
  readonly revision: string;
}

interface KnownDocument {
  modRevision: string;
  doc: Named;
  /** A route's stored `order`; undefined for other families and for routes without one. */
  order: number | undefined;
}

export { EtcdConflict } from './etcd-client.js';

export class EtcdConfigSource {
  readonly prefix: string;
  readonly #client: EtcdClient;
  readonly #logger: Logger;
  /**
   * The valid documents last read or written, by key, with their mod_revision:
   * a read fetches and parses only the keys changed since, and an unchanged
   * resource keeps its object (Admin writes measure and compare items by identity).
   */
  #known = new Map<string, KnownDocument>();
  /** The store revision of the last read (etcd's decimal string); undefined before the first. */
  lastReadRevision: string | undefined;

  constructor(settings: EtcdSourceSettings, logger: Logger) {
    const prefix = settings.prefix.replace(/\/+$/, '');
    if (prefix === '')
      throw new ConfigRejected([{ path: 'config.etcd.prefix', message: 'must not be empty or /' }]);
    this.prefix = prefix;
    this.#client = new EtcdClient(settings);
    this.#logger = logger;
  }

  /** The configuration under the prefix; throws ConfigRejected naming the key of a bad document. */
  async load(): Promise<GatewayConfig> {
    return (await this.read()).config;
  }

  /** The configuration under the prefix with each key's mod_revision, the base of a commit. */
  async read(): Promise<EtcdSnapshot> {
    const { revision, kvs } = await this.#range();
    this.lastReadRevision = revision;
    return { ...this.#assemble(kvs), revision };
  }

  /**
   * The configuration under the prefix, after writing `seed()` there when the
   * prefix holds no resource yet (the first gateway of a cluster seeds it from
   * its local gateway.yaml). Two gateways seeding at once: one wins, the other
   * reads what it wrote.
   */
  async loadOrSeed(seed: () => GatewayConfig | undefined): Promise<GatewayConfig> {
    const snapshot = await this.read();
    if (snapshot.revisions.size > 0) return snapshot.config;
    const initial = seed() ?? emptyGatewayConfig();
    try {
      await this.commit(snapshot, initial);
    } catch (err) {
      if (!(err instanceof EtcdConflict)) throw err;
      return this.load();
    }
    this.#logger.info(
      { prefix: this.prefix, routes: initial.routes.length, policies: initial.policies.length },
      'etcd prefix was empty: seeded it from the local gateway config',
    );
    return this.load();
  }

  /**
   * Writes what changed from `base` to `next`, and nothing else: a resource
   * added, changed or removed is put or deleted, and so is a route whose
   * `order` must change for the routes to come back in `next`'s order
   * (routeOrders); every other key, also one this gateway has not seen yet,
   * is left alone. One transaction, guarded by each touched key's
   * mod_revision in `base` (absent: must still be absent); throws
   * EtcdConflict, having written nothing, when another writer changed one.
   * A write that moves a route (changes the `order` of one `base` has) also
   * requires that no route key was put since `base` was read, since it was
   * computed from the whole order. A write of more than 128 resources (etcd's
   * default `--max-txn-ops`) or 1 MiB goes in several such transactions, in
   * order (that requirement on the first).
   */
  async commit(
    base: EtcdSnapshot,
    next: GatewayConfig,
    extra?: Pick<PreparedVersion, 'guards' | 'ops'>,
  ): Promise<void> {
    const changes: {
      key: string;
      doc: Named | undefined;
      value: string | undefined;
      order: number | undefined;
    }[] = [];
    // A route that existed changes its `order`: the write depends on the whole order it read.
    let moved = false;
    for (const family of FAMILIES) {
      const before = new Map(listOf(base.config, family).map((item) => [item.name, item]));
      const after = new Map(listOf(next, family).map((item) => [item.name, item]));
      const orders = family === 'routes' ? routeOrders(next.routes, base) : undefined;
      for (const [name, item] of after) {
        const previous = before.get(name);
        const order = orders?.get(name);
        const sameOrder = orders === undefined || order === base.orders.get(name);
        if (previous !== undefined && !sameOrder) moved = true;
        if (previous === item && sameOrder) continue;
        const value = storedForm(item, order);
        if (previous !== undefined && sameOrder && JSON.stringify(previous) === JSON.stringify(item))
          continue;
        changes.push({ key: this.#key(family, name), doc: item, value, order });
      }
      for (const name of before.keys())
        if (!after.has(name))
          changes.push({ key: this.#key(family, name), doc: undefined, value: undefined, order: undefined });
    }
    let start = 0;
    // The history version (extra) goes with the last transaction: written only with the whole change.
    while (start < changes.length || (extra !== undefined && start === 0 && changes.length === 0)) {
      let end = start;
      let bytes = 0;
      while (end < changes.length && end - start < TXN_MAX_KEYS) {
        const size = changes[end]!.key.length + (changes[end]!.value?.length ?? 0);
        if (end > start && bytes + size > TXN_MAX_BYTES) break;
        bytes += size;
        end++;
      }
      const batch = changes.slice(start, end);
      const last = end >= changes.length;
      const guards = [
        ...batch.map((c) => ({ key: c.key, modRevision: base.revisions.get(c.key) })),
        ...(last && extra !== undefined ? extra.guards : []),
      ];
      const ops = last && extra !== undefined ? [...batch, ...extra.ops] : batch;
      // A reorder is also refused when any route was put since the read (another reorder, a
      // new route), so two reorders at once never blend: the loser re-runs on the fresh order.
      const unchanged =
        moved && start === 0 ? { prefix: `${this.prefix}/routes/`, revision: base.revision } : undefined;
      const result = await this.#client.txn(guards, ops, unchanged);
      if (!result.succeeded) {
        const changed = guards
          .filter((g) => result.current.get(g.key) !== (g.modRevision ?? '0'))
          .map((g) => g.key);
        for (const key of result.changedSince) if (!changed.includes(key)) changed.push(key);
        throw new EtcdConflict(
          (changed.length > 0 ? changed : guards.map((g) => g.key)).map((k) => this.#resourceOf(k)),
        );
      }
      for (const change of batch) {
        if (change.doc === undefined) this.#known.delete(change.key);
        else
          this.#known.set(change.key, { modRevision: result.revision, doc: change.doc, order: change.order });
      }
      start = end;
      if (changes.length === 0) break;
    }
  }

  /** The configuration history kept beside the prefix, `<prefix>.history/` (docs/etcd.md#history). */
  history(options: { maxVersions?: number | undefined; logger: Logger }): EtcdConfigHistory {
    return new EtcdConfigHistory({ client: this.#client, prefix: this.prefix, ...options });
  }

  /**
   * `next` as etcd will hand it back after `commit`: routes in `next`'s order
   * (their `order` fields keep it), every other family in key order. Throws
   * ConfigRejected when `next` reorders global rules that `base` has, an
   * order etcd does not store (docs/etcd.md#layout).
   */
  static arrange(base: GatewayConfig, next: GatewayConfig): GatewayConfig {
    const arranged = { ...next };
    for (const family of FAMILIES) {
      const list = next[family] as Named[] | undefined;
      if (list === undefined || family === 'routes') continue;
      if (KEY_ORDERED.includes(family)) {
        const rank = new Map(listOf(base, family).map((item, i) => [item.name, i]));
        let last = -1;
        for (const item of list) {
          const at = rank.get(item.name);
          if (at === undefined) continue;
          if (at < last)
            throw new ConfigRejected([
              {
                path: family,
                message: `with config.source etcd, ${family} run in name order (their keys' order in etcd), which a write cannot change: rename them to reorder them (docs/etcd.md#route-order)`,
              },
            ]);
          last = at;
        }
      }
      (arranged as Record<Family, Named[]>)[family] = inKeyOrder(list);
    }
    return arranged;
  }

  /** Streams changes under the prefix; see EtcdClient.watch. */
  watch(handlers: { onEvents: () => void; onConnected: () => void; onError: (err: Error) => void }): {
    close(): void;
  } {
    return this.#client.watch(`${this.prefix}/`, handlers);
  }

  /** True when `a` and `b` would be stored as the same documents. */
  static same(a: GatewayConfig, b: GatewayConfig): boolean {
    return isDeepStrictEqual(JSON.parse(JSON.stringify(a)), JSON.parse(JSON.stringify(b)));
  }

  /**
   * The prefix's keys with their revisions; values only of the keys changed
   * since the last read or write, fetched at the same store revision.
   */
  async #range(): Promise<{ revision: string; kvs: RevisionedKeyValue[] }> {
    const prefix = `${this.prefix}/`;
    if (this.#known.size === 0) return this.#client.rangeRevisions(prefix);
    const listing = await this.#client.rangeRevisions(prefix, { keysOnly: true });
    let oldest: number | undefined;
    for (const kv of listing.kvs) {
      if (this.#known.get(kv.key)?.modRevision === kv.modRevision) continue;
      const revision = Number(kv.modRevision);
      if (oldest === undefined || revision < oldest) oldest = revision;
    }
    if (oldest === undefined) return listing;
    let changed: RevisionedKeyValue[];
    try {
      const options = { revision: listing.revision, minModRevision: String(oldest) };
      changed = (await this.#client.rangeRevisions(prefix, options)).kvs;
    } catch {
      // That revision compacted away in between: read everything.
      return this.#client.rangeRevisions(prefix);
    }
    const values = new Map(changed.map((kv) => [kv.key, kv]));
    return { revision: listing.revision, kvs: listing.kvs.map((kv) => values.get(kv.key) ?? kv) };
  }

  #key(family: Family, name: string): string {
    return `${this.prefix}/${family}/${name}`;
  }

  /** `<family>/<name>`; a key outside the prefix (the history index) as it is. */
  #resourceOf(key: string): string {
    return key.startsWith(`${this.prefix}/`) ? key.slice(this.prefix.length + 1) : key;
  }

  #parseKey(key: string): { family: Family; name: string } | undefined {
    if (!key.startsWith(`${this.prefix}/`)) return undefined;
    const rest = key.slice(this.prefix.length + 1);
    const slash = rest.indexOf('/');
    if (slash <= 0 || slash === rest.length - 1) return undefined;
    const family = rest.slice(0, slash) as Family;
    return FAMILIES.includes(family) ? { family, name: rest.slice(slash + 1) } : undefined;
  }

  #assemble(kvs: readonly RevisionedKeyValue[]): Omit<EtcdSnapshot, 'revision'> {
    const config = emptyGatewayConfig();
    const revisions = new Map<string, string>();
    const orders = new Map<string, number>();
    const known = new Map<string, KnownDocument>();
    const issues: ConfigIssue[] = [];
    for (const kv of kvs) {
      const parsed = this.#parseKey(kv.key);
      if (parsed === undefined) continue;
      revisions.set(kv.key, kv.modRevision);
      const seen = this.#known.get(kv.key);
      let stored: { doc: Named; order: number | undefined } | undefined;
      if (seen?.modRevision === kv.modRevision) stored = seen;
      else if (kv.value !== undefined) stored = this.#document(kv.key, parsed, kv.value, issues);
      else issues.push({ path: `etcd:${kv.key}`, message: 'changed while it was read; read again' });
      if (stored === undefined) continue;
      known.set(kv.key, { modRevision: kv.modRevision, doc: stored.doc, order: stored.order });
      if (stored.order !== undefined) orders.set(stored.doc.name, stored.order);
      (config[parsed.family] as Named[]).push(stored.doc);
    }
    this.#known = known;
    if (issues.length > 0) throw new ConfigRejected(issues);
    config.routes = inStoredOrder(config.routes, orders);
    return { config, revisions, orders };
  }

  /**
   * One stored resource, checked against its family's schema, with a route's
   * `order` taken out of it; undefined (and an issue) when bad.
   */
  #document(
    key: string,
    { family, name }: { family: Family; name: string },
    value: Buffer,
    issues: ConfigIssue[],
  ): { doc: Named; order: number | undefined } | undefined {
    let doc: unknown;
    try {
      doc = JSON.parse(value.toString('utf8'));
    } catch (err) {
      issues.push({ path: `etcd:${key}`, message: `not JSON: ${(err as Error).message}` });
      return undefined;
    }
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
      issues.push({ path: `etcd:${key}`, message: 'must be a JSON object' });
      return undefined;
    }
    const named = (doc as { name?: unknown }).name;
    if (named !== name) {
      issues.push({
        path: `etcd:${key}`,
        message: `its name is ${JSON.stringify(named)}, the key says '${name}'`,
      });
      return undefined;
    }
    let order: number | undefined;
    if (family === 'routes' && ORDER_FIELD in doc) {
      const stored = (doc as Record<string, unknown>)[ORDER_FIELD];
      if (typeof stored !== 'number' || !Number.isInteger(stored) || Math.abs(stored) > ORDER_LIMIT) {
        issues.push({
          path: `etcd:${key}.${ORDER_FIELD}`,
          message: `must be an integer from -2^50 to 2^50, the route's place in the declaration order (got ${JSON.stringify(stored)})`,
        });
        return undefined;
      }
      order = stored;
      delete (doc as Record<string, unknown>)[ORDER_FIELD];
    }
    const invalid = validateAgainst(SCHEMAS[family], doc, `etcd:${key}`);
    if (invalid.length > 0) {
      issues.push(...invalid);
      return undefined;
    }
    return { doc: doc as Named, order };
  }
}

const listOf = (config: GatewayConfig, family: Family): Named[] => config[family] ?? [];

/** A resource's etcd value: its JSON, with `order` last for a route that has one. */
function storedForm(item: Named, order: number | undefined): string {
  return JSON.stringify(order === undefined ? item : { ...item, [ORDER_FIELD]: order });
}

/**
 * Routes read in key order, put in stored order: by `order`, equal ones and
 * those without one (older gateways wrote none) by name, the latter last.
 */
function inStoredOrder<T extends Named>(routes: T[], orders: ReadonlyMap<string, number>): T[] {
  if (orders.size === 0) return routes;
  const rank = (route: T) => orders.get(route.name) ?? Number.POSITIVE_INFINITY;
  let sorted = true;
  for (let i = 1; i < routes.length && sorted; i++) sorted = rank(routes[i - 1]!) <= rank(routes[i]!);
  // Stable: equal ranks keep key order.
  return sorted ? routes : [...routes].sort((a, b) => (rank(a) < rank(b) ? -1 : rank(a) > rank(b) ? 1 : 0));
}

/** Stored-order comparison of two routes: by `order`, then by name bytes (etcd's key order). */
function storedBefore(a: { order: number; name: Buffer }, b: { order: number; name: Buffer }): boolean {
  return a.order < b.order || (a.order === b.order && Buffer.compare(a.name, b.name) < 0);
}

/**
 * The `order` each route of `routes` must have in etcd so that a read hands
 * them back in this order (inStoredOrder), changing as few as it can: the
 * longest run of routes already in order keeps its values, every other route
 * gets one between its kept neighbours (new routes at the end: the last value
 * plus ORDER_GAP). When there is no room between two neighbours, every route
 * is numbered afresh (ORDER_GAP, 2 × ORDER_GAP, …). Routes at the end that
 * `base` holds without an `order` and that are already in name order keep
 * having none (undefined here), so an older gateway's routes are only given
 * one when a write reorders or appends around them.
 */
export function routeOrders(
  routes: readonly Named[],
  base: Pick<EtcdSnapshot, 'config' | 'orders'>,
): Map<string, number | undefined> {
  const out = new Map<string, number | undefined>();
  // Most writes leave the routes as they were read: every one keeps its order.
  let last = Number.NEGATIVE_INFINITY;
  for (const route of routes) {
    const order = base.orders.get(route.name);
    if (order === undefined || order <= last) break;
    out.set(route.name, (last = order));
  }
  if (out.size === routes.length) return out;
  out.clear();
  const existing = new Set(base.config.routes.map((r) => r.name));
  // The unordered tail: routes of base without an order, at the end, in strictly ascending name order.
  let tail = routes.length;
  while (tail > 0) {
    const route = routes[tail - 1]!;
    if (!existing.has(route.name) || base.orders.has(route.name)) break;
    if (tail < routes.length && Buffer.compare(Buffer.from(route.name), Buffer.from(routes[tail]!.name)) >= 0)
      break;
    tail--;
  }
  for (let i = tail; i < routes.length; i++) out.set(routes[i]!.name, undefined);

  // Longest strictly increasing run (in stored order) of the routes that have an order.
  const items = routes.slice(0, tail).map((r) => ({
    name: r.name,
    order: base.orders.get(r.name),
    bytes: Buffer.from(r.name),
  }));
  const tips: number[] = []; // tips[k]: index of the smallest last item of a run of length k + 1
  const previous = new Array<number>(items.length).fill(-1);
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    if (item.order === undefined) continue;
    const key = { order: item.order, name: item.bytes };
    let lo = 0;
    let hi = tips.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const tip = items[tips[mid]!]!;
      if (storedBefore({ order: tip.order!, name: tip.bytes }, key)) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) previous[i] = tips[lo - 1]!;
    tips[lo] = i;
  }
  const kept = new Set<number>();
  for (let i = tips.length === 0 ? -1 : tips[tips.length - 1]!; i !== -1; i = previous[i]!) kept.add(i);

  const assigned = new Array<number>(items.length);
  let roomy = true;
  let start = 0;
  while (start < items.length && roomy) {
    if (kept.has(start)) {
      assigned[start] = items[start]!.order!;
      start++;
      continue;
    }
    let end = start;
    while (end < items.length && !kept.has(end)) end++;
    const count = end - start;
    const low = start > 0 ? assigned[start - 1] : undefined;
    const high = end < items.length ? items[end]!.order! : undefined;
    for (let j = 1; j <= count; j++) {
      let value: number;
      if (low === undefined && high === undefined) value = j * ORDER_GAP;
      else if (high === undefined) value = low! + j * ORDER_GAP;
      else if (low === undefined) value = high - (count - j + 1) * ORDER_GAP;
      else if (high - low > count) value = low + Math.floor(((high - low) * j) / (count + 1));
      else {
        roomy = false;
        break;
      }
      if (Math.abs(value) > ORDER_LIMIT) {
        roomy = false;
        break;
      }
      assigned[start + j - 1] = value;
    }
    start = end;
  }
  if (!roomy) for (let i = 0; i < items.length; i++) assigned[i] = (i + 1) * ORDER_GAP;
  for (let i = 0; i < items.length; i++) out.set(items[i]!.name, assigned[i]);
  return out;
}

/** `list` sorted as etcd sorts keys: by the bytes of the name. */
function inKeyOrder<T extends Named>(list: readonly T[]): T[] {
  const keyed = list.map((item) => ({ item, bytes: Buffer.from(item.name) }));
  let sorted = true;
  for (let i = 1; i < keyed.length && sorted; i++)
    sorted = Buffer.compare(keyed[i - 1]!.bytes, keyed[i]!.bytes) <= 0;
  if (!sorted) keyed.sort((a, b) => Buffer.compare(a.bytes, b.bytes));
  return keyed.map((k) => k.item);
}
