import type { SecretLookup } from './binding.js';
import { referencesWithPaths } from './reference.js';

/** Reference text and value, as the primary of `workers: N` sends them (docs/secrets.md#workers). */
export type SecretValues = [reference: string, value: string][];

/**
 * The values of every reference `config` holds, read from `lookup` (the primary's store):
 * what a worker needs to compile the configuration the primary compiled. Undefined without a
 * store, so a gateway without `secrets:` sends nothing more.
 */
export function secretValuesFor(config: unknown, lookup: SecretLookup | undefined): SecretValues | undefined {
  if (lookup === undefined) return undefined;
  const out = new Map<string, string>();
  for (const { reference } of referencesWithPaths(config)) {
    const value = lookup.value(reference.text);
    if (value !== undefined) out.set(reference.text, value);
  }
  return [...out];
}

/**
 * A worker's secret lookup: the values its primary resolved, replaced with each configuration the
 * primary sends. The worker never reads a manager itself (one login and one read per round for the
 * whole gateway, whatever `workers` is); `prepare` has nothing to do, as the primary read every
 * reference before it sent the configuration.
 */
export class RelayedSecrets implements SecretLookup {
  readonly #values = new Map<string, { value: string; changedAt: number }>();
  #version = 0;

  get version(): number {
    return this.#version;
  }

  /** Takes the values the primary sent with a configuration; the others are forgotten. */
  set(values: SecretValues): void {
    const next = new Map(values);
    for (const text of this.#values.keys()) if (!next.has(text)) this.#values.delete(text);
    for (const [text, value] of next) {
      const held = this.#values.get(text);
      if (held?.value === value) continue;
      this.#values.set(text, { value, changedAt: ++this.#version });
    }
  }

  value(reference: string): string | undefined {
    return this.#values.get(reference)?.value;
  }

  changedSince(version: number): string[] {
    if (version === this.#version) return [];
    const out: string[] = [];
    for (const [text, entry] of this.#values) if (entry.changedAt > version) out.push(text);
    return out;
  }

  prepare(): Promise<void> {
    return Promise.resolve();
  }
}
