import { lua, type LuaState, type LuaString } from 'fengari';

/** Nesting bound for values crossing the JS/Lua border: deeper means a cycle or abuse. */
export const MAX_DEPTH = 64;

/** A value that cannot cross the border; `path` names where it sits. */
export class ConversionError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
    this.name = 'ConversionError';
  }
}

/** UTF-8 with replacement characters for invalid sequences; a leading BOM is kept, not eaten. */
const UTF8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** Lua strings are bytes; decode as UTF-8 with replacement characters for invalid sequences. */
export function decode(bytes: LuaString): string {
  return UTF8.decode(bytes);
}

/** Strings up to this length are encoded once and kept (header names and common values repeat). */
const CACHED_LENGTH = 64;
const CACHE_ENTRIES = 2048;
const encoded = new Map<string, LuaString>();

/** The UTF-8 bytes of `text`; never mutated afterwards (lua_pushstring copies them into the VM). */
function encode(text: string): LuaString {
  if (text.length > CACHED_LENGTH) return Buffer.from(text, 'utf8');
  let bytes = encoded.get(text);
  if (bytes !== undefined) return bytes;
  bytes = encodeShort(text);
  if (encoded.size >= CACHE_ENTRIES) encoded.clear();
  encoded.set(text, bytes);
  return bytes;
}

function encodeShort(text: string): LuaString {
  const n = text.length;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c > 0x7f) return Buffer.from(text, 'utf8');
    out[i] = c;
  }
  return out;
}

export function pushText(L: LuaState, text: string): LuaString {
  return lua.lua_pushstring(L, encode(text));
}

/** The text of a string or number at `idx`, or undefined for any other type. */
export function readText(L: LuaState, idx: number): string | undefined {
  const t = lua.lua_type(L, idx);
  if (t === lua.LUA_TSTRING) return decode(lua.lua_tolstring(L, idx) as LuaString);
  if (t === lua.LUA_TNUMBER) return String(numberAt(L, idx));
  if (t === lua.LUA_TBOOLEAN) return lua.lua_toboolean(L, idx) ? 'true' : 'false';
  return undefined;
}

export function typeName(L: LuaState, idx: number): string {
  return decode(lua.lua_typename(L, lua.lua_type(L, idx)));
}

function numberAt(L: LuaState, idx: number): number {
  return lua.lua_isinteger(L, idx) ? lua.lua_tointeger(L, idx) : lua.lua_tonumber(L, idx);
}

/**
 * Pushes a JSON-shaped value: objects become string-keyed tables, arrays
 * 1-indexed tables, null/undefined nil. Buffers become strings.
 */
export function pushJson(L: LuaState, value: unknown, path: string, depth = 0): void {
  switch (typeof value) {
    case 'string':
      pushText(L, value);
      return;
    case 'number':
      if (Number.isSafeInteger(value)) lua.lua_pushinteger(L, value);
      else lua.lua_pushnumber(L, value);
      return;
    case 'boolean':
      lua.lua_pushboolean(L, value);
      return;
    case 'undefined':
      lua.lua_pushnil(L);
      return;
    case 'object':
      break;
    default:
      throw new ConversionError(path, `a ${typeof value} value has no Lua form`);
  }
  if (value === null) {
    lua.lua_pushnil(L);
    return;
  }
  if (depth >= MAX_DEPTH) throw new ConversionError(path, `nested deeper than ${MAX_DEPTH} levels`);
  if (!lua.lua_checkstack(L, 4)) throw new ConversionError(path, 'Lua stack exhausted');
  if (Buffer.isBuffer(value)) {
    lua.lua_pushstring(L, value);
    return;
  }
  if (Array.isArray(value)) {
    lua.lua_createtable(L, value.length, 0);
    for (let i = 0; i < value.length; i++) {
      pushJson(L, value[i], `${path}[${i + 1}]`, depth + 1);
      lua.lua_rawseti(L, -2, i + 1);
    }
    return;
  }
  const entries = Object.entries(value);
  lua.lua_createtable(L, 0, entries.length);
  for (const [k, v] of entries) {
    if (v === undefined || typeof v === 'function') continue;
    pushText(L, k);
    pushJson(L, v, `${path}.${k}`, depth + 1);
    lua.lua_rawset(L, -3);
  }
}

/** Completes a table the VM builds lazily before it is read whole. */
export type Expand = (L: LuaState, idx: number) => void;

/**
 * Reads the value at `idx` as JSON: a table whose keys are exactly 1..n is an
 * array, any other table an object with string keys; functions, threads and
 * userdata are rejected with their path.
 */
export function readJson(L: LuaState, idx: number, path: string, expand?: Expand, depth = 0): unknown {
  const t = lua.lua_type(L, idx);
  switch (t) {
    case lua.LUA_TNIL:
    case lua.LUA_TNONE:
      return null;
    case lua.LUA_TBOOLEAN:
      return lua.lua_toboolean(L, idx);
    case lua.LUA_TNUMBER: {
      const n = numberAt(L, idx);
      if (!Number.isFinite(n)) throw new ConversionError(path, 'NaN and infinities have no JSON form');
      return n;
    }
    case lua.LUA_TSTRING:
      return decode(lua.lua_tolstring(L, idx) as LuaString);
    case lua.LUA_TTABLE:
      return readTable(L, idx, path, expand, depth);
    default:
      throw new ConversionError(path, `a ${typeName(L, idx)} value has no JSON form`);
  }
}

function readTable(
  L: LuaState,
  idx: number,
  path: string,
  expand: Expand | undefined,
  depth: number,
): unknown {
  if (depth >= MAX_DEPTH) throw new ConversionError(path, `nested deeper than ${MAX_DEPTH} levels`);
  if (!lua.lua_checkstack(L, 4)) throw new ConversionError(path, 'Lua stack exhausted');
  const at = lua.lua_absindex(L, idx);
  expand?.(L, at);
  const length = lua.lua_rawlen(L, at);
  const list: unknown[] = [];
  const object: Record<string, unknown> = {};
  let count = 0;
  let sequence = true;
  lua.lua_pushnil(L);
  while (lua.lua_next(L, at)) {
    count++;
    const keyType = lua.lua_type(L, -2);
    if (keyType !== lua.LUA_TSTRING && keyType !== lua.LUA_TNUMBER) {
      const name = typeName(L, -2);
      lua.lua_pop(L, 2);
      throw new ConversionError(path, `a ${name} key has no JSON form`);
    }
    const integer = keyType === lua.LUA_TNUMBER && lua.lua_isinteger(L, -2);
    const k = readText(L, -2) as string;
    const v = readJson(L, -1, integer ? `${path}[${k}]` : `${path}.${k}`, expand, depth + 1);
    const n = integer ? lua.lua_tointeger(L, -2) : 0;
    if (integer && n >= 1 && n <= length) list[n - 1] = v;
    else sequence = false;
    object[k] = v;
    lua.lua_pop(L, 1);
  }
  return sequence && count === length && length > 0 ? list : object;
}
