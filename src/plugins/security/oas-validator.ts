import { parse as parseYaml } from 'yaml';
import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { compileRegex, type ConfigRegex } from '../../conditions/regex.js';
import { compileSchema, describeErrors, schemaCompiler, type ValidateFunction } from './json-schema.js';
import { FORM_TYPE, formDocument, isJsonType, mediaType } from './request-documents.js';
import { RESTRICTION_OUTPUTS } from '../auth/shared.js';

type Json = Record<string, unknown>;
type Validator = ReturnType<typeof schemaCompiler>;
type Location = 'path' | 'query' | 'header' | 'cookie';

interface Parameter {
  name: string;
  in: Location;
  required: boolean;
  /** Comma-separated list form (path/header `simple`, query `explode: false`). */
  splitsList: boolean;
  /** Validates `{v: value}`, so coercion can rewrite the value in place. */
  check: ValidateFunction | undefined;
}

interface Media {
  type: string;
  kind: 'json' | 'form' | 'other';
  check: ValidateFunction | undefined;
}

interface Operation {
  parameters: Parameter[];
  bodyRequired: boolean;
  /** Empty when the operation declares no request body content. */
  media: Media[];
}

interface PathTemplate {
  pattern: ConfigRegex;
  names: string[];
  /** Literal characters: concrete paths are tried before templated ones. */
  score: number;
  operations: Map<string, Operation>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const LOCATIONS = new Set<Location>(['path', 'query', 'header', 'cookie']);
/** OpenAPI: header parameters with these names are ignored. */
const RESERVED_HEADERS = new Set(['accept', 'content-type', 'authorization']);

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Compiles an OpenAPI 3 document into path matchers and per-operation validators, once at load. */
class SpecCompiler {
  readonly #spec: Json;
  readonly #components: unknown;
  readonly #plain: Validator;
  readonly #coercing: Validator;

  constructor(spec: Json, plain: Validator, coercing: Validator) {
    this.#spec = spec;
    this.#components = spec.components;
    this.#plain = plain;
    this.#coercing = coercing;
  }

  /** Follows local `$ref`s (`#/components/...`); other references are a load error. */
  resolve(value: unknown, key: string): unknown {
    let current = value;
    for (let hops = 0; isObject(current) && typeof current.$ref === 'string'; hops++) {
      const ref = current.$ref;
      if (hops > 16) throw new ConfigError(key, `has a reference cycle at '${ref}'`);
      if (!ref.startsWith('#/'))
        throw new ConfigError(`${key}.$ref`, `only local references (#/…) are supported: '${ref}'`);
      let target: unknown = this.#spec;
      for (const raw of ref.slice(2).split('/')) {
        const part = raw.replaceAll('~1', '/').replaceAll('~0', '~');
        target = isObject(target) ? target[part] : undefined;
      }
      if (target === undefined) throw new ConfigError(`${key}.$ref`, `does not resolve: '${ref}'`);
      current = target;
    }
    return current;
  }

  /** The schema with the document's components beside it, so `#/components/...` refs resolve. */
  #compile(ajv: Validator, schema: unknown, key: string, wrapValue: boolean): ValidateFunction {
    const root: Json = wrapValue ? { type: 'object', properties: { v: schema } } : { allOf: [schema] };
    if (this.#components !== undefined) root.components = this.#components;
    return compileSchema(ajv, root, key);
  }

  parameter(raw: unknown, key: string): Parameter {
    const param = this.resolve(raw, key);
    if (!isObject(param)) throw new ConfigError(key, 'must be a Parameter Object');
    const name = param.name;
    const location = param.in;
    if (typeof name !== 'string' || name === '')
      throw new ConfigError(`${key}.name`, 'must be a non-empty string');
    if (typeof location !== 'string' || !LOCATIONS.has(location as Location)) {
      throw new ConfigError(`${key}.in`, 'must be one of path, query, header, cookie');
    }
    let schema: unknown = param.schema;
    if (schema === undefined && isObject(param.content)) {
      schema = Object.values(param.content).map((m) => (isObject(m) ? m.schema : undefined))[0];
    }
    const resolved = this.resolve(schema, `${key}.schema`);
    const isArray = isObject(resolved) && resolved.type === 'array';
    const explode = param.explode ?? (location === 'query' || location === 'cookie');
    return {
      name: location === 'header' ? name.toLowerCase() : name,
      in: location as Location,
      required: location === 'path' || param.required === true,
      splitsList: isArray && (location === 'path' || location === 'header' || explode === false),
      check: schema === undefined ? undefined : this.#compile(this.#coercing, schema, `${key}.schema`, true),
    };
  }

