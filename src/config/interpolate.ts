const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * `${NAME}` → value or '' and `${NAME:-default}` → value or default (COMPAT §2.1).
 * Text that is not a well-formed placeholder is left alone; there is no escape.
 */
export function interpolateEnv(
  text: string,
  env: NodeJS.ProcessEnv = process.env,
  keepUnset = false,
): string {
  if (!text.includes('${')) return text;
  return text.replace(PLACEHOLDER, (match, name: string, fallback: string | undefined) => {
    const value = env[name];
    if (fallback !== undefined) return value === undefined || value === '' ? fallback : value;
    if (value === undefined && keepUnset) return match;
    return value ?? '';
  });
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
