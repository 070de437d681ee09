import { lauxlib, lua, to_luastring, type JsFunction, type LuaState, type LuaString } from 'fengari';
import type { Context, HeaderMap } from '../core/context.js';
import { raise } from './stdlib.js';
import { ConversionError, pushJson, pushText, readJson, readText, typeName, type Expand } from './values.js';

/**
 * The context as scripts see it (the reference gateway's shape):
 *
 *   ctx.request  = { method, path, host, scheme, remote_addr, headers, query_params, body }
 *   ctx.response = { status_code, headers, body }
 *   ctx.message  = { [key] = JSON value }   -- keys are literal, dots included
 *   ctx.errors   = { { node_id, code, message, metadata }, ... }   -- read-only view
 *
 * Headers and query parameters map a name to a list of strings.
 *
 * Tables cost a lot in a JS-hosted VM, so parts are built when a script
 * first touches them (an `__index` metamethod), and only touched parts are
 * read back. `pairs` sees every key (`__pairs`); a raw `next` sees only the
 * keys already touched.
 */

const KEYS = [
  'request',
  'response',
  'message',
  'errors',
  'method',
  'path',
  'host',
  'scheme',
  'remote_addr',
  'headers',
  'query_params',
  'body',
  'status_code',
] as const;
type Key = (typeof KEYS)[number];
const KEY = Object.fromEntries(KEYS.map((k) => [k, to_luastring(k)])) as Record<Key, LuaString>;

/**
 * What a script reads of a request context: the engine's Context, or the
 * plain copy a Lua worker receives (ContextSnapshot).
 */
export interface ScriptContext {
  readonly request: {
    readonly method: string;
    readonly path: string;
    readonly host: string;
    readonly scheme: 'http' | 'https';
    readonly remoteAddr: string;
    readonly headers: HeaderMap;
    readonly query: ReadonlyMap<string, readonly string[]>;
    readonly body: Uint8Array | null;
  };
  readonly response: {
    readonly status: number;
    readonly headers: HeaderMap;
    readonly body: Uint8Array | null;
  };
  readonly message: Record<string, unknown>;
  readonly errors: readonly unknown[];
}

type Part =
  | { kind: 'ctx'; ctx: ScriptContext; touched: Set<string> }
  | { kind: 'request'; ctx: ScriptContext; touched: Set<string> }
  | { kind: 'response'; ctx: ScriptContext; touched: Set<string> }
  | { kind: 'lists'; source: ReadonlyMap<string, readonly string[]>; touched: Set<string> };

const LAZY_KEYS: Record<'ctx' | 'request' | 'response', readonly Key[]> = {
  ctx: ['request', 'response', 'message', 'errors'],
  request: ['method', 'path', 'host', 'scheme', 'remote_addr', 'headers', 'query_params', 'body'],
  response: ['status_code', 'headers', 'body'],
};

/** The context read back from a script; an undefined field was left as it was. */
export interface Unmarshalled {
  request?: {
    method: string;
    path: string;
    host: string;
    scheme: 'http' | 'https';
    headers?: HeaderMap;
    query?: Map<string, string[]>;
    body?: Buffer;
  };
  response?: { status: number; headers?: HeaderMap; body?: Buffer };
  message?: Record<string, unknown>;
}

const SCALARS = new Set(['method', 'path', 'host', 'scheme', 'remote_addr']);

