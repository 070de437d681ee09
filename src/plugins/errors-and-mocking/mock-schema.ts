/**
 * Turns a JSON Schema into a generator of sample documents, for `mocking`'s
 * `response_schema`. The schema is walked once at compile time; each call of
 * the returned function only builds values. A schema's `example`, `default`,
 * `const` or `enum` is used when present; other values are random within the
 * stated bounds, as APISIX's mocking plugin does.
 */

import { randomUUID } from 'node:crypto';

type Schema = Record<string, unknown>;
export type Generator = () => unknown;

/** A schema the generator cannot follow (unknown `$ref`, nesting too deep). */
export class MockSchemaError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
    this.name = 'MockSchemaError';
  }
}

const MAX_DEPTH = 32;
const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

const randomInt = (min: number, max: number): number => min + Math.floor(Math.random() * (max - min + 1));

export function compileMockSchema(schema: unknown): Generator {
  const root = isSchema(schema) ? schema : {};
  return compile(root, root, '', 0);
}

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function compile(schema: Schema, root: Schema, path: string, depth: number): Generator {
  if (depth > MAX_DEPTH) throw new MockSchemaError(path, 'is nested too deeply (recursive $ref?)');
  if (typeof schema.$ref === 'string')
    return compile(resolveRef(schema.$ref, root, path), root, path, depth + 1);

  const fixed = fixedValue(schema);
  if (fixed !== undefined) return () => structuredClone(fixed.value);
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    const choices: unknown[] = schema.enum;
    return () => structuredClone(choices[randomInt(0, choices.length - 1)]);
  }
  for (const key of ['oneOf', 'anyOf'] as const) {
    const first: unknown = Array.isArray(schema[key]) ? (schema[key] as unknown[])[0] : undefined;
    if (isSchema(first)) return compile({ ...withoutKey(schema, key), ...first }, root, path, depth + 1);
  }
  if (Array.isArray(schema.allOf)) {
    const merged = mergeAll(schema, schema.allOf);
    return compile(merged, root, path, depth + 1);
  }

  switch (typeOf(schema)) {
    case 'object':
      return objectGenerator(schema, root, path, depth);
    case 'array':
      return arrayGenerator(schema, root, path, depth);
    case 'integer':
      return numberGenerator(schema, true);
    case 'number':
      return numberGenerator(schema, false);
    case 'boolean':
      return () => Math.random() < 0.5;
    case 'null':
      return () => null;
    default:
      return stringGenerator(schema);
  }
}

function fixedValue(schema: Schema): { value: unknown } | undefined {
  if ('example' in schema) return { value: schema.example };
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return { value: schema.examples[0] };
  if ('const' in schema) return { value: schema.const };
  if ('default' in schema) return { value: schema.default };
  return undefined;
}

function typeOf(schema: Schema): string {
  const type = Array.isArray(schema.type)
    ? (schema.type as unknown[]).find((t) => t !== 'null')
    : schema.type;
  if (typeof type === 'string') return type;
  if (isSchema(schema.properties)) return 'object';
  if (schema.items !== undefined) return 'array';
  return 'string';
}

function resolveRef(ref: string, root: Schema, path: string): Schema {
  if (!ref.startsWith('#'))
    throw new MockSchemaError(path, `$ref '${ref}' must point inside the schema (#/…)`);
  let node: unknown = root;
  for (const raw of ref
    .slice(1)
    .split('/')
    .filter((s) => s !== '')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    node = isSchema(node) ? node[key] : undefined;
  }
  if (!isSchema(node)) throw new MockSchemaError(path, `$ref '${ref}' does not resolve to a schema`);
  return node;
}

function withoutKey(schema: Schema, key: string): Schema {
  const copy = { ...schema };
  delete copy[key];
  return copy;
}

function mergeAll(schema: Schema, parts: unknown[]): Schema {
  const merged: Schema = withoutKey(schema, 'allOf');
  const properties: Schema = isSchema(merged.properties) ? { ...merged.properties } : {};
  for (const part of parts) {
    if (!isSchema(part)) continue;
    if (isSchema(part.properties)) Object.assign(properties, part.properties);
    for (const [k, v] of Object.entries(part)) if (k !== 'properties' && !(k in merged)) merged[k] = v;
  }
  if (Object.keys(properties).length > 0) merged.properties = properties;
  return merged;
}

function objectGenerator(schema: Schema, root: Schema, path: string, depth: number): Generator {
  const props = isSchema(schema.properties) ? schema.properties : {};
  const fields: [string, Generator][] = Object.entries(props)
    .filter((entry): entry is [string, Schema] => isSchema(entry[1]))
    .map(([name, sub]) => [name, compile(sub, root, `${path}.${name}`, depth + 1)]);
  return () => {
    const out: Record<string, unknown> = {};
    for (const [name, generate] of fields) out[name] = generate();
    return out;
  };
}

function arrayGenerator(schema: Schema, root: Schema, path: string, depth: number): Generator {
  const items = isSchema(schema.items) ? schema.items : {};
  const item = compile(items, root, `${path}[]`, depth + 1);
  const min = typeof schema.minItems === 'number' ? schema.minItems : 1;
  const max = typeof schema.maxItems === 'number' ? schema.maxItems : Math.max(min, 3);
  return () => Array.from({ length: randomInt(min, Math.max(min, max)) }, item);
}

function numberGenerator(schema: Schema, integer: boolean): Generator {
  const num = (key: string): number | undefined =>
    typeof schema[key] === 'number' ? schema[key] : undefined;
  const exMin = num('exclusiveMinimum');
  const exMax = num('exclusiveMaximum');
  let min = num('minimum') ?? (exMin !== undefined ? exMin + (integer ? 1 : Number.EPSILON) : 0);
  let max = num('maximum') ?? (exMax !== undefined ? exMax - (integer ? 1 : Number.EPSILON) : min + 1000);
  if (max < min) [min, max] = [max, min];
  if (integer) {
    const lo = Math.ceil(min);
    const hi = Math.floor(max);
    return () => randomInt(lo, Math.max(lo, hi));
  }
  return () => min + Math.random() * (max - min);
}

const FORMATS: Record<string, () => string> = {
  'date-time': () => new Date().toISOString(),
  date: () => new Date().toISOString().slice(0, 10),
  time: () => new Date().toISOString().slice(11, 19),
  email: () => `${randomString(8, 8)}@example.com`,
  uri: () => `https://example.com/${randomString(8, 8)}`,
  url: () => `https://example.com/${randomString(8, 8)}`,
  hostname: () => `${randomString(8, 8).toLowerCase()}.example.com`,
  ipv4: () => `192.0.2.${randomInt(1, 254)}`,
  ipv6: () => `2001:db8::${randomInt(1, 0xffff).toString(16)}`,
  uuid: () => randomUUID(),
};

function stringGenerator(schema: Schema): Generator {
  const format = typeof schema.format === 'string' ? FORMATS[schema.format] : undefined;
  if (format !== undefined) return format;
  const min = typeof schema.minLength === 'number' ? schema.minLength : 1;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Math.max(min, 12);
  return () => randomString(min, Math.max(min, max));
}

function randomString(min: number, max: number): string {
  let out = '';
  for (let i = randomInt(min, max); i > 0; i--) out += ALNUM[randomInt(0, ALNUM.length - 1)];
  return out;
}
