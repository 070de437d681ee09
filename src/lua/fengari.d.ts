/**
 * Types for the part of fengari 0.1.5 (a Lua 5.3 VM in JavaScript, shipped
 * without declarations) that src/lua uses. Lua strings are byte arrays.
 */
declare module 'fengari' {
  /** A Lua thread; opaque outside the VM. */
  export interface LuaState {
    readonly __luaState: unique symbol;
  }

  export type LuaString = Uint8Array;
  /** A function callable from Lua: reads its arguments from the stack, returns how many results it pushed. */
  export type JsFunction = (L: LuaState) => number;
  export type Hook = (L: LuaState, ar: unknown) => void;

  export const lua: {
    readonly LUA_OK: 0;
    readonly LUA_YIELD: 1;
    readonly LUA_ERRRUN: 2;
    readonly LUA_ERRSYNTAX: 3;
    readonly LUA_ERRMEM: 4;
    readonly LUA_ERRGCMM: 5;
    readonly LUA_ERRERR: 6;
    readonly LUA_MULTRET: -1;
    readonly LUA_REGISTRYINDEX: number;
    readonly LUA_MASKCOUNT: number;
    readonly LUA_TNONE: -1;
    readonly LUA_TNIL: 0;
    readonly LUA_TBOOLEAN: 1;
    readonly LUA_TLIGHTUSERDATA: 2;
    readonly LUA_TNUMBER: 3;
    readonly LUA_TSTRING: 4;
    readonly LUA_TTABLE: 5;
    readonly LUA_TFUNCTION: 6;
    readonly LUA_TUSERDATA: 7;
    readonly LUA_TTHREAD: 8;

    lua_absindex(L: LuaState, idx: number): number;
    lua_atnativeerror(L: LuaState, handler: JsFunction): void;
    lua_call(L: LuaState, nargs: number, nresults: number): void;
    lua_checkstack(L: LuaState, n: number): boolean;
    lua_copy(L: LuaState, from: number, to: number): void;
    lua_createtable(L: LuaState, narr: number, nrec: number): void;
    lua_error(L: LuaState): never;
    lua_getfield(L: LuaState, idx: number, k: string | LuaString): number;
    lua_gettop(L: LuaState): number;
    lua_insert(L: LuaState, idx: number): void;
    lua_isinteger(L: LuaState, idx: number): boolean;
    lua_load(
      L: LuaState,
      reader: (L: LuaState, data: unknown) => LuaString | null,
      data: unknown,
      chunkname: string | LuaString,
      mode: string | LuaString | null,
    ): number;
    lua_next(L: LuaState, idx: number): boolean;
    lua_pcall(L: LuaState, nargs: number, nresults: number, msgh: number): number;
    lua_pop(L: LuaState, n: number): void;
    lua_pushboolean(L: LuaState, b: boolean): void;
    lua_pushinteger(L: LuaState, n: number): void;
    lua_pushjsclosure(L: LuaState, fn: JsFunction, n: number): void;
    lua_pushjsfunction(L: LuaState, fn: JsFunction): void;
    lua_pushlightuserdata(L: LuaState, p: unknown): void;
    lua_pushliteral(L: LuaState, s: string): LuaString;
    lua_pushnil(L: LuaState): void;
    lua_pushnumber(L: LuaState, n: number): void;
    lua_pushstring(L: LuaState, s: string | LuaString): LuaString;
    lua_pushvalue(L: LuaState, idx: number): void;
    lua_rawget(L: LuaState, idx: number): number;
    lua_rawgeti(L: LuaState, idx: number, n: number): number;
    lua_rawlen(L: LuaState, idx: number): number;
    lua_rawset(L: LuaState, idx: number): void;
    lua_rawseti(L: LuaState, idx: number, n: number): void;
    lua_remove(L: LuaState, idx: number): void;
    lua_setfield(L: LuaState, idx: number, k: string | LuaString): void;
    lua_sethook(L: LuaState, hook: Hook | null, mask: number, count: number): void;
    lua_setmetatable(L: LuaState, idx: number): void;
    lua_settop(L: LuaState, idx: number): void;
    lua_setupvalue(L: LuaState, funcidx: number, n: number): LuaString | null;
    lua_toboolean(L: LuaState, idx: number): boolean;
    lua_tointeger(L: LuaState, idx: number): number;
    lua_tolstring(L: LuaState, idx: number): LuaString | null;
    lua_tonumber(L: LuaState, idx: number): number;
    lua_topointer(L: LuaState, idx: number): unknown;
    lua_touserdata(L: LuaState, idx: number): unknown;
    lua_type(L: LuaState, idx: number): number;
    lua_typename(L: LuaState, t: number): LuaString;
  };

  export const lauxlib: {
    luaL_checkinteger(L: LuaState, arg: number): number;
    luaL_checklstring(L: LuaState, arg: number): LuaString;
    luaL_loadstring(L: LuaState, s: LuaString): number;
    luaL_newstate(): LuaState;
    luaL_ref(L: LuaState, t: number): number;
    luaL_requiref(L: LuaState, modname: string | LuaString, openf: JsFunction, glb: number): void;
    luaL_tolstring(L: LuaState, idx: number): LuaString;
    luaL_typename(L: LuaState, idx: number): LuaString;
  };

  export const lualib: {
    luaL_openlibs(L: LuaState): void;
    luaopen_base: JsFunction;
    luaopen_coroutine: JsFunction;
    luaopen_math: JsFunction;
    luaopen_os: JsFunction;
    luaopen_string: JsFunction;
    luaopen_table: JsFunction;
    luaopen_utf8: JsFunction;
  };

  export function to_luastring(s: string, cache?: boolean): LuaString;
  export function to_jsstring(s: LuaString, from?: number, to?: number, replacementChar?: boolean): string;
}
