import type { Logger } from '../../core/logger.js';
import type { ConfigIssue } from '../schema-validate.js';
import type { SecretLookup } from './binding.js';
import { SecretError, pickField, type SecretManager } from './manager.js';
import { referencesWithPaths, secretReferences, type SecretReference } from './reference.js';

interface Entry {
  reference: SecretReference;
  value: string | undefined;
  /** Why the last read failed (safe to log), while it fails. */
  error: string | undefined;
  /** The store version at which the value last changed. */
  changedAt: number;
}

/**
 * The values of every `${secret:…}` the configuration uses (docs/secrets.md): read when first
 * seen, then again every `refresh_s` of their manager. A changed value bumps `version` and calls
 * `onChange`, which re-applies the configuration (the policies that use it are compiled again).
 * A manager that fails keeps the last values and logs one line per refresh round.
 */
export class SecretStore implements SecretLookup {
  readonly #managers: ReadonlyMap<string, SecretManager>;
  readonly #entries = new Map<string, Entry>();
  readonly #logger: Logger;
  readonly #timers: NodeJS.Timeout[] = [];
  /** Managers whose last round failed (their recovery is logged once). */
  readonly #failing = new Set<string>();
  #version = 0;
  #onChange: ((references: string[]) => void) | undefined;
  #inUse: (() => unknown) | undefined;

  constructor(managers: Iterable<SecretManager>, logger: Logger) {
    this.#managers = new Map([...managers].map((m) => [m.type, m]));
    this.#logger = logger;
  }

  get version(): number {
    return this.#version;
  }

  get managers(): string[] {
    return [...this.#managers.keys()];
  }

  value(reference: string): string | undefined {
    return this.#entries.get(reference)?.value;
  }

  /** Why a reference has no value (`undefined` when it has one). */
  problem(reference: SecretReference): string | undefined {
    if (!this.#managers.has(reference.manager))
      return `no manager '${reference.manager}' in system.yaml secrets (declared: ${this.managers.join(', ') || 'none'})`;
    const entry = this.#entries.get(reference.text);
    if (entry?.value !== undefined) return undefined;
    return entry?.error ?? 'not read yet';
  }

  changedSince(version: number): string[] {
    if (version === this.#version) return [];
    const out: string[] = [];
    for (const [text, entry] of this.#entries) if (entry.changedAt > version) out.push(text);
    return out;
  }

  /** Reads every reference of `config` (any JSON-like value or text) not read yet. */
  async prepare(config: unknown): Promise<void> {
    const found =
      typeof config === 'string'
        ? secretReferences(config)
        : referencesWithPaths(config).map((r) => r.reference);
    const fresh = found.filter((r) => !this.#entries.has(r.text) && this.#managers.has(r.manager));
    if (fresh.length === 0) return;
    for (const reference of fresh)
      this.#entries.set(reference.text, { reference, value: undefined, error: undefined, changedAt: 0 });
    await this.#read(fresh);
  }

  /**
   * Starts the refresh rounds; `onChange` is called after a round that changed any value.
   * `inUse`: the running configuration(s); a reference none of them holds any more (edited out,
   * or only in a refused write) is forgotten at the next round instead of being read forever.
   */
  start(onChange: (references: string[]) => void, inUse?: () => unknown): void {
    this.#onChange = onChange;
    this.#inUse = inUse;
    for (const manager of this.#managers.values()) {
      const timer = setInterval(() => void this.refresh(manager.type), manager.refreshMs);
      timer.unref();
      this.#timers.push(timer);
    }
  }

  /** One refresh round of a manager: every one of its references read again. */
  async refresh(type: string): Promise<string[]> {
    if (this.#inUse !== undefined) {
      const used = new Set(referencesWithPaths(this.#inUse()).map((r) => r.reference.text));
      for (const [text, entry] of this.#entries)
        if (entry.reference.manager === type && !used.has(text)) this.#entries.delete(text);
    }
    const references = [...this.#entries.values()].map((e) => e.reference).filter((r) => r.manager === type);
    if (references.length === 0) return [];
    const changed = await this.#read(references);
    if (changed.length > 0) {
      this.#logger.info({ manager: type, references: changed }, 'secret values changed; re-applying');
      this.#onChange?.(changed);
    }
    return changed;
  }

  /** Reads `references` (one load per manager path), stores the values; returns those that changed. */
  async #read(references: SecretReference[]): Promise<string[]> {
    const warming: Promise<void>[] = [];
    for (const type of new Set(references.map((r) => r.manager))) {
      const warm = this.#managers.get(type)?.warmUp?.();
      if (warm !== undefined) warming.push(warm.catch(() => undefined));
    }
    await Promise.all(warming);
    const documents = new Map<string, Promise<string | Record<string, unknown>>>();
    const changed: string[] = [];
    const failures = new Map<string, string[]>();
    await Promise.all(
      references.map(async (reference) => {
        const manager = this.#managers.get(reference.manager);
        const entry = this.#entries.get(reference.text);
        if (manager === undefined || entry === undefined) return;
        const key = `${reference.manager}\0${reference.path}`;
        let document = documents.get(key);
        if (document === undefined) {
          document = manager.load(reference.path);
          documents.set(key, document);
        }
        try {
          const value = pickField(await document, reference.field);
          entry.error = undefined;
          if (value !== entry.value) {
            const first = entry.value === undefined;
            entry.value = value;
            entry.changedAt = ++this.#version;
            if (!first) changed.push(reference.text);
          }
        } catch (err) {
          const message =
            err instanceof SecretError ? err.message : `${reference.manager}: ${(err as Error).name}`;
          entry.error = message;
          const list = failures.get(reference.manager) ?? [];
          list.push(`${reference.text}: ${message}`);
          failures.set(reference.manager, list);
        }
      }),
    );
    for (const type of new Set(references.map((r) => r.manager))) {
      const failed = failures.get(type);
      if (failed !== undefined) {
        // One line per round (the round runs once per refresh_s): the first error and a count.
        this.#logger.warn(
          { manager: type, failed: failed.length, error: failed[0] },
          'secret manager: cannot read; the last values are kept',
        );
        this.#failing.add(type);
      } else if (this.#failing.delete(type))
        this.#logger.info({ manager: type }, 'secret manager: reads again');
    }
    return changed;
  }

  close(): void {
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers.length = 0;
    for (const manager of this.#managers.values()) manager.close();
  }
}

/**
 * The references of a configuration that have no value, named by key path: a configuration that
 * still holds one is refused (the reference text would otherwise reach a node as a credential).
 */
export function unresolvedSecretIssues(
  config: unknown,
  lookup: SecretLookup | undefined,
  prefix = '',
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const { path, reference } of referencesWithPaths(config, prefix)) {
    if (lookup?.value(reference.text) !== undefined) continue;
    const why =
      lookup === undefined
        ? 'system.yaml declares no secrets managers'
        : lookup instanceof SecretStore
          ? lookup.problem(reference)
          : 'not resolved';
    issues.push({ path, message: `secret reference ${reference.text} cannot be resolved: ${why}` });
  }
  return issues;
}
