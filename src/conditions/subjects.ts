import type { Context } from '../core/context.js';
import { compileVariable } from '../template/catalog.js';
import { listVars } from '../template/index.js';
import type { Reader } from '../template/readers.js';
import { parseJsonPath, type JsonPath } from './jsonpath.js';

export type BodyTarget = 'request' | 'response';

/** A legacy catalog variable (`http_x_api_key`), read through the template module's readers. */
export interface FlatSubject {
  readonly kind: 'flat';
  readonly name: string;
  /** The value as templates render it: '' when absent. */
  readonly read: Reader;
  /** Whether the variable resolves at all; an empty value is present. */
  readonly present: (ctx: Context) => boolean;
  /** The unstringified value, for `msg_*` lists under `has`; undefined for other variables. */
  readonly raw: ((ctx: Context) => unknown) | undefined;
  readonly body: BodyTarget | undefined;
}

/** A JSONPath over the request or response body (`$.a`, `request_body:$.a`, `response_body:$.a`). */
export interface JsonSubject {
  readonly kind: 'json';
  readonly target: BodyTarget;
  readonly path: JsonPath;
}

export type Subject = FlatSubject | JsonSubject;

const REQUEST_PREFIX = 'request_body:';
const RESPONSE_PREFIX = 'response_body:';

/** Throws JsonPathSyntaxError for a malformed path; flat names never throw. */
export function parseSubject(text: string): Subject {
  if (text.startsWith(REQUEST_PREFIX)) {
    return { kind: 'json', target: 'request', path: parseJsonPath(text.slice(REQUEST_PREFIX.length)) };
  }
  if (text.startsWith(RESPONSE_PREFIX)) {
    return { kind: 'json', target: 'response', path: parseJsonPath(text.slice(RESPONSE_PREFIX.length)) };
  }
  if (text.startsWith('$')) return { kind: 'json', target: 'request', path: parseJsonPath(text) };
  return flatSubject(text);
}

// What "present" means per catalog family; values themselves always come from the catalog's readers.
type FamilyProbe = (suffix: string) => (ctx: Context) => boolean;

const headerName = (suffix: string): string => suffix.replaceAll('_', '-').toLowerCase();

const FAMILY_PROBES: Record<string, FamilyProbe> = {
  request_query: (name) => (ctx) => ctx.request.query.has(name),
  request_headers: (suffix) => {
    const name = headerName(suffix);
    return (ctx) => ctx.request.headers[name] !== undefined;
  },
  request_cookies: (name) => (ctx) => ctx.request.cookies.has(name),
  request_form: (name) => (ctx) => ctx.request.form.has(name),
  message: (key) => (ctx) => Object.hasOwn(ctx.message, key),
  response_headers: (suffix) => {
    const name = headerName(suffix);
    return (ctx) => ctx.response.headers[name] !== undefined;
  },
};

const always = (): boolean => true;

/** Static variables that can be missing; the rest (uri, host, status, …) always resolve. */
const STATIC_PROBES: Record<string, (ctx: Context) => boolean> = {
  query_string: (ctx) => ctx.request.query.size > 0,
  remote_port: (ctx) => ctx.request.remotePort > 0,
  consumer_name: (ctx) => Object.hasOwn(ctx.message, 'consumer.name') || ctx.consumer !== undefined,
  consumer_group_id: (ctx) =>
    Object.hasOwn(ctx.message, 'consumer.group') || ctx.consumer?.group !== undefined,
  request_body: (ctx) => ctx.request.body !== null,
  resp_body: (ctx) => ctx.response.body !== null,
};

const BODY_READERS: Record<string, BodyTarget> = {
  request_body: 'request',
  resp_body: 'response',
  post_arg_: 'request',
};

interface Family {
  prefix: string;
  source: string;
}

const { statics: STATIC_NAMES, families: FAMILIES } = catalogShape();

function catalogShape(): { statics: Set<string>; families: Family[] } {
  const statics = new Set<string>();
  const families: Family[] = [];
  for (const v of listVars().vars) {
    if (v.kind === 'static') statics.add(v.name);
    else families.push({ prefix: v.name.slice(0, -1), source: v.family_source ?? '' });
  }
  // Longest prefix first, as the catalog resolves them: `sent_http_` before `http_`.
  families.sort((a, b) => b.prefix.length - a.prefix.length);
  return { statics, families };
}

const absent = (): boolean => false;
const empty: Reader = () => '';

function flatSubject(name: string): FlatSubject {
  if (STATIC_NAMES.has(name)) {
    return {
      kind: 'flat',
      name,
      read: asReader(compileVariable(name, 'response')),
      present: STATIC_PROBES[name] ?? always,
      raw: undefined,
      body: BODY_READERS[name],
    };
  }
  for (const family of FAMILIES) {
    if (name.length <= family.prefix.length || !name.startsWith(family.prefix)) continue;
    const suffix = name.slice(family.prefix.length);
    const read = asReader(compileVariable(name, 'response'));
    const probe = FAMILY_PROBES[family.source];
    return {
      kind: 'flat',
      name,
      read,
      // A family added to the catalog later still works: non-empty counts as present.
      present: probe === undefined ? (ctx) => read(ctx) !== '' : probe(suffix),
      raw:
        family.source === 'message'
          ? (ctx) => (Object.hasOwn(ctx.message, suffix) ? ctx.message[suffix] : undefined)
          : undefined,
      body: BODY_READERS[family.prefix],
    };
  }
  // Unknown names resolve to nothing, as they render empty in templates (docs/templates.md#template-syntax).
  return { kind: 'flat', name, read: empty, present: absent, raw: undefined, body: undefined };
}

function asReader(part: string | Reader): Reader {
  return typeof part === 'string' ? () => part : part;
}
