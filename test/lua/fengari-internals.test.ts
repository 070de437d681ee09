import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lauxlib, lua, lualib, to_luastring } from 'fengari';
import { compactStack, emptinessProbe } from '../../src/lua/fengari-internals.js';

function stackLength(L: unknown): number {
  return (L as { stack: unknown[] }).stack.length;
}

test('fengari internals: a grown stack is compacted between calls and the state keeps working', () => {
  const L = lauxlib.luaL_newstate();
  lualib.luaL_openlibs(L);
  assert.ok(lua.lua_checkstack(L, 200));
  assert.ok(stackLength(L) > 64, 'the stack should have grown past the fast-array length');
  lua.lua_settop(L, 0);
  compactStack(L);
  assert.equal(stackLength(L), 60);
  const chunk = to_luastring(
    'local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end return f(...)',
  );
  assert.equal(lauxlib.luaL_loadstring(L, chunk), lua.LUA_OK);
  lua.lua_pushinteger(L, 3000);
  assert.equal(lua.lua_pcall(L, 1, 1, 0), lua.LUA_OK);
  assert.equal(lua.lua_tointeger(L, -1), 3000);
  lua.lua_settop(L, 0);
  compactStack(L);
  assert.equal(stackLength(L), 60);
});

test('fengari internals: a stack in use is never compacted', () => {
  const L = lauxlib.luaL_newstate();
  assert.ok(lua.lua_checkstack(L, 200));
  for (let i = 0; i < 5; i++) lua.lua_pushinteger(L, i);
  const before = stackLength(L);
  compactStack(L);
  assert.equal(stackLength(L), before);
  assert.equal(lua.lua_tointeger(L, 5), 4);
});

test('fengari internals: the emptiness probe follows raw sets and deletes', () => {
  const L = lauxlib.luaL_newstate();
  lua.lua_createtable(L, 0, 0);
  const empty = emptinessProbe(L, 1);
  assert.equal(empty(), true);
  lua.lua_pushinteger(L, 1);
  lua.lua_setfield(L, 1, to_luastring('k'));
  assert.equal(empty(), false);
  lua.lua_pushnil(L);
  lua.lua_setfield(L, 1, to_luastring('k'));
  assert.equal(empty(), true);
});
