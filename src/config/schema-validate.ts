import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, Options, ValidateFunction } from 'ajv';
import { precompiledValidator } from './precompiled-validators.js';

/** One configuration problem, located by a dotted path such as `policies[0].nodes[2].config.port`. */
export interface ConfigIssue {
  path: string;
  message: string;
  /** 1-based position in the source file, when known (YAML syntax errors; see yaml-locate.ts). */
  line?: number;
  column?: number;
}

/** Options of every validator, also those the build precompiles (scripts/build-validators.mjs). */
export const AJV_OPTIONS: Options = {
  allErrors: true,
  useDefaults: true,
  coerceTypes: true,
  strict: false,
  allowUnionTypes: true,
};

let ajv: Ajv | undefined;

/** Ajv's compiler loads for the first schema the build did not precompile (docs/deployment.md). */
function compiler(): Ajv {
  if (ajv === undefined) {
    const { Ajv: AjvClass } = createRequire(import.meta.url)('ajv') as { Ajv: typeof Ajv };
    ajv = new AjvClass(AJV_OPTIONS);
  }
  return ajv;
}

const cache = new WeakMap<object, ValidateFunction>();

/**
 * Compiles (once per schema object) and runs a JSON Schema; defaults and coercions mutate `value`.
 * With `suggestKeys`, an unknown key near a declared one (`suggestion`) says
 * `unknown key (did you mean 'x'?)`.
 */
export function validateAgainst(
  schema: object,
  value: unknown,
  basePath: string,
  options: { suggestKeys?: boolean } = {},
): ConfigIssue[] {
  let validate = cache.get(schema);
  if (validate === undefined) {
    validate = precompiledValidator(schema) ?? compiler().compile(schema);
    cache.set(schema, validate);
  }
  if (validate(value)) return [];
  // `propertyNames` only restates the failure of its subschema, which names the key.
  const errors = (validate.errors ?? []).filter((e) => e.keyword !== 'propertyNames');
  return dedupe(
    errors.map((e) => {
      const issue = toIssue(e, basePath);
      if (options.suggestKeys !== true || e.keyword !== 'additionalProperties') return issue;
      const near = suggestion(
        String((e.params as Record<string, unknown>).additionalProperty),
        declaredKeys(schema, e),
      );
      return near === undefined ? issue : { ...issue, message: `unknown key (did you mean '${near}'?)` };
    }),
  );
}

/** The property names of the (sub)schema an `additionalProperties` error came from. */
function declaredKeys(schema: object, error: ErrorObject): string[] {
  // schemaPath is `#/…/additionalProperties`; its parent is the object schema.
  const segments = error.schemaPath.replace(/^#\/?/, '').split('/').slice(0, -1);
  let at: unknown = schema;
  for (const raw of segments) {
    if (raw === '' || typeof at !== 'object' || at === null) continue;
    at = (at as Record<string, unknown>)[raw.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  const properties = (at as { properties?: unknown } | undefined)?.properties;
  return typeof properties === 'object' && properties !== null ? Object.keys(properties) : [];
}

/** The declared key nearest to `key` within edit distance 2 (ties: the first declared). */
export function nearestKey(key: string, declared: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of declared) {
    const d = levenshtein(key, candidate, bestDistance);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/**
 * The one suggester of every "did you mean" (node types, policies, config and document keys,
 * stores, ports, node ids): the candidate within edit distance 2 of `name` (also with `_` read as
 * `-`), else one that `name` extends or truncates (`mocking-typo`, `limit`, `header` for
 * `header_name`), else the one that shares all of `name` but its last character (`deny` for
 * `denied`), else undefined.
 */
export function suggestion(name: string, candidates: Iterable<string>): string | undefined {
  const list = [...candidates];
  return (
    nearestKey(name, list) ??
    nearestKey(name.replace(/_/g, '-'), list) ??
    list
      .filter((c) => c.length >= 4 && (name.startsWith(c) || (name.length >= 4 && c.startsWith(name))))
      .sort((a, b) => Math.abs(a.length - name.length) - Math.abs(b.length - name.length))[0] ??
    sharedStem(name, list)
  );
}

/** The one candidate sharing all but the last character of `name` (at least 3): `deny` → `denied`. */
function sharedStem(name: string, list: readonly string[]): string | undefined {
  if (name.length < 4) return undefined;
  const stem = name.slice(0, -1);
  const found = list.filter((c) => c.startsWith(stem));
  return found.length === 1 ? found[0] : undefined;
}

/** ` (did you mean 'x'?)` for the `suggestion` of `name`, or `''` when none is close. */
export function didYouMean(name: string, candidates: Iterable<string>): string {
  const near = suggestion(name, candidates);
  return near === undefined ? '' : ` (did you mean '${near}'?)`;
}

/** Edit distance, giving up (returning `limit`) once every row exceeds it. */
function levenshtein(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) >= limit) return limit;
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const v = Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      row.push(v);
      rowMin = Math.min(rowMin, v);
    }
    if (rowMin >= limit) return limit;
    previous = row;
  }
  return Math.min(previous[b.length] ?? limit, limit);
}

