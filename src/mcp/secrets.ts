import { REDACTED, type Redaction } from '../debug/redaction.js';

/** A whole-value `${NAME}` placeholder names a secret without revealing it, so it is shown. */
const PLACEHOLDER = /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/;

/** Keys that contain a secret word but hold addresses, not secrets (`token_endpoint`, `jwks_uri`). */
const ADDRESS_KEY = /(_endpoint|_url|_uri|_path|_header|_header_name)$/;

/**
 * Masks secret-looking values in configuration shown to an agent. A key is
 * secret by the same rule debug traces use for message keys (`secret`,
 * `password`, `token`, `credential`, … plus `debug.redact_message_keys`);
 * every string under such a key becomes `<redacted>` (so the credential
 * kinds of a consumer stay visible, their values do not).
 */
export function maskSecrets<T>(value: T, redaction: Redaction): T {
  return walk(value, redaction, false) as T;
}

function walk(value: unknown, redaction: Redaction, secret: boolean): unknown {
  if (typeof value === 'string') return secret && !PLACEHOLDER.test(value) ? REDACTED : value;
  if (Array.isArray(value)) return value.map((v) => walk(v, redaction, secret));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    out[key] = walk(v, redaction, secret || isSecretKey(key, redaction));
  }
  return out;
}

const isSecretKey = (key: string, redaction: Redaction): boolean =>
  !ADDRESS_KEY.test(key.toLowerCase()) && redaction.messageKey(key);

/**
 * The inverse for writes: an agent that read a masked item and sends it back
 * must not overwrite the secret with the marker. Every `<redacted>` string is
 * replaced by the value at the same path of the stored item; a marker with
 * nothing stored behind it is returned in `missing` so the write can be refused.
 */
export function restoreSecrets(incoming: unknown, stored: unknown): { value: unknown; missing: string[] } {
  const missing: string[] = [];
  const value = restore(incoming, stored, '', missing);
  return { value, missing };
}

function restore(incoming: unknown, stored: unknown, path: string, missing: string[]): unknown {
  if (incoming === REDACTED) {
    if (typeof stored === 'string') return stored;
    missing.push(path === '' ? '(root)' : path);
    return incoming;
  }
  if (Array.isArray(incoming)) {
    const before = Array.isArray(stored) ? stored : [];
    return incoming.map((v, i) => restore(v, before[i], `${path}[${i}]`, missing));
  }
  if (incoming === null || typeof incoming !== 'object') return incoming;
  const before =
    stored !== null && typeof stored === 'object' && !Array.isArray(stored)
      ? (stored as Record<string, unknown>)
      : {};
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(incoming as Record<string, unknown>)) {
    out[key] = restore(v, before[key], path === '' ? key : `${path}.${key}`, missing);
  }
  return out;
}
