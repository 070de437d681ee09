import { createHash } from 'node:crypto';
import type { GatewayConfig } from './gateway.js';

/**
 * The canonical form of a gateway configuration (docs/config-as-code.md): the sections in a fixed
 * order, every mapping's keys in a fixed order (a few identifying keys first, the rest sorted),
 * list order kept (it means something: routes of equal priority, nodes, global rules). Two
 * configurations that differ only by key order, flow style or comments have the same canonical
 * form, so the same dump and the same sha256.
 */
export const SECTIONS = [
  'routes',
  'policies',
  'supernodes',
  'plugin_configs',
  'stores',
  'consumers',
  'global_rules',
  'tests',
] as const;

/** Keys written before the others, in this order, wherever they appear. */
const FIRST_KEYS = ['name', 'id', 'type', 'from', 'to', 'match', 'policy', 'supernode'];

function keyOrder(a: string, b: string): number {
  const ia = FIRST_KEYS.indexOf(a);
  const ib = FIRST_KEYS.indexOf(b);
  if (ia !== -1 || ib !== -1)
    return (ia === -1 ? FIRST_KEYS.length : ia) - (ib === -1 ? FIRST_KEYS.length : ib);
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `value` with every mapping's keys in the canonical order (undefined values dropped). */
export function canonicalValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonicalValue);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort(keyOrder)) {
    const item = (value as Record<string, unknown>)[key];
    if (item !== undefined) out[key] = canonicalValue(item);
  }
  return out;
}

/** The whole configuration in canonical form: known sections first (empty ones dropped), then any other key. */
export function canonicalConfig(config: GatewayConfig): Record<string, unknown> {
  const source = config as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  const known: readonly string[] = SECTIONS;
  for (const section of SECTIONS) {
    const value = source[section];
    if (Array.isArray(value) && value.length === 0) continue;
    if (value !== undefined) out[section] = canonicalValue(value);
  }
  for (const key of Object.keys(source).sort()) {
    if (!known.includes(key) && source[key] !== undefined) out[key] = canonicalValue(source[key]);
  }
  return out;
}

const digests = new WeakMap<object, string>();

/** sha256 (hex) of the canonical JSON of `config`; cached per object (applied configs are never changed in place). */
export function configSha256(config: GatewayConfig): string {
  let digest = digests.get(config);
  if (digest === undefined) {
    digest = createHash('sha256')
      .update(JSON.stringify(canonicalConfig(config)))
      .digest('hex');
    digests.set(config, digest);
  }
  return digest;
}