function requestScalar(ctx: ScriptContext, k: string): string {
  const req = ctx.request;
  switch (k) {
    case 'method':
      return req.method;
    case 'path':
      return req.path;
    case 'host':
      return req.host;
    case 'scheme':
      return req.scheme;
    default:
      return req.remoteAddr;
  }
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const BAD_VALUE = /[\r\n\0]/;

/**
 * Moves one request's context into a VM and back. One bridge per VM; its
 * state covers the call in progress only and is dropped by `clear`.
 */
export class ContextBridge {
  readonly #L: LuaState;
  readonly #metaRef: number;
  /** Lazy tables of the current call, by VM table identity. */
  #parts = new Map<unknown, Part>();
  /**
   * Bodies as pushed, with the part they came from: the same byte array back
   * in the same part means the script kept the body; in the other part, it
   * copied it (`ctx.response.body = ctx.request.body`).
   */
  #pushedBodies = new Map<LuaString, 'request' | 'response'>();
  /** Set when building a part failed during the call (LUA_MARSHAL_ERROR rather than a script error). */
  failure: string | undefined;

  constructor(L: LuaState) {
    this.#L = L;
    internKeys(L);
    lua.lua_createtable(L, 0, 4);
    const meta: [string, JsFunction][] = [
      ['__index', this.#index],
      ['__newindex', this.#newIndex],
      ['__pairs', this.#pairs],
    ];
    for (const [name, fn] of meta) {
      lua.lua_pushjsfunction(L, fn);
      lua.lua_setfield(L, -2, name);
    }
    lua.lua_pushboolean(L, false);
    lua.lua_setfield(L, -2, '__metatable');
    this.#metaRef = lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX);
  }

  /** Pushes the ctx table of `ctx`. */
  push(ctx: ScriptContext): void {
    this.#pushLazy({ kind: 'ctx', ctx, touched: new Set() }, 0, 4);
  }

  /** Forgets the current call's tables. */
  clear(): void {
    this.failure = undefined;
    if (this.#parts.size > 0) this.#parts = new Map();
    if (this.#pushedBodies.size > 0) this.#pushedBodies = new Map();
  }

  /** Builds every lazy key of the table at `idx`, if it is one of ours (json.encode uses it). */
  expand = (L: LuaState, idx: number): void => {
    const part = this.#parts.get(lua.lua_topointer(L, idx));
    if (part !== undefined) this.#expandPart(L, lua.lua_absindex(L, idx), part);
  };

  /**
   * Reads the table at `idx` back, raw access only (no script code runs).
   * Throws ConversionError naming the field.
   */
  read(idx: number): Unmarshalled {
    const L = this.#L;
    if (!lua.lua_checkstack(L, 16)) throw new ConversionError('ctx', 'Lua stack exhausted');
    const part = this.#parts.get(lua.lua_topointer(L, idx));
    const out: Unmarshalled = {};
    if (touched(part, 'request')) out.request = this.#readRequest(subTable(L, idx, 'request', 'ctx'));
    if (touched(part, 'response')) out.response = this.#readResponse(subTable(L, idx, 'response', 'ctx'));
    if (touched(part, 'message')) out.message = readMessage(L, idx, this.expand);
    lua.lua_settop(L, idx);
    return out;
  }

  #pushLazy(part: Part, narr: number, nrec: number): void {
    const L = this.#L;
    lua.lua_createtable(L, narr, nrec);
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, this.#metaRef);
    lua.lua_setmetatable(L, -2);
    this.#parts.set(lua.lua_topointer(L, -1), part);
  }

  /** Pushes the value of lazy key `k` of `part`, or returns false when it has none. */
  #build(part: Part, k: string): boolean {
    const L = this.#L;
    if (!lua.lua_checkstack(L, 8)) throw new ConversionError(k, 'Lua stack exhausted');
    switch (part.kind) {
      case 'ctx': {
        const ctx = part.ctx;
        if (k === 'request') this.#pushLazy({ kind: 'request', ctx, touched: new Set() }, 0, 8);
        else if (k === 'response') this.#pushLazy({ kind: 'response', ctx, touched: new Set() }, 0, 3);
        else if (k === 'message') pushJson(L, ctx.message, 'ctx.message');
        else if (k === 'errors') pushJson(L, ctx.errors, 'ctx.errors');
        else return false;
        return true;
      }
      case 'request':
      case 'response': {
        const r = part.kind === 'request' ? part.ctx.request : part.ctx.response;
        if (part.kind === 'request' && SCALARS.has(k)) pushText(L, requestScalar(part.ctx, k));
        else if (k === 'status_code' && part.kind === 'response')
          lua.lua_pushinteger(L, part.ctx.response.status);
        else if (k === 'headers')
          this.#pushLazy({ kind: 'lists', source: headerLists(r.headers), touched: new Set() }, 0, 8);
        else if (k === 'query_params' && part.kind === 'request')
          this.#pushLazy({ kind: 'lists', source: part.ctx.request.query, touched: new Set() }, 0, 4);
        else if (k === 'body') this.#pushedBodies.set(lua.lua_pushstring(L, r.body ?? ''), part.kind);
        else return false;
        return true;
      }
      case 'lists': {
        const values = part.source.get(k);
        if (values === undefined) return false;
        lua.lua_createtable(L, values.length, 0);
        for (let i = 0; i < values.length; i++) {
          pushText(L, values[i] as string);
          lua.lua_rawseti(L, -2, i + 1);
        }
        return true;
      }
    }
  }

  #lazyKeys(part: Part): Iterable<string> {
    return part.kind === 'lists' ? part.source.keys() : LAZY_KEYS[part.kind];
  }

  #expandPart(L: LuaState, table: number, part: Part): void {
    for (const k of this.#lazyKeys(part)) {
      if (part.touched.has(k)) continue;
      part.touched.add(k);
      if (!this.#build(part, k)) continue;
      pushText(L, k);
      lua.lua_insert(L, -2);
      lua.lua_rawset(L, table);
    }
  }

  readonly #index: JsFunction = (L) => {
    const part = this.#parts.get(lua.lua_topointer(L, 1));
    if (part === undefined || lua.lua_type(L, 2) !== lua.LUA_TSTRING) return 0;
    const k = readText(L, 2) as string;
    if (part.touched.has(k)) return 0;
    if (part.kind !== 'lists' && !(LAZY_KEYS[part.kind] as readonly string[]).includes(k)) return 0;
    part.touched.add(k);
    let built: boolean;
    try {
      built = this.#build(part, k);
    } catch (err) {
      this.failure = (err as Error).message;
      return raise(L, `cannot pass the context to Lua: ${this.failure}`);
    }
    if (!built) return 0;
    lua.lua_pushvalue(L, 2);
    lua.lua_pushvalue(L, -2);
    lua.lua_rawset(L, 1);
    return 1;
  };

  readonly #newIndex: JsFunction = (L) => {
    const part = this.#parts.get(lua.lua_topointer(L, 1));
    if (part !== undefined && lua.lua_type(L, 2) === lua.LUA_TSTRING)
      part.touched.add(readText(L, 2) as string);
    lua.lua_settop(L, 3);
    lua.lua_rawset(L, 1);
    return 0;
  };

  readonly #pairs: JsFunction = (L) => {
    const part = this.#parts.get(lua.lua_topointer(L, 1));
    if (part !== undefined) this.#expandPart(L, 1, part);
    lua.lua_pushjsfunction(L, rawNext);
    lua.lua_pushvalue(L, 1);
    lua.lua_pushnil(L);
    return 3;
  };

  #readRequest(table: number): NonNullable<Unmarshalled['request']> {
    const L = this.#L;
    const part = this.#parts.get(lua.lua_topointer(L, table));
    const req = part?.kind === 'request' ? part.ctx.request : undefined;
    const path = touched(part, 'path') ? requiredText(L, table, 'path', 'ctx.request') : (req?.path ?? '');
    if (!path.startsWith('/') || /[\s\0]/.test(path))
      throw new ConversionError('ctx.request.path', 'must start with / and hold no whitespace');
    const scheme = touched(part, 'scheme') ? requiredText(L, table, 'scheme', 'ctx.request') : req?.scheme;
    if (scheme !== 'http' && scheme !== 'https')
      throw new ConversionError('ctx.request.scheme', `must be http or https, got '${scheme}'`);
    const out: NonNullable<Unmarshalled['request']> = {
      method: touched(part, 'method') ? requiredText(L, table, 'method', 'ctx.request') : (req?.method ?? ''),
      path,
      host: touched(part, 'host') ? requiredText(L, table, 'host', 'ctx.request') : (req?.host ?? ''),
      scheme,
    };
    if (touched(part, 'headers')) {
      const headers = this.#readLists(table, 'headers', 'ctx.request');
      if (headers !== undefined) out.headers = toHeaderMap(headers);
    }
    if (touched(part, 'query_params')) {
      const query = this.#readLists(table, 'query_params', 'ctx.request');
      if (query !== undefined) out.query = query as Map<string, string[]>;
    }
    if (touched(part, 'body')) {
      const body = this.#readBody(table, 'request');
      if (body !== undefined) out.body = body;
    }
    return out;
  }

  #readResponse(table: number): NonNullable<Unmarshalled['response']> {
    const L = this.#L;
    const part = this.#parts.get(lua.lua_topointer(L, table));
    const res = part?.kind === 'response' ? part.ctx.response : undefined;
    const out: NonNullable<Unmarshalled['response']> = {
      status:
        res === undefined || part?.touched.has('status_code') === true ? readStatus(L, table) : res.status,
    };
    if (touched(part, 'headers')) {
      const headers = this.#readLists(table, 'headers', 'ctx.response');
      if (headers !== undefined) out.headers = toHeaderMap(headers);
    }
    if (touched(part, 'body')) {
      const body = this.#readBody(table, 'response');
      if (body !== undefined) out.body = body;
    }
    return out;
  }

  #readBody(table: number, which: 'request' | 'response'): Buffer | undefined {
    const L = this.#L;
    const t = rawField(L, table, 'body');
    let out: Buffer | undefined;
    if (t === lua.LUA_TNIL) out = Buffer.alloc(0);
    else if (t === lua.LUA_TSTRING) {
      const bytes = lua.lua_tolstring(L, -1) as LuaString;
      if (this.#pushedBodies.get(bytes) !== which)
        out = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
    } else {
      const text = readText(L, -1);
      if (text === undefined) {
        throw new ConversionError(
          `ctx.${which}.body`,
          `must be a string, got ${typeName(L, -1)} (encode tables with json.encode)`,
        );
      }
      out = Buffer.from(text);
    }
    lua.lua_pop(L, 1);
    return out;
  }

  /**
   * A name → list-of-strings map (a bare scalar counts as a one-element
   * list); header names and values are checked as they come from Lua. For
   * one of our lazy tables, untouched names keep their source values, and
   * the result is undefined when nothing changed.
   */
  #readLists(
    table: number,
    name: 'headers' | 'query_params',
    at: string,
  ): Map<string, readonly string[]> | undefined {
    const L = this.#L;
    const where = `${at}.${name}`;
    const t = rawField(L, table, name);
    if (t === lua.LUA_TNIL) {
      lua.lua_pop(L, 1);
      return new Map();
    }
    if (t !== lua.LUA_TTABLE) throw new ConversionError(where, `must be a table, got ${typeName(L, -1)}`);
    const map = lua.lua_gettop(L);
    const part = this.#parts.get(lua.lua_topointer(L, map));
    const out = new Map<string, readonly string[]>();
    if (part?.kind === 'lists') {
      for (const [k, v] of part.source) if (!part.touched.has(k)) out.set(k, v);
    }
    lua.lua_pushnil(L);
    while (lua.lua_next(L, map)) {
      const k = lua.lua_type(L, -2) === lua.LUA_TSTRING ? readText(L, -2) : undefined;
      if (k === undefined)
        throw new ConversionError(where, `has a ${typeName(L, -2)} key; names are strings`);
      const values = readList(L, `${where}['${k}']`);
      if (name === 'headers') checkHeader(k, values, where);
      out.set(k, values);
      lua.lua_pop(L, 1);
    }
    lua.lua_pop(L, 1);
    if (part?.kind === 'lists' && sameLists(out, part.source)) return undefined;
    return out;
  }
}

