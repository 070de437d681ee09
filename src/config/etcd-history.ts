import type { Logger } from '../core/logger.js';
import { canonicalConfig, configSha256 } from './canonical.js';
import { diffConfigs, summarizeChanges } from './config-diff.js';
import { EtcdConflict, type EtcdClient } from './etcd-client.js';
import type { GatewayConfig } from './gateway.js';
import { DEFAULT_MAX_VERSIONS, type HistoryEntry, type HistoryLog, type HistorySource } from './history.js';

/** Tries of one append whose compare-and-swap on the index keeps losing to other gateways. */
const APPEND_ATTEMPTS = 20;

/** The keys and guard of one new version: written in one etcd transaction. */
export interface PreparedVersion {
  readonly entry: HistoryEntry;
  /** The index key at the mod_revision it was read at (undefined: must still be absent). */
  readonly guards: readonly { key: string; modRevision: string | undefined }[];
  /** `v<N>` and the index put; the versions dropped past max_versions deleted (value undefined). */
  readonly ops: readonly { key: string; value: string | undefined }[];
  readonly entries: readonly HistoryEntry[];
  readonly config: GatewayConfig;
}

/**
 * The configuration history of `config.source: etcd`, kept in etcd beside the prefix so it
 * survives restarts and is one history for every gateway on the prefix (docs/etcd.md#history):
 * `<prefix>.history/index` holds the entries (JSON, oldest first, at most
 * `admin.history.max_versions`), `<prefix>.history/v<N>` each version's canonical content.
 * Outside `<prefix>/`, so the configuration watch does not see these keys.
 *
 * A version is added by one transaction guarded by the index key's mod_revision: two gateways
 * adding at once both get a version, distinct and increasing (the loser reads the index again
 * and takes the next number). An Admin write adds its version in the same transaction as its
 * resources (`prepare`, then EtcdConfigSource.commit with the version's keys), so the other
 * gateways, reloading on the watch, find it there and add nothing. A reload or start whose
 * content equals the newest version's adds nothing either; one whose read is older than the
 * index (another gateway changed both since) adds nothing, the newer change has its version.
 */
