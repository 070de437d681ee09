import { isDeepStrictEqual } from 'node:util';
import type { Logger } from '../core/logger.js';
import { EtcdClient, type EtcdSettings, type RevisionedKeyValue } from './etcd-client.js';
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
 * (placeholders such as `${TOKEN}` stay as written). Routes come back in key
 * order, i.e. by name: in etcd mode, name routes so that the one that must
 * match first sorts first.
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
/** Families whose list order means something (first match wins, rules run in order). */
const ORDERED: readonly Family[] = ['routes', 'global_rules'];

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
}

/**
 * An Admin write's guarded transaction failed: another writer changed one of
 * the resources it touches since this gateway read them. Nothing of that
 * transaction was applied. `resources` are `<family>/<name>`.
 */
export class EtcdConflict extends Error {
  constructor(readonly resources: readonly string[]) {
    super(`changed in etcd by another writer meanwhile: ${resources.join(', ')}`);
    this.name = 'EtcdConflict';
  }
}

export class EtcdConfigSource {
  readonly prefix: string;
  readonly #client: EtcdClient;
  readonly #logger: Logger;
  /**
   * The valid documents last read or written, by key, with their mod_revision:
   * a read fetches and parses only the keys changed since, and an unchanged
   * resource keeps its object (Admin writes measure and compare items by identity).
   */
  #known = new Map<string, { modRevision: string; doc: Named }>();

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
    return this.#assemble(await this.#range());
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
   * added, changed or removed is put or deleted; every other key, also one
   * this gateway has not seen yet, is left alone. One transaction, guarded by
   * each touched key's mod_revision in `base` (absent: must still be absent);
   * throws EtcdConflict, having written nothing, when another writer changed
   * one. A write of more than 128 resources (etcd's default `--max-txn-ops`)
   * or 1 MiB goes in several such transactions, in order.
   */
  async commit(base: EtcdSnapshot, next: GatewayConfig): Promise<void> {
    const changes: { key: string; doc: Named | undefined; value: string | undefined }[] = [];
    for (const family of FAMILIES) {
      const before = new Map(listOf(base.config, family).map((item) => [item.name, item]));
      const after = new Map(listOf(next, family).map((item) => [item.name, item]));
      for (const [name, item] of after) {
        const previous = before.get(name);
        if (previous === item) continue;
        const value = JSON.stringify(item);
        if (previous !== undefined && JSON.stringify(previous) === value) continue;
        changes.push({ key: this.#key(family, name), doc: item, value });
      }
      for (const name of before.keys())
        if (!after.has(name))
          changes.push({ key: this.#key(family, name), doc: undefined, value: undefined });
    }
    let start = 0;
    while (start < changes.length) {
      let end = start;
      let bytes = 0;
      while (end < changes.length && end - start < TXN_MAX_KEYS) {
        const size = changes[end]!.key.length + (changes[end]!.value?.length ?? 0);
        if (end > start && bytes + size > TXN_MAX_BYTES) break;
        bytes += size;
        end++;
      }
      const batch = changes.slice(start, end);
      const guards = batch.map((c) => ({ key: c.key, modRevision: base.revisions.get(c.key) }));
      const result = await this.#client.txn(guards, batch);
      if (!result.succeeded) {
        const changed = guards.filter((g) => result.current.get(g.key) !== (g.modRevision ?? '0'));
        throw new EtcdConflict((changed.length > 0 ? changed : guards).map((g) => this.#resourceOf(g.key)));
      }
      for (const change of batch) {
        if (change.doc === undefined) this.#known.delete(change.key);
        else this.#known.set(change.key, { modRevision: result.revision, doc: change.doc });
      }
      start = end;
    }
  }

  /**
   * `next` as etcd will hand it back: each family in key order. Throws
   * ConfigRejected when `next` reorders routes or global rules that `base`
   * has, an order etcd cannot store (docs/etcd.md#layout).
   */
  static arrange(base: GatewayConfig, next: GatewayConfig): GatewayConfig {
    const arranged = { ...next };
    for (const family of FAMILIES) {
      const list = next[family] as Named[] | undefined;
      if (list === undefined) continue;
      if (ORDERED.includes(family)) {
        const rank = new Map(listOf(base, family).map((item, i) => [item.name, i]));
        let last = -1;
        for (const item of list) {
          const at = rank.get(item.name);
          if (at === undefined) continue;
          if (at < last)
            throw new ConfigRejected([
              {
                path: family,
                message: `with config.source etcd, ${family} run in name order (their keys' order in etcd), which a write cannot change: rename them to reorder them (docs/etcd.md#layout)`,
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
  async #range(): Promise<RevisionedKeyValue[]> {
    const prefix = `${this.prefix}/`;
    if (this.#known.size === 0) return (await this.#client.rangeRevisions(prefix)).kvs;
    const listing = await this.#client.rangeRevisions(prefix, { keysOnly: true });
    let oldest: number | undefined;
    for (const kv of listing.kvs) {
      if (this.#known.get(kv.key)?.modRevision === kv.modRevision) continue;
      const revision = Number(kv.modRevision);
      if (oldest === undefined || revision < oldest) oldest = revision;
    }
    if (oldest === undefined) return listing.kvs;
    let changed: RevisionedKeyValue[];
    try {
      const options = { revision: listing.revision, minModRevision: String(oldest) };
      changed = (await this.#client.rangeRevisions(prefix, options)).kvs;
    } catch {
      // That revision compacted away in between: read everything.
      return (await this.#client.rangeRevisions(prefix)).kvs;
    }
    const values = new Map(changed.map((kv) => [kv.key, kv]));
    return listing.kvs.map((kv) => values.get(kv.key) ?? kv);
  }

  #key(family: Family, name: string): string {
    return `${this.prefix}/${family}/${name}`;
  }

  #resourceOf(key: string): string {
    return key.slice(this.prefix.length + 1);
  }

  #parseKey(key: string): { family: Family; name: string } | undefined {
    if (!key.startsWith(`${this.prefix}/`)) return undefined;
    const rest = key.slice(this.prefix.length + 1);
    const slash = rest.indexOf('/');
    if (slash <= 0 || slash === rest.length - 1) return undefined;
    const family = rest.slice(0, slash) as Family;
    return FAMILIES.includes(family) ? { family, name: rest.slice(slash + 1) } : undefined;
  }

  #assemble(kvs: readonly RevisionedKeyValue[]): EtcdSnapshot {
    const config = emptyGatewayConfig();
    const revisions = new Map<string, string>();
    const known = new Map<string, { modRevision: string; doc: Named }>();
    const issues: ConfigIssue[] = [];
    for (const kv of kvs) {
      const parsed = this.#parseKey(kv.key);
      if (parsed === undefined) continue;
      revisions.set(kv.key, kv.modRevision);
      const seen = this.#known.get(kv.key);
      let doc: Named | undefined;
      if (seen?.modRevision === kv.modRevision) doc = seen.doc;
      else if (kv.value !== undefined) doc = this.#document(kv.key, parsed, kv.value, issues);
      else issues.push({ path: `etcd:${kv.key}`, message: 'changed while it was read; read again' });
      if (doc === undefined) continue;
      known.set(kv.key, { modRevision: kv.modRevision, doc });
      (config[parsed.family] as Named[]).push(doc);
    }
    this.#known = known;
    if (issues.length > 0) throw new ConfigRejected(issues);
    return { config, revisions };
  }

  /** One stored resource, checked against its family's schema; undefined (and an issue) when bad. */
  #document(
    key: string,
    { family, name }: { family: Family; name: string },
    value: Buffer,
    issues: ConfigIssue[],
  ): Named | undefined {
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
    const invalid = validateAgainst(SCHEMAS[family], doc, `etcd:${key}`);
    if (invalid.length > 0) {
      issues.push(...invalid);
      return undefined;
    }
    return doc as Named;
  }
}

const listOf = (config: GatewayConfig, family: Family): Named[] => config[family] ?? [];

/** `list` sorted as etcd sorts keys: by the bytes of the name. */
function inKeyOrder<T extends Named>(list: readonly T[]): T[] {
  const keyed = list.map((item) => ({ item, bytes: Buffer.from(item.name) }));
  let sorted = true;
  for (let i = 1; i < keyed.length && sorted; i++)
    sorted = Buffer.compare(keyed[i - 1]!.bytes, keyed[i]!.bytes) <= 0;
  if (!sorted) keyed.sort((a, b) => Buffer.compare(a.bytes, b.bytes));
  return keyed.map((k) => k.item);
}