function touched(part: Part | undefined, k: Key): boolean {
  return part === undefined || part.touched.has(k);
}

function checkHeader(name: string, values: readonly string[], where: string): void {
  if (!TOKEN.test(name)) throw new ConversionError(where, `'${name}' is not a valid header name`);
  for (const v of values) {
    if (BAD_VALUE.test(v)) throw new ConversionError(`${where}['${name}']`, 'a value holds CR, LF or NUL');
  }
}

/** Lists back to Node's header map: lowercase names, one value as a string. */
function toHeaderMap(lists: ReadonlyMap<string, readonly string[]>): HeaderMap {
  const out: HeaderMap = {};
  for (const [rawName, values] of lists) {
    if (values.length === 0) continue;
    const name = rawName.toLowerCase();
    const existing = out[name];
    const merged =
      existing === undefined ? values : [...(Array.isArray(existing) ? existing : [existing]), ...values];
    out[name] = merged.length === 1 ? merged[0] : [...merged];
  }
  return out;
}

/** `next` for `__pairs`: the sandbox has no global table to take it from. */
const rawNext: JsFunction = (L) => {
  lua.lua_settop(L, 2);
  if (lua.lua_next(L, 1)) return 2;
  lua.lua_pushnil(L);
  return 1;
};

/** The Node header map as lists, which is how scripts see it. */
function headerLists(headers: HeaderMap): Map<string, readonly string[]> {
  const out = new Map<string, readonly string[]>();
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) out.set(name, typeof value === 'string' ? [value] : value);
  }
  return out;
}