export function joinPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(key)) return `${base}[${JSON.stringify(key)}]`;
  return base === '' ? key : `${base}.${key}`;
}

/** `/nodes/2/config` → `nodes[2].config` appended to `base`. */
export function pointerToPath(base: string, pointer: string): string {
  let path = base;
  if (pointer === '') return path;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path = /^\d+$/.test(key) ? joinPath(path, Number(key)) : joinPath(path, key);
  }
  return path;
}

function toIssue(error: ErrorObject, basePath: string): ConfigIssue {
  const at = pointerToPath(basePath, error.instancePath);
  const params = error.params as Record<string, unknown>;
  // A key failing `propertyNames`: say which key (`key "bad header" is not a valid name`).
  if (error.propertyName !== undefined) {
    const rule = typeof params.pattern === 'string' ? ` (must match ${params.pattern})` : '';
    return { path: at, message: `key ${JSON.stringify(error.propertyName)} is not a valid name${rule}` };
  }
  switch (error.keyword) {
    case 'additionalProperties':
      return { path: joinPath(at, String(params.additionalProperty)), message: 'unknown key' };
    case 'required':
      return { path: joinPath(at, String(params.missingProperty)), message: 'is required' };
    case 'enum':
      return {
        path: at,
        message: `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
      };
    default:
      return { path: at, message: error.message ?? 'is invalid' };
  }
}

function dedupe(issues: ConfigIssue[]): ConfigIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => {
    const key = `${i.path}\u0000${i.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

export function formatIssues(issues: readonly ConfigIssue[]): string {
  return issues
    .map((i) => {
      const at = i.line === undefined ? '' : `line ${i.line}, column ${i.column ?? 1}: `;
      return i.path === '' ? at + i.message : `${at}${i.path}: ${i.message}`;
    })
    .join('\n');
}

/**
 * A YAML syntax error as one issue at its line and column: the yaml library's
 * message without its location suffix and source excerpt, which the caller prints as `file:line:col`.
 */
export function yamlSyntaxIssue(err: unknown): ConfigIssue {
  const e = err as { message?: string; linePos?: [{ line: number; col: number }, ...unknown[]] };
  const lines = (e.message ?? String(err)).split('\n');
  const first = lines[0] ?? '';
  // The library's excerpt (the third line) is the offending line: a bare `${` in a flow
  // collection is the common cause (`{ key: ${API_KEY} }`, F9).
  const hint = /[{[][^}\]]*\$\{/.test(lines[2] ?? '')
    ? ' (quote values containing ${…} inside { } or [ ]: "${NAME}")'
    : '';
  const message = `invalid YAML: ${first.replace(/ at line \d+, column \d+:?$/, '')}${hint}`;
  const at = e.linePos?.[0];
  return at === undefined ? { path: '', message } : { path: '', message, line: at.line, column: at.col };
}

/** Thrown by loaders and the compiler: a rejected configuration with every problem found. */
export class ConfigRejected extends Error {
  constructor(readonly issues: ConfigIssue[]) {
    super(formatIssues(issues));
    this.name = 'ConfigRejected';
  }
}
