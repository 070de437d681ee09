import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';

/**
 * Validators the build generated ahead of time (scripts/build-validators.mjs writes
 * dist/validators/): compiling the system and gateway schemas with Ajv at startup costs hundreds
 * of milliseconds and tens of MiB of garbage, loading the generated code costs a few. A schema
 * is looked up by a digest of its JSON, so a schema that differs from the one the build saw is
 * simply compiled at run time. Running from the sources there is no such folder.
 */
const requireHere = createRequire(import.meta.url);
const INDEX = new URL('../validators/index.json', import.meta.url);
let available: ReadonlySet<string> | null | undefined;

/** The key of a schema: a digest of its JSON text. */
export function schemaKey(schema: object): string {
  return createHash('sha256').update(JSON.stringify(schema)).digest('hex').slice(0, 24);
}

/** The build's validator of `schema`, or undefined (then compile it). */
export function precompiledValidator(schema: object): ValidateFunction | undefined {
  if (available === undefined) {
    try {
      available = new Set(JSON.parse(readFileSync(INDEX, 'utf8')) as string[]);
    } catch {
      available = null;
    }
  }
  if (available === null) return undefined;
  const key = schemaKey(schema);
  if (!available.has(key)) return undefined;
  return requireHere(`../validators/${key}.cjs`) as ValidateFunction;
}