  operation(pathItem: Json, op: Json, key: string, pathKey: string): Operation {
    const byId = new Map<string, Parameter>();
    const lists: [unknown, string][] = [
      [pathItem.parameters, `${pathKey}.parameters`],
      [op.parameters, `${key}.parameters`],
    ];
    for (const [list, listKey] of lists) {
      if (list === undefined) continue;
      if (!Array.isArray(list)) throw new ConfigError(listKey, 'must be an array');
      list.forEach((raw, i) => {
        const p = this.parameter(raw, `${listKey}[${i}]`);
        if (p.in === 'header' && RESERVED_HEADERS.has(p.name)) return;
        byId.set(`${p.in}:${p.name}`, p);
      });
    }
    let bodyRequired = false;
    const media: Media[] = [];
    if (op.requestBody !== undefined) {
      const body = this.resolve(op.requestBody, `${key}.requestBody`);
      if (!isObject(body)) throw new ConfigError(`${key}.requestBody`, 'must be a Request Body Object');
      bodyRequired = body.required === true;
      if (body.content !== undefined && !isObject(body.content)) {
        throw new ConfigError(`${key}.requestBody.content`, 'must be a map of media types');
      }
      for (const [type, entry] of Object.entries(body.content ?? {})) {
        const lower = type.toLowerCase();
        const kind = isJsonType(lower) ? 'json' : lower === FORM_TYPE ? 'form' : 'other';
        const schema = isObject(entry) ? entry.schema : undefined;
        const schemaKey = `${key}.requestBody.content.${type}.schema`;
        const check =
          schema === undefined || kind === 'other'
            ? undefined
            : this.#compile(kind === 'form' ? this.#coercing : this.#plain, schema, schemaKey, false);
        media.push({ type: lower, kind, check });
      }
    }
    return { parameters: [...byId.values()], bodyRequired, media };
  }

  paths(): PathTemplate[] {
    const paths = this.#spec.paths;
    if (!isObject(paths)) throw new ConfigError('spec.paths', 'must be an object of path templates');
    const out: PathTemplate[] = [];
    for (const [template, rawItem] of Object.entries(paths)) {
      const pathKey = `spec.paths.${template}`;
      if (!template.startsWith('/')) throw new ConfigError(pathKey, 'must start with /');
      const item = this.resolve(rawItem, pathKey);
      if (!isObject(item)) throw new ConfigError(pathKey, 'must be a Path Item Object');
      const names: string[] = [];
      let score = 0;
      const source = template.replace(/\{([^}/]+)\}|[^{]+/g, (text, name: string | undefined) => {
        if (name !== undefined) {
          names.push(name);
          return '([^/]+)';
        }
        score += text.length;
        return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      });
      const operations = new Map<string, Operation>();
      for (const method of METHODS) {
        const op = item[method];
        if (op === undefined) continue;
        if (!isObject(op)) throw new ConfigError(`${pathKey}.${method}`, 'must be an Operation Object');
        operations.set(method.toUpperCase(), this.operation(item, op, `${pathKey}.${method}`, pathKey));
      }
      out.push({ pattern: compileRegex(`^${source}$`, pathKey), names, score, operations });
    }
    return out.sort((a, b) => b.score - a.score || a.names.length - b.names.length);
  }
}

/** Path prefixes of `servers[].url` (variables replaced by their defaults); '' is always tried. */
function basePaths(spec: Json): string[] {
  const out = new Set<string>(['']);
  if (!Array.isArray(spec.servers)) return [...out];
  for (const server of spec.servers) {
    if (!isObject(server) || typeof server.url !== 'string') continue;
    const vars = isObject(server.variables) ? server.variables : {};
    const url = server.url.replace(/\{([^}]+)\}/g, (_m, name: string) => {
      const v = vars[name];
      return isObject(v) && typeof v.default === 'string' ? v.default : '';
    });
    try {
      const path = new URL(url, 'http://base.invalid').pathname.replace(/\/+$/, '');
      if (path !== '') out.add(path);
    } catch {
      // An unparseable server URL contributes no base path.
    }
  }
  return [...out].sort((a, b) => b.length - a.length);
}