export class EtcdConfigHistory implements HistoryLog {
  readonly #client: EtcdClient;
  /** `<prefix>.history` */
  readonly prefix: string;
  readonly #max: number;
  readonly #logger: Logger;
  /** Oldest first, as last read. */
  #entries: HistoryEntry[] = [];
  /** mod_revision of the index key when last read; undefined when it was absent. */
  #indexRevision: string | undefined;
  /** Contents fetched or written (a version's content never changes), bounded like the index. */
  readonly #contents = new Map<number, GatewayConfig>();
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: {
    client: EtcdClient;
    prefix: string;
    maxVersions?: number | undefined;
    logger: Logger;
  }) {
    this.#client = options.client;
    this.prefix = `${options.prefix}.history`;
    this.#max = options.maxVersions ?? DEFAULT_MAX_VERSIONS;
    this.#logger = options.logger;
  }

  get #indexKey(): string {
    return `${this.prefix}/index`;
  }

  #versionKey(version: number): string {
    return `${this.prefix}/v${version}`;
  }

  /** Reads the index (and its mod_revision) from etcd. */
  async #read(): Promise<void> {
    const kv = await this.#client.get(this.#indexKey);
    this.#indexRevision = kv?.modRevision;
    if (kv?.value === undefined) {
      this.#entries = [];
      return;
    }
    try {
      const parsed = JSON.parse(kv.value.toString('utf8')) as unknown;
      if (!Array.isArray(parsed)) throw new Error('not a JSON array');
      this.#entries = (parsed as HistoryEntry[]).slice(-this.#max);
    } catch (err) {
      // Overwritten by the next version (the guard holds the revision read here).
      this.#logger.warn({ err, key: this.#indexKey }, 'cannot read the configuration history in etcd');
      this.#entries = [];
    }
  }

  list(): HistoryEntry[] {
    return [...this.#entries].reverse();
  }

  /** Read afresh: a version another gateway added (an Admin write, a rollback) is listed. */
  async versions(): Promise<HistoryEntry[]> {
    await this.#queue;
    await this.#read();
    return this.list();
  }

  async content(version: number): Promise<GatewayConfig | undefined> {
    if (!this.#contents.has(version)) await this.#queue;
    return this.#fetch(version);
  }

  /** The content of `version`, from memory or etcd (not waiting for the writes queued). */
  async #fetch(version: number): Promise<GatewayConfig | undefined> {
    const held = this.#contents.get(version);
    if (held !== undefined) return held;
    const kv = await this.#client.get(this.#versionKey(version));
    if (kv?.value === undefined) return undefined;
    let config: GatewayConfig;
    try {
      config = JSON.parse(kv.value.toString('utf8')) as GatewayConfig;
    } catch {
      return undefined;
    }
    this.#keep(version, config);
    return config;
  }

  #keep(version: number, config: GatewayConfig): void {
    this.#contents.set(version, config);
    for (const old of this.#contents.keys()) {
      if (this.#contents.size <= this.#max) break;
      this.#contents.delete(old);
    }
  }

  /** The version after the newest read, with the keys that write it. */
  #compose(
    config: GatewayConfig,
    sha256: string,
    source: HistorySource,
    user: string | null,
    summary: string,
  ) {
    const entry: HistoryEntry = {
      version: (this.#entries.at(-1)?.version ?? 0) + 1,
      time: new Date().toISOString(),
      user,
      source,
      summary,
      sha256,
    };
    const entries = [...this.#entries, entry];
    const dropped = entries.splice(0, Math.max(0, entries.length - this.#max));
    const ops = [
      { key: this.#versionKey(entry.version), value: JSON.stringify(canonicalConfig(config)) },
      { key: this.#indexKey, value: JSON.stringify(entries) },
      ...dropped.map((old) => ({ key: this.#versionKey(old.version), value: undefined })),
    ];
    const guards = [{ key: this.#indexKey, modRevision: this.#indexRevision }];
    return { entry, guards, ops, entries, config } satisfies PreparedVersion;
  }

  /**
   * The version an Admin write from `base` to `next` makes, to be written in the transaction of
   * its resources; undefined when `next` equals the newest version (a rollback always makes one).
   * `readAt`: the store revision `base` was read at. When a version was added after it, another
   * gateway's write landed since, which `next` (made from `base`) may lack: EtcdConflict, and the
   * write is re-run on a fresh read, so a version's content is what etcd holds after it.
   */
  async prepare(
    base: GatewayConfig,
    next: GatewayConfig,
    source: HistorySource,
    user: string | null,
    readAt: string,
    summary?: string,
  ): Promise<PreparedVersion | undefined> {
    await this.#queue;
    await this.#read();
    if (this.#indexRevision !== undefined && BigInt(this.#indexRevision) > BigInt(readAt))
      throw new EtcdConflict([`${this.prefix}/index`]);
    const sha256 = configSha256(next);
    if (this.#entries.at(-1)?.sha256 === sha256 && source !== 'rollback') return undefined;
    return this.#compose(next, sha256, source, user, summary ?? summarizeChanges(diffConfigs(base, next)));
  }

  /** `prepared` was written: it is the newest version now. */
  settle(prepared: PreparedVersion): void {
    this.#entries = [...prepared.entries];
    this.#indexRevision = undefined;
    this.#keep(prepared.entry.version, prepared.config);
  }

  /**
   * Adds `config` as a version in its own transaction (a start, a reload on the watch, a
   * signal). `loadedAt`: the store revision `config` was read at; when the index changed after
   * it, another gateway wrote a newer configuration with its version, and nothing is added.
   * Failures are logged, never thrown: the configuration is applied either way.
   */
  record(
    config: GatewayConfig,
    source: HistorySource,
    user: string | null,
    options: { summary?: string | undefined; loadedAt?: string | undefined } = {},
  ): Promise<HistoryEntry | undefined> {
    const run = this.#queue
      .then(() => this.#append(config, source, user, options))
      .catch((err: unknown) => {
        this.#logger.warn({ err, prefix: this.prefix }, 'cannot write the configuration history to etcd');
        return undefined;
      });
    this.#queue = run;
    return run;
  }

  async #append(
    config: GatewayConfig,
    source: HistorySource,
    user: string | null,
    options: { summary?: string | undefined; loadedAt?: string | undefined },
  ): Promise<HistoryEntry | undefined> {
    const sha256 = configSha256(config);
    for (let attempt = 1; attempt <= APPEND_ATTEMPTS; attempt++) {
      await this.#read();
      const newest = this.#entries.at(-1);
      if (newest?.sha256 === sha256 && source !== 'rollback') return newest;
      if (
        options.loadedAt !== undefined &&
        this.#indexRevision !== undefined &&
        BigInt(this.#indexRevision) > BigInt(options.loadedAt)
      )
        return undefined;
      let summary = options.summary;
      if (summary === undefined) {
        const previous = newest === undefined ? undefined : await this.#fetch(newest.version);
        summary =
          previous !== undefined
            ? summarizeChanges(diffConfigs(previous, config))
            : newest === undefined
              ? 'initial configuration'
              : `configuration loaded at ${source}`;
      }
      const prepared = this.#compose(config, sha256, source, user, summary);
      const result = await this.#client.txn(prepared.guards, prepared.ops);
      if (result.succeeded) {
        this.settle(prepared);
        return prepared.entry;
      }
    }
    throw new Error(`the history index kept changing (${APPEND_ATTEMPTS} tries)`);
  }

  async flushed(): Promise<void> {
    await this.#queue;
  }
}
