import { READS_FILE } from '../core/plugin.js';

/**
 * Whether a node's resolved config names a file its node reads when created: a value under a key
 * whose schema carries the READS_FILE annotation (src/core/plugin.ts). Only declared keys count,
 * so `health_check.active.path` (a URL path) or a logger's `path` (appended to, never read) do not
 * make a policy recompile on every reload (docs/configuration.md, the hot-reload paragraph).
 */
export function readsFiles(schema: unknown, config: unknown): boolean {
  return annotated(schema) && walk(schema, config, 0);
}

type Schema = Record<string, unknown>;

/** Nesting followed at most: node configs are shallow, this only bounds a recursive schema. */
const MAX_DEPTH = 32;

const BRANCHES = ['anyOf', 'oneOf', 'allOf'] as const;

/** Schema object → whether the annotation appears anywhere in it (most schemas: no walk at all). */
const hasAnnotation = new WeakMap<object, boolean>();

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function annotated(schema: unknown): boolean {
  if (!isSchema(schema)) return false;
  let known = hasAnnotation.get(schema);
  if (known === undefined) {
    known = JSON.stringify(schema).includes(`"${READS_FILE}":true`);
    hasAnnotation.set(schema, known);
  }
  return known;
}

function named(value: unknown): boolean {
  if (typeof value === 'string') return value !== '';
  return Array.isArray(value) && value.some((item) => typeof item === 'string' && item !== '');
}

function walk(schema: unknown, value: unknown, depth: number): boolean {
  if (!isSchema(schema) || depth > MAX_DEPTH || value === undefined || value === null) return false;
  if (schema[READS_FILE] === true && named(value)) return true;
  for (const key of BRANCHES) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.some((b) => walk(b, value, depth + 1))) return true;
  }
  for (const key of ['then', 'else'] as const) {
    if (walk(schema[key], value, depth + 1)) return true;
  }
  if (Array.isArray(value)) {
    const items = schema.items;
    const prefix = schema.prefixItems;
    return value.some(
      (item, i) =>
        walk(Array.isArray(prefix) ? prefix[i] : undefined, item, depth + 1) ||
        walk(Array.isArray(items) ? items[i] : items, item, depth + 1),
    );
  }
  if (typeof value !== 'object') return false;
  const properties = isSchema(schema.properties) ? schema.properties : undefined;
  const patterns = isSchema(schema.patternProperties) ? schema.patternProperties : undefined;
  for (const key in value) {
    const inner = (value as Record<string, unknown>)[key];
    let sub = properties?.[key];
    if (sub === undefined && patterns !== undefined) {
      for (const pattern in patterns) {
        if (safeTest(pattern, key)) {
          sub = patterns[pattern];
          break;
        }
      }
    }
    sub ??= schema.additionalProperties;
    if (walk(sub, inner, depth + 1)) return true;
  }
  return false;
}

function safeTest(pattern: string, key: string): boolean {
  try {
    return new RegExp(pattern, 'u').test(key);
  } catch {
    return false;
  }
}
