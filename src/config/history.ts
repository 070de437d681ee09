import { AsyncLocalStorage } from 'node:async_hooks';
import { accessSync, constants, mkdirSync, readFileSync } from 'node:fs';
import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../core/logger.js';
import { canonicalConfig, configSha256 } from './canonical.js';
import { diffConfigs, summarizeChanges } from './config-diff.js';
import type { GatewayConfig } from './gateway.js';

/** Where a version came from (docs/config-as-code.md#history). */
export type HistorySource =
  'startup' | 'file' | 'signal' | 'admin' | 'mcp' | 'apply' | 'rollback' | 'etcd' | 'kubernetes' | 'secrets';

/** One entry of `GET /api/config/history`. */
export interface HistoryEntry {
  version: number;
  time: string;
  user: string | null;
  source: HistorySource;
  summary: string;
  sha256: string;
}

/** Who is applying, and through what: set around an Admin API or MCP call (see `asActor`). */
export interface Actor {
  user: string | null;
  /** Refines the apply source `admin`: the MCP tools, `PUT /api/config`, a rollback. */
  via?: 'mcp' | 'apply' | 'rollback';
  /** The summary of the version the apply makes (a rollback names its target); else a diff summary. */
  summary?: string;
}

/**
 * What the gateway and the Admin API use of a history: ConfigHistory (memory, or
 * gateway.yaml.history/) or EtcdConfigHistory (`<prefix>.history/` in etcd, shared by every
 * gateway on the prefix; docs/etcd.md#history).
 */
export interface HistoryLog {
  /** Newest first, as last read. */
  list(): HistoryEntry[];
  /** Newest first, read afresh from where the history is kept. */
  versions(): Promise<HistoryEntry[]>;
  /** The content of `version`, or undefined when it is unknown or no longer kept. */
  content(version: number): Promise<GatewayConfig | undefined>;
  /** Records `config` as a new version unless it equals the newest one (a rollback always does). */
  record(
    config: GatewayConfig,
    source: HistorySource,
    user: string | null,
    options?: { summary?: string | undefined; loadedAt?: string | undefined },
  ): HistoryEntry | Promise<HistoryEntry | undefined>;
  /** Resolves once every write so far is done. */
  flushed(): Promise<void>;
}

const actors = new AsyncLocalStorage<Actor>();

/** Runs `fn` with `actor` as the author of the applies it makes (an apply chained inside keeps it). */
export const asActor = <T>(actor: Actor, fn: () => T): T => actors.run(actor, fn);

/** The author of the apply running now, if an Admin API or MCP call set one. */
export const currentActor = (): Actor | undefined => actors.getStore();

export const DEFAULT_MAX_VERSIONS = 50;

/**
 * The versions of the applied configuration, newest last in memory, bounded by
 * `admin.history.max_versions`. With a directory (`gateway.yaml.history/` beside gateway.yaml),
 * `index.json` holds the entries and `v<N>.json` each version's canonical content, so the history
 * survives restarts; writes happen off the apply path, one after the other.
 */
export class ConfigHistory implements HistoryLog {
  readonly #dir: string | undefined;
  readonly #max: number;
  readonly #logger: Logger;
  #entries: HistoryEntry[] = [];
  /** Contents kept in memory when there is no directory (and the newest one always). */
  readonly #memory = new Map<number, GatewayConfig>();
  #last: GatewayConfig | undefined;
  #writing: Promise<void> = Promise.resolve();

  constructor(options: { dir?: string | undefined; maxVersions?: number | undefined; logger: Logger }) {
    this.#max = options.maxVersions ?? DEFAULT_MAX_VERSIONS;
    this.#logger = options.logger;
    this.#dir = options.dir === undefined ? undefined : this.#open(options.dir);
  }

  /** `dir` when it can be created and written (else the history is kept in memory only). */
  #open(dir: string): string | undefined {
    try {
      mkdirSync(dir, { recursive: true });
      accessSync(dir, constants.W_OK);
    } catch (err) {
      this.#logger.warn(
        { err, dir },
        'cannot write the configuration history there; it is kept in memory only',
      );
      return undefined;
    }
    try {
      const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as unknown;
      if (Array.isArray(index)) this.#entries = (index as HistoryEntry[]).slice(-this.#max);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.#logger.warn({ err, dir }, 'cannot read the configuration history; starting a new one');
    }
    return dir;
  }

  /** Newest first. */
  list(): HistoryEntry[] {
    return [...this.#entries].reverse();
  }

  versions(): Promise<HistoryEntry[]> {
    return Promise.resolve(this.list());
  }

  get newest(): HistoryEntry | undefined {
    return this.#entries.at(-1);
  }

  entry(version: number): HistoryEntry | undefined {
    return this.#entries.find((e) => e.version === version);
  }

  /** The content of `version`, or undefined when it is unknown or no longer kept. */
  async content(version: number): Promise<GatewayConfig | undefined> {
    if (this.entry(version) === undefined) return undefined;
    const held = this.#memory.get(version);
    if (held !== undefined) return held;
    if (this.#dir === undefined) return undefined;
    await this.#writing;
    try {
      return JSON.parse(await readFile(join(this.#dir, `v${version}.json`), 'utf8')) as GatewayConfig;
    } catch {
      return undefined;
    }
  }

  /**
   * Records `config` as a new version, unless it equals the newest one (a restart, or a reload
   * of the same content); a rollback always makes a version. Answers the entry (new or newest).
   */
  record(
    config: GatewayConfig,
    source: HistorySource,
    user: string | null,
    options: { summary?: string | undefined } = {},
  ): HistoryEntry {
    const sha256 = configSha256(config);
    const newest = this.newest;
    if (newest !== undefined && newest.sha256 === sha256 && source !== 'rollback') {
      this.#last = config;
      return newest;
    }
    const previous = this.#last;
    const summary =
      options.summary ??
      (previous === undefined
        ? newest === undefined
          ? 'initial configuration'
          : `configuration loaded at ${source}`
        : summarizeChanges(diffConfigs(previous, config)));
    const entry: HistoryEntry = {
      version: (newest?.version ?? 0) + 1,
      time: new Date().toISOString(),
      user,
      source,
      summary,
      sha256,
    };
    this.#entries.push(entry);
    const dropped = this.#entries.splice(0, Math.max(0, this.#entries.length - this.#max));
    this.#last = config;
    if (this.#dir === undefined) {
      this.#memory.set(entry.version, config);
      for (const old of dropped) this.#memory.delete(old.version);
    } else this.#persist(entry, config, dropped);
    return entry;
  }

  #persist(
    entry: HistoryEntry | undefined,
    config: GatewayConfig | undefined,
    dropped: HistoryEntry[],
  ): void {
    const dir = this.#dir as string;
    const index = JSON.stringify(this.#entries);
    const body = config === undefined ? undefined : JSON.stringify(canonicalConfig(config));
    this.#writing = this.#writing
      .then(async () => {
        if (entry !== undefined && body !== undefined)
          await atomicWrite(join(dir, `v${entry.version}.json`), body);
        await atomicWrite(join(dir, 'index.json'), index);
        for (const old of dropped) await unlink(join(dir, `v${old.version}.json`)).catch(() => undefined);
      })
      .catch((err: unknown) => {
        this.#logger.warn({ err, dir }, 'cannot write the configuration history');
      });
  }

  /** Resolves once every write so far is on disk. */
  flushed(): Promise<void> {
    return this.#writing;
  }
}

async function atomicWrite(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, path);
}