function readList(L: LuaState, where: string): string[] {
  const values: string[] = [];
  if (lua.lua_type(L, -1) === lua.LUA_TTABLE) {
    const list = lua.lua_gettop(L);
    const n = lua.lua_rawlen(L, list);
    for (let i = 1; i <= n; i++) {
      lua.lua_rawgeti(L, list, i);
      const v = readText(L, -1);
      if (v === undefined)
        throw new ConversionError(`${where}[${i}]`, `must be a string, got ${typeName(L, -1)}`);
      values.push(v);
      lua.lua_pop(L, 1);
    }
    return values;
  }
  const v = readText(L, -1);
  if (v === undefined)
    throw new ConversionError(where, `must be a string or a list of strings, got ${typeName(L, -1)}`);
  values.push(v);
  return values;
}

/** Writes what `read` produced into the context. */
export function applyContext(ctx: Context, u: Unmarshalled): void {
  if (u.request !== undefined) {
    const req = ctx.request;
    const r = u.request;
    req.method = r.method;
    req.path = r.path;
    req.host = r.host;
    req.scheme = r.scheme;
    if (r.headers !== undefined) req.headers = r.headers;
    if (r.query !== undefined) req.query = r.query;
    if (r.body !== undefined) req.body = r.body;
  }
  if (u.response !== undefined) {
    const res = ctx.response;
    const r = u.response;
    res.status = r.status;
    if (r.headers !== undefined) res.headers = r.headers;
    if (r.body !== undefined) res.setBody(r.body);
  }
  if (u.message !== undefined) ctx.message = u.message;
}

