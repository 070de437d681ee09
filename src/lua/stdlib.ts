import { lauxlib, lua, lualib, type JsFunction, type LuaState } from 'fengari';
import { ConversionError, decode, pushJson, pushText, readJson, type Expand } from './values.js';

/** JS functions the sandbox exposes; the VM supplies them because they need its per-call state. */
export interface SandboxHooks {
  print: JsFunction;
  require: JsFunction;
  load: JsFunction;
  /** Completes lazily built context tables before json.encode reads them. */
  expand: Expand;
}

/**
 * Builds the sandbox and returns (on the stack) the metatable of per-call
 * environments. It runs once per VM with the full libraries: it copies the
 * safe subset into a template that environments inherit from, then empties
 * the real global table, so a script can only reach what the template holds.
 * Globals a script assigns land in its own environment table.
 */
const BOOTSTRAP = `
local helpers = ...
local G, error, next, rawset, setmetatable = _G, error, next, rawset, setmetatable
local base = {}
for _, name in ipairs({ "assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall",
    "rawequal", "rawget", "rawlen", "select", "setmetatable", "tonumber",
    "tostring", "type", "xpcall", "_VERSION" }) do
  base[name] = G[name]
end
-- Library tables are shared by every call, so scripts get read-only views:
-- writes raise, and rawset refuses them.
local readonly = setmetatable({}, { __mode = "k" })
local function deny()
  error("the standard library is read-only; keep your own values in locals", 2)
end
local function view(t, drop)
  local lib = {}
  for k, v in pairs(t) do
    if not (drop and drop[k]) then lib[k] = v end
  end
  local proxy = setmetatable({}, {
    __index = lib,
    __newindex = deny,
    __pairs = function() return next, lib, nil end,
    __metatable = false,
  })
  readonly[proxy] = true
  return proxy
end
base.rawset = function(t, k, v)
  if readonly[t] then deny() end
  return rawset(t, k, v)
end
base.string = view(string, { dump = true })
base.table = view(table)
base.math = view(math)
base.utf8 = view(utf8)
base.coroutine = view(coroutine)
base.os = view({ time = os.time, clock = os.clock, date = os.date, difftime = os.difftime })
base.json = view({ encode = helpers.json_encode, decode = helpers.json_decode })
base.print = helpers.print
base.require = helpers.require
base.load = helpers.load
-- Method calls on strings ("x"):upper() go through the same read-only view,
-- so ("").dump is as absent as string.dump.
getmetatable("").__index = base.string
getmetatable("").__metatable = false
local names = {}
for k in pairs(G) do names[#names + 1] = k end
for i = 1, #names do G[names[i]] = nil end
return { __index = base, __metatable = false }
`;

const LIBRARIES: [string, JsFunction][] = [
  ['_G', lualib.luaopen_base],
  ['string', lualib.luaopen_string],
  ['table', lualib.luaopen_table],
  ['math', lualib.luaopen_math],
  ['utf8', lualib.luaopen_utf8],
  ['os', lualib.luaopen_os],
  ['coroutine', lualib.luaopen_coroutine],
];

/** Opens the libraries, runs the bootstrap and leaves the environment metatable on the stack. */
export function installSandbox(L: LuaState, hooks: SandboxHooks): void {
  for (const [name, open] of LIBRARIES) {
    lauxlib.luaL_requiref(L, name, open, 1);
    lua.lua_pop(L, 1);
  }
  const source = Buffer.from(BOOTSTRAP, 'utf8');
  let done = false;
  const status = lua.lua_load(
    L,
    () => {
      if (done) return null;
      done = true;
      return source;
    },
    null,
    '=sandbox',
    't',
  );
  if (status !== lua.LUA_OK) throw new Error(`sandbox bootstrap does not compile: ${stackText(L)}`);
  lua.lua_createtable(L, 0, 5);
  const helpers: [string, JsFunction][] = [
    ['json_encode', jsonEncode(hooks.expand)],
    ['json_decode', jsonDecode],
    ['print', hooks.print],
    ['require', hooks.require],
    ['load', hooks.load],
  ];
  for (const [name, fn] of helpers) {
    lua.lua_pushjsfunction(L, fn);
    lua.lua_setfield(L, -2, name);
  }
  if (lua.lua_pcall(L, 1, 1, 0) !== lua.LUA_OK) throw new Error(`sandbox bootstrap failed: ${stackText(L)}`);
}

function stackText(L: LuaState): string {
  const s = lua.lua_tolstring(L, -1);
  return s === null ? 'unknown error' : decode(s);
}

/** `json.encode(value)`: tables with keys 1..n become arrays, other tables objects. */
const jsonEncode =
  (expand: Expand): JsFunction =>
  (L) => {
    let text: string;
    try {
      text = JSON.stringify(readJson(L, 1, 'value', expand));
    } catch (err) {
      return raise(L, `json.encode: ${err instanceof ConversionError ? err.message : String(err)}`);
    }
    pushText(L, text);
    return 1;
  };

/** `json.decode(text)`: returns the value, or nil plus a message for invalid JSON. */
const jsonDecode: JsFunction = (L) => {
  const text = decode(lauxlib.luaL_checklstring(L, 1));
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    lua.lua_pushnil(L);
    pushText(L, `json.decode: ${(err as Error).message}`);
    return 2;
  }
  try {
    pushJson(L, value, 'value');
  } catch (err) {
    return raise(L, `json.decode: ${(err as Error).message}`);
  }
  return 1;
};

/** Raises a Lua error with `message` from inside a JS function called by Lua. */
export function raise(L: LuaState, message: string): never {
  pushText(L, message);
  return lua.lua_error(L);
}