function loadSpec(raw: Json | string): Json {
  let spec: unknown = raw;
  if (typeof raw === 'string') {
    try {
      spec = parseYaml(raw);
    } catch (err) {
      throw new ConfigError('spec', `is not a valid JSON or YAML document: ${(err as Error).message}`);
    }
  }
  if (!isObject(spec)) throw new ConfigError('spec', 'must be an OpenAPI 3 document (an object)');
  if (typeof spec.openapi !== 'string' || !/^3\.\d+/.test(spec.openapi)) {
    throw new ConfigError('spec.openapi', 'must name an OpenAPI 3.x version (e.g. "3.0.3")');
  }
  return spec;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * Validates requests against an inline OpenAPI 3 document: path, query,
 * header and cookie parameters and the request body of the matched
 * operation. A request no operation describes passes untouched.
 */
export const oasValidator = definePlugin({
  type: 'oas-validator',
  category: 'security',
  description:
    'Validate requests (path, query, headers, cookies, body) against an inline OpenAPI 3 document.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['spec'],
    properties: {
      spec: {
        type: ['object', 'string'],
        description: 'The OpenAPI 3.0/3.1 document, inline (an object, or JSON/YAML text). Never templated.',
      },
      rejected_code: {
        type: 'integer',
        minimum: 400,
        maximum: 599,
        default: 400,
        description: 'Denial status.',
      },
      rejected_msg: {
        type: 'string',
        description: "Fixed denial message (templated) instead of the validator's detail.",
      },
    },
  },
  outputs: RESTRICTION_OUTPUTS,
  templated: ['rejected_msg'],
  readsResponseBody: () => false,
  create(config, env) {
    const spec = loadSpec(config.spec);
    const dialect = (spec.openapi as string).startsWith('3.0') ? '07' : '2020';
    const plain = schemaCompiler({ dialect });
    const coercing = schemaCompiler({ dialect, coerce: true });
    const templates = new SpecCompiler(spec, plain, coercing).paths();
    const bases = basePaths(spec);
    const status = config.rejected_code;
    const fixed =
      config.rejected_msg === undefined ? undefined : env.template(config.rejected_msg, 'rejected_msg');

    const deny = (ctx: Context, detail: string): 'denied' => {
      ctx.response.json(status, { error: 'oas_validation_failed', message: fixed?.render(ctx) ?? detail });
      return 'denied';
    };

    const match = (ctx: Context): { op: Operation; template: PathTemplate; groups: string[] } | undefined => {
      const path = ctx.request.path;
      for (const base of bases) {
        if (base !== '' && path !== base && !path.startsWith(`${base}/`)) continue;
        const rel = path.slice(base.length) || '/';
        for (const template of templates) {
          const m = template.pattern.exec(rel);
          if (m === null) continue;
          const op = template.operations.get(ctx.request.method);
          return op === undefined ? undefined : { op, template, groups: m.slice(1) };
        }
      }
      return undefined;
    };

    const rawValue = (ctx: Context, p: Parameter, pathValues: Map<string, string>): unknown => {
      switch (p.in) {
        case 'path':
          return pathValues.get(p.name);
        case 'query': {
          const values = ctx.request.query.get(p.name);
          if (values === undefined) return undefined;
          return values.length === 1 ? values[0] : values;
        }
        case 'header':
          return ctx.request.header(p.name);
        case 'cookie':
          return ctx.request.cookies.get(p.name);
      }
    };

    const checkParameters = (
      ctx: Context,
      op: Operation,
      pathValues: Map<string, string>,
    ): string | undefined => {
      for (const p of op.parameters) {
        let value = rawValue(ctx, p, pathValues);
        if (value === undefined) {
          if (p.required) return `missing required ${p.in} parameter '${p.name}'`;
          continue;
        }
        if (p.check === undefined) continue;
        if (p.splitsList && typeof value === 'string') value = value.split(',');
        if (!p.check({ v: value })) {
          const first = p.check.errors?.[0];
          const at = first?.instancePath.replace(/^\/v/, '') ?? '';
          return `${p.in} parameter '${p.name}'${at} ${first?.message ?? 'is invalid'}`;
        }
      }
      return undefined;
    };

    const checkBody = (ctx: Context, op: Operation): string | undefined => {
      const body = ctx.request.body;
      if (body === null || body.length === 0) return op.bodyRequired ? 'request body is required' : undefined;
      if (op.media.length === 0) return undefined;
      const type = mediaType(ctx) || 'application/json';
      const slash = type.indexOf('/');
      const media =
        op.media.find((m) => m.type === type) ??
        op.media.find((m) => m.type === `${type.slice(0, slash)}/*`) ??
        op.media.find((m) => m.type === '*/*');
      if (media === undefined) return `unsupported content type '${type}'`;
      if (media.check === undefined) return undefined;
      let document: unknown;
      if (media.kind === 'form') document = formDocument(body);
      else if (media.kind === 'json' || isJsonType(type)) {
        try {
          document = JSON.parse(body.toString('utf8'));
        } catch (err) {
          return `failed to decode the request body: ${(err as Error).message}`;
        }
      } else return undefined;
      if (!media.check(document)) {
        return `body validation failed: ${describeErrors(media.kind === 'form' ? coercing : plain, media.check.errors, 'body')}`;
      }
      return undefined;
    };

    return {
      run(ctx) {
        const found = match(ctx);
        if (found === undefined) return 'success';
        const pathValues = new Map<string, string>();
        found.template.names.forEach((name, i) => pathValues.set(name, decode(found.groups[i] ?? '')));
        const problem = checkParameters(ctx, found.op, pathValues) ?? checkBody(ctx, found.op);
        return problem === undefined ? 'success' : deny(ctx, problem);
      },
    };
  },
});