/** Registry refs of the field names, per VM: a string kept in the VM hashes once, a pushed copy every time. */
const keyRefs = new WeakMap<LuaState, Record<Key, number>>();

function internKeys(L: LuaState): void {
  const refs = {} as Record<Key, number>;
  for (const k of KEYS) {
    lua.lua_pushstring(L, KEY[k]);
    refs[k] = lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX);
  }
  keyRefs.set(L, refs);
}

/** Pushes `t[name]` (raw) and returns its type. */
function rawField(L: LuaState, table: number, name: Key): number {
  lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, (keyRefs.get(L) as Record<Key, number>)[name]);
  return lua.lua_rawget(L, table);
}

function subTable(L: LuaState, table: number, name: Key, at: string): number {
  if (rawField(L, table, name) !== lua.LUA_TTABLE) {
    throw new ConversionError(
      `${at}.${name}`,
      `must be a table, got ${typeName(L, -1)}; return the ctx you were given, changed in place`,
    );
  }
  return lua.lua_gettop(L);
}

function requiredText(L: LuaState, table: number, name: Key, at: string): string {
  rawField(L, table, name);
  const text = readText(L, -1);
  if (text === undefined)
    throw new ConversionError(`${at}.${name}`, `must be a string, got ${typeName(L, -1)}`);
  lua.lua_pop(L, 1);
  return text;
}

function readStatus(L: LuaState, res: number): number {
  rawField(L, res, 'status_code');
  const text = readText(L, -1);
  const status = text === undefined ? NaN : Number(text);
  if (!Number.isInteger(status) || (status !== 0 && (status < 100 || status > 999))) {
    throw new ConversionError(
      'ctx.response.status_code',
      `must be an HTTP status (100-999, or 0 for unset), got ${text ?? typeName(L, -1)}`,
    );
  }
  lua.lua_pop(L, 1);
  return status;
}

function sameLists(
  a: ReadonlyMap<string, readonly string[]>,
  b: ReadonlyMap<string, readonly string[]>,
): boolean {
  if (a.size !== b.size) return false;
  for (const [k, va] of a) {
    const vb = b.get(k);
    if (vb === undefined || vb.length !== va.length) return false;
    for (let i = 0; i < va.length; i++) if (va[i] !== vb[i]) return false;
  }
  return true;
}

function readMessage(L: LuaState, idx: number, expand: Expand): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const t = rawField(L, idx, 'message');
  if (t === lua.LUA_TNIL) {
    lua.lua_pop(L, 1);
    return out;
  }
  if (t !== lua.LUA_TTABLE)
    throw new ConversionError('ctx.message', `must be a table, got ${typeName(L, -1)}`);
  const map = lua.lua_gettop(L);
  lua.lua_pushnil(L);
  while (lua.lua_next(L, map)) {
    const kt = lua.lua_type(L, -2);
    if (kt !== lua.LUA_TSTRING && kt !== lua.LUA_TNUMBER)
      throw new ConversionError('ctx.message', `has a ${typeName(L, -2)} key; keys are strings`);
    const k = readText(L, -2) as string;
    const v = readJson(L, -1, `ctx.message['${k}']`, expand);
    if (v !== null) out[k] = v;
    lua.lua_pop(L, 1);
  }
  lua.lua_pop(L, 1);
  return out;
}
