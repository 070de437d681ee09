import { SECRET_REFERENCE, mentionsSecret } from './reference.js';

/** What interpolation asks of the secret store: the current value of a reference, by its text. */
export interface SecretLookup {
  /** The value of `${secret:…}` as written, or undefined while it has never resolved. */
  value(reference: string): string | undefined;
  /** Bumped each time a value changes (compiled policies that used an older one are stale). */
  readonly version: number;
  /** References whose value changed after `version` (see `version`). */
  changedSince(version: number): string[];
  /** Resolves the references of a configuration not resolved yet (an Admin write adding one). */
  prepare(config: unknown): Promise<void>;
}

/**
 * The secret store of an environment. A gateway interpolates its configuration against one
 * environment object (`process.env` for the CLI); the store is attached to that object, so code
 * that interpolates with another environment (a test, `migrate`) sees no secrets.
 */
const stores = new WeakMap<object, SecretLookup>();

export function bindSecrets(env: NodeJS.ProcessEnv, lookup: SecretLookup | undefined): void {
  if (lookup === undefined) stores.delete(env);
  else stores.set(env, lookup);
}

export function secretsOf(env: NodeJS.ProcessEnv): SecretLookup | undefined {
  return stores.get(env);
}

/**
 * `text` with every resolved `${secret:…}` replaced by its value. An unresolved reference stays
 * as written: the compiler refuses any configuration that still holds one (`unresolvedSecretIssues`),
 * so the reference text never reaches a node as a credential.
 */
export function replaceSecretReferences(text: string, env: NodeJS.ProcessEnv): string {
  if (!mentionsSecret(text)) return text;
  const lookup = stores.get(env);
  if (lookup === undefined) return text;
  return text.replace(SECRET_REFERENCE, (match) => lookup.value(match) ?? match);
}

/**
 * For the compiler's reuse of unchanged policies on a reload: undefined when no value changed
 * since `version`, else the references whose value did (a policy mentioning one is compiled again).
 */
export function changedSecretReferences(
  env: NodeJS.ProcessEnv,
  version: number | undefined,
): string[] | undefined {
  const lookup = stores.get(env);
  if (lookup === undefined || version === undefined) return undefined;
  const changed = lookup.changedSince(version);
  return changed.length === 0 ? undefined : changed;
}

/** Whether a JSON-like value mentions any of `references` (they hold no character JSON escapes). */
export function mentionsAny(value: unknown, references: readonly string[]): boolean {
  const text = JSON.stringify(value) ?? '';
  return references.some((r) => text.includes(r));
}
