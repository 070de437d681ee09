/**
 * JSON-Schema validators for request-validation and oas-validator: one Ajv
 * instance per node (so `$id`s of different nodes never collide and a
 * retired runtime frees its validators), compiled in `create`.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ConfigError } from '../../core/plugin.js';
import { compileRegex } from '../../conditions/regex.js';

export type { ValidateFunction };

type Validator = Pick<Ajv, 'compile' | 'errorsText' | 'addFormat'>;

const DATE = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])$/;
const TIME = /^(?:[01]\d|2[0-3]):[0-5]\d:(?:[0-5]\d|60)(?:\.\d+)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const HOSTNAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The formats of JSON Schema and OpenAPI worth checking; the rest (binary, password, …) always pass. */
function addFormats(ajv: Validator): void {
  ajv.addFormat('date', DATE);
  ajv.addFormat('time', TIME);
  ajv.addFormat('date-time', (s: string) => {
    const t = s.search(/[Tt ]/);
    return (
      t !== -1 && DATE.test(s.slice(0, t)) && TIME.test(s.slice(t + 1)) && /[Zz]|[+-]\d\d:?\d\d$/.test(s)
    );
  });
  ajv.addFormat('email', EMAIL);
  ajv.addFormat('uuid', UUID);
  ajv.addFormat('hostname', HOSTNAME);
  ajv.addFormat('ipv4', (s: string) => isIPv4(s));
  ajv.addFormat('ipv6', (s: string) => isIPv6(s));
  ajv.addFormat('uri', (s: string) => URL.canParse(s));
  ajv.addFormat('byte', BASE64);
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
  });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  for (const name of ['float', 'double', 'binary', 'password', 'uri-reference', 'regex'])
    ajv.addFormat(name, true);
}

/**
 * A validator factory. `coerce` turns strings into the schema's scalar types
 * (headers, query and path parameters arrive as text); `dialect: '2020'` is
 * for OpenAPI 3.1 documents.
 */
export function schemaCompiler(options: { coerce?: boolean; dialect?: '07' | '2020' } = {}): Validator {
  const settings: Options = {
    strict: false,
    allErrors: false,
    logger: false,
    // `pattern` and `patternProperties` are config regexes matched against request data.
    code: {
      regExp: Object.assign((source: string) => compileRegex(source, 'pattern'), { code: 'compileRegex' }),
    },
    ...(options.coerce === true ? { coerceTypes: 'array' as const } : {}),
  };
  const ajv = options.dialect === '2020' ? new Ajv2020(settings) : new Ajv(settings);
  addFormats(ajv);
  return ajv;
}

/** Compiles `schema`, rejecting it at `key` when it is not a valid JSON Schema. */
export function compileSchema(ajv: Validator, schema: unknown, key: string): ValidateFunction {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new ConfigError(key, 'must be a JSON Schema object');
  }
  let document = schema as Record<string, unknown>;
  // Draft-04..07 documents (APISIX's are draft-04) validate fine under the draft-07 vocabulary.
  if (typeof document.$schema === 'string' && /json-schema\.org\/draft-0[4-7]/.test(document.$schema)) {
    const { $schema: _ignored, ...rest } = document;
    document = rest;
  }
  try {
    return ajv.compile(document);
  } catch (err) {
    throw new ConfigError(
      key,
      `is not a valid JSON Schema: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/** One line describing why validation failed, e.g. `body/name must be string`. */
export function describeErrors(
  ajv: Validator,
  errors: ErrorObject[] | null | undefined,
  dataVar: string,
): string {
  return ajv.errorsText(errors, { dataVar, separator: '; ' });
}
