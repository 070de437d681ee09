import { randomBytes } from 'node:crypto';
import { replaceSecretReferences } from './secrets/binding.js';

/**
 * `${NAME}` or `${NAME:-default}`, where the default may itself hold one level of placeholders, as
 * in a shell: `${UPSTREAM_PORT:-${GATEWAY_PORT:-8080}}`.
 */
const PLACEHOLDER =
  /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-((?:[^$}]|\$(?!\{)|\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\})*))?\}/g;
const INNER = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** A default with placeholders of its own, resolved against the same environment. */
function resolveDefault(fallback: string, env: NodeJS.ProcessEnv): string {
  if (!fallback.includes('${')) return fallback;
  return fallback.replace(INNER, (_match, name: string, inner: string | undefined) => {
    const value = env[name];
    if (inner !== undefined) return value === undefined || value === '' ? inner : value;
    return value ?? '';
  });
}

/**
 * `${NAME}` → value or '' and `${NAME:-default}` → value or default (docs/configuration.md#environment-interpolation).
 * Text that is not a well-formed placeholder is left alone; there is no escape. Then, unless
 * `secrets` is false, `${secret:…}` → the value of the environment's secret store (src/config/secrets/).
 */
export function interpolateEnv(
  text: string,
  env: NodeJS.ProcessEnv = process.env,
  keepUnset = false,
  secrets = true,
): string {
  if (!text.includes('${')) return text;
  const resolved = text.replace(PLACEHOLDER, (match, name: string, fallback: string | undefined) => {
    const value = env[name];
    if (fallback !== undefined)
      return value === undefined || value === '' ? resolveDefault(fallback, env) : value;
    if (value === undefined && keepUnset) return match;
    return value ?? '';
  });
  // `${secret:…}` after `${NAME}`: a secret's value is never read as placeholders (docs/secrets.md).
  return secrets ? replaceSecretReferences(resolved, env) : resolved;
}

/**
 * Applies `interpolateEnv` to every string leaf of a JSON-like value, returning a copy.
 * Node configs pass `keepUnset`: an unset `${name}` without default stays as written, so
 * the legacy `${uri}` / `${msg_key.x}` variables of templated fields survive to their own pass.
 */
export function interpolateLeaves<T>(value: T, env: NodeJS.ProcessEnv = process.env, keepUnset = false): T {
  if (typeof value === 'string') return interpolateEnv(value, env, keepUnset) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => interpolateLeaves(v, env, keepUnset)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolateLeaves(v, env, keepUnset);
    return out as T;
  }
  return value;
}

export function hasPlaceholder(text: string): boolean {
  PLACEHOLDER.lastIndex = 0;
  return PLACEHOLDER.test(text);
}

/** A placeholder of a text that resolved to empty: `${NAME}` unset or empty, or `${NAME:-}` with NAME unset. */
export interface EmptyPlaceholder {
  /** As written: `${OPS_PASSWORD}`. */
  source: string;
  name: string;
  /** Written with a default (`${NAME:-}`), i.e. the author allowed it to be empty. */
  hasDefault: boolean;
  /** The variable exists in the environment (with an empty value). */
  set: boolean;
}

export interface MarkedText {
  /** The text with every non-empty placeholder resolved and every empty one replaced by a marker. */
  text: string;
  empties: EmptyPlaceholder[];
  /** The placeholders (in `empties`) whose markers occur in `value`. */
  emptiesIn(value: string): EmptyPlaceholder[];
}

/**
 * Interpolates like `interpolateEnv`, but leaves a plain-scalar-safe marker
 * where a placeholder resolved to empty, so a parsed document can tell which
 * key an unset variable landed in (H3: an unset password variable must not
 * become an empty password).
 */
export function interpolateMarkingEmpty(text: string, env: NodeJS.ProcessEnv = process.env): MarkedText {
  const empties: EmptyPlaceholder[] = [];
  const tag = `__switchyard_empty_${randomBytes(6).toString('hex')}_`;
  const marked = text.replace(PLACEHOLDER, (match, name: string, fallback: string | undefined) => {
    const value = env[name];
    const resolved =
      fallback !== undefined
        ? value === undefined || value === ''
          ? resolveDefault(fallback, env)
          : value
        : (value ?? '');
    if (resolved !== '') return resolved;
    empties.push({ source: match, name, hasDefault: fallback !== undefined, set: value !== undefined });
    return `${tag}${empties.length - 1}__`;
  });
  const markers = new RegExp(`${tag}(\\d+)__`, 'g');
  return {
    text: marked,
    empties,
    emptiesIn: (value) =>
      [...value.matchAll(markers)].map((m) => empties[Number(m[1])]).filter((e) => e !== undefined),
  };
}
