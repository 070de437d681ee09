import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

// The gateway's own settings (src/config/schema-validate.ts), without defaults: the
// editor must not write default values into the stored config.
const ajv = new Ajv({
  allErrors: true,
  coerceTypes: true,
  strict: false,
  allowUnionTypes: true,
  logger: false,
});
const compiled = new WeakMap<object, ValidateFunction>();

/** The value at a JSON pointer below `root`. */
function at(root: unknown, pointer: string): unknown {
  let value = root;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
  }
  return value;
}

export interface FieldIssue {
  /** `config.targets.0.port`: the key path the message is about. */
  path: string;
  message: string;
}

function issueOf(e: ErrorObject): FieldIssue {
  const path = `config${e.instancePath.replace(/\//g, '.')}`;
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'additionalProperties')
    return { path: `${path}.${String(params.additionalProperty)}`, message: 'unknown key' };
  if (e.keyword === 'required')
    return { path: `${path}.${String(params.missingProperty)}`, message: 'is required' };
  if (e.keyword === 'enum') {
    const allowed = (params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ');
    return { path, message: `must be one of ${allowed}` };
  }
  return { path, message: e.message ?? 'is invalid' };
}

/**
 * Checks a node config against its plugin's JSON Schema; answers one issue per
 * problem. Strings holding `${ENV}` placeholders are only known at compile
 * time, and a `config_ref` node gets its missing keys from the shared config,
 * so neither is reported here (the gateway checks them on Validate and Save).
 */
export function checkConfigIssues(schema: object, config: unknown, hasConfigRef: boolean): FieldIssue[] {
  let validate = compiled.get(schema);
  if (validate === undefined) {
    try {
      validate = ajv.compile(schema);
    } catch {
      return []; // A schema the browser cannot compile: leave the check to the gateway.
    }
    compiled.set(schema, validate);
  }
  const value: unknown = structuredClone(config ?? {});
  if (validate(value)) return [];
  const problems = (validate.errors ?? []).filter((e) => {
    if (hasConfigRef && e.keyword === 'required') return false;
    // anyOf/oneOf report every branch; the summary line says enough.
    if (e.keyword === 'type' && /\/(anyOf|oneOf)\//.test(e.schemaPath)) return false;
    const v = at(config ?? {}, e.instancePath);
    return !(typeof v === 'string' && v.includes('${'));
  });
  const seen = new Set<string>();
  return problems.map(issueOf).filter((i) => {
    const key = `${i.path}: ${i.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The same check, one `path: message` line per problem. */
export function checkConfig(schema: object, config: unknown, hasConfigRef: boolean): string[] {
  return checkConfigIssues(schema, config, hasConfigRef).map((i) => `${i.path}: ${i.message}`);
}
