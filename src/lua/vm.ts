import { readFileSync } from 'node:fs';
import { join, relative, isAbsolute } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  lauxlib,
  lua,
  to_luastring,
  type Hook,
  type JsFunction,
  type LuaState,
  type LuaString,
} from 'fengari';
import type { Logger } from '../observability/logger.js';
import { compactStack, emptinessProbe } from './fengari-internals.js';
import { ContextBridge } from './marshal.js';
import { installSandbox, raise } from './stdlib.js';
import { decode, readText, typeName } from './values.js';

/** Instructions between two deadline checks: small enough to stop within a millisecond or so. */
const HOOK_EVERY = 1000;
const G_KEY = to_luastring('_G');
const INDEX_KEY = to_luastring('__index');
const NEWINDEX_KEY = to_luastring('__newindex');
const METATABLE_KEY = to_luastring('__metatable');
const MODULE_NAME = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

export interface VmOptions {
  /** Directory `require` resolves modules from; undefined disables `require`. */
  modulesDir: string | undefined;
  logger: Logger;
}

/** The result of a protected call: an error message, or undefined on success. */
export type CallFailure = string | undefined;

/**
 * Registry refs of a unit whose top level ran once (see chunk-shape.ts).
 * `env` is the chunk's _ENV and stays empty: reads fall through to `scratch`
 * (what the current call assigned) and then to the top level's globals over
 * the library; assignments land in `scratch`, which is emptied after every call.
 */
export interface StaticEnv {
  env: number;
  scratch: number;
  /** The top level's globals over the library (what `scratch` reads through to). */
  defaults: number;
  /** True when neither table holds anything, so the scrub after a call has nothing to do. */
  clean: () => boolean;
}

/**
 * One Lua state with the sandboxed library. Compiled chunks live in the
 * registry; a call runs them in a fresh environment table, or (for a chunk
 * whose top level ran once, see runStatic) in its persistent environment,
 * scrubbed after the call; either way globals, top-level locals and
 * required modules never outlive the call. Calls are
 * synchronous, so one VM never runs two requests at once.
 */
export class LuaVm {
  readonly L: LuaState;
  /** Moves request contexts in and out; its state covers the current call. */
  readonly bridge: ContextBridge;
  readonly #modulesDir: string | undefined;
  readonly #logger: Logger;
  readonly #envMetaRef: number;
  /** Registry slots holding the current call's environment and its loaded-modules table. */
  readonly #currentEnvRef: number;
  /** The registry slot of the environment `load` and `require` use: #currentEnvRef, or a static unit's. */
  #envSlot: number;
  /** True while #currentEnvRef holds a per-call environment that `reset` must let go of. */
  #holdsCallEnv = false;
  readonly #loadedRef: number;
  /** Compiled modules by name: each file is read once per VM, i.e. once per reload. */
  readonly #modules = new Map<string, number>();
  /** False until `require` first runs in the current environment: its cache table is made then. */
  #loadedFresh = false;
  #deadline = 0;
  #timeoutMs = 0;
  #timedOut = false;
  readonly #hook: Hook;

  constructor(options: VmOptions) {
    this.#modulesDir = options.modulesDir;
    this.#logger = options.logger;
    const L = lauxlib.luaL_newstate();
    this.L = L;
    this.#hook = (state) => {
      if (performance.now() <= this.#deadline) return;
      this.#timedOut = true;
      // From now on every instruction raises, so a script that catches the
      // error with pcall cannot keep running.
      lua.lua_sethook(state, this.#hook, lua.LUA_MASKCOUNT, 1);
      raise(state, `script exceeded its ${this.#timeoutMs} ms timeout`);
    };
    lua.lua_atnativeerror(L, (state) => {
      const err = lua.lua_touserdata(state, -1);
      lua.lua_pushstring(state, err instanceof Error ? err.message : String(err));
      return 1;
    });
    this.bridge = new ContextBridge(L);
    installSandbox(L, {
      print: this.#print,
      require: this.#require,
      load: this.#load,
      expand: this.bridge.expand,
    });
    this.#envMetaRef = lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX);
    lua.lua_pushboolean(L, false);
    this.#currentEnvRef = lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX);
    this.#envSlot = this.#currentEnvRef;
    lua.lua_pushboolean(L, false);
    this.#loadedRef = lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX);
    compactStack(L);
  }

  /** Compiles `source` (text only, never bytecode) and keeps it; returns its registry ref. */
  compile(source: string, chunkName: string): { ref: number } | { error: string } {
    const L = this.L;
    const status = loadText(L, source, chunkName);
    if (status !== lua.LUA_OK) {
      const message = this.errorText(-1);
      lua.lua_pop(L, 1);
      return { error: message };
    }
    return { ref: lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX) };
  }

  /** Starts the budget of one call; 0 disables it. */
  arm(timeoutMs: number): void {
    this.#timedOut = false;
    this.#timeoutMs = timeoutMs;
    if (timeoutMs > 0) {
      this.#deadline = performance.now() + timeoutMs;
      lua.lua_sethook(this.L, this.#hook, lua.LUA_MASKCOUNT, HOOK_EVERY);
    } else {
      this.#deadline = Infinity;
      lua.lua_sethook(this.L, null, 0, 0);
    }
  }

  /** True when the last armed budget ran out. */
  get timedOut(): boolean {
    return this.#timedOut;
  }

  /** Pushes a fresh environment and makes it the one `load` and `require` use. */
  pushEnv(): void {
    const L = this.L;
    lua.lua_createtable(L, 0, 4);
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, this.#envMetaRef);
    lua.lua_setmetatable(L, -2);
    lua.lua_pushvalue(L, -1);
    lua.lua_setfield(L, -2, G_KEY);
    this.#useEnv(lua.lua_gettop(L));
  }

  #useEnv(envIndex: number): void {
    lua.lua_pushvalue(this.L, envIndex);
    lua.lua_rawseti(this.L, lua.LUA_REGISTRYINDEX, this.#currentEnvRef);
    this.#envSlot = this.#currentEnvRef;
    this.#holdsCallEnv = true;
    this.#loadedFresh = false;
  }

  /**
   * Runs compiled chunk `ref` once in a persistent environment and keeps its
   * globals as that environment's defaults; returns the environment, or the
   * failure of the top level (the stack is left as it was).
   */
  runStatic(ref: number): { env: StaticEnv } | { error: string } {
    const L = this.L;
    const top = lua.lua_gettop(L);
    // defaults: the library, then (below) what the top level defines.
    lua.lua_createtable(L, 0, 32);
    const defaults = lua.lua_gettop(L);
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, this.#envMetaRef);
    lua.lua_getfield(L, -1, INDEX_KEY);
    copyTable(L, lua.lua_gettop(L), defaults);
    lua.lua_settop(L, defaults);
    // scratch: per-call globals, reading through to the defaults.
    lua.lua_createtable(L, 0, 0);
    const scratch = lua.lua_gettop(L);
    pushProtectedMeta(L, [[INDEX_KEY, defaults]]);
    lua.lua_setmetatable(L, scratch);
    // env: always empty, so every read and write goes through its metatable.
    lua.lua_createtable(L, 0, 0);
    const env = lua.lua_gettop(L);
    pushProtectedMeta(L, [
      [INDEX_KEY, scratch],
      [NEWINDEX_KEY, scratch],
    ]);
    lua.lua_setmetatable(L, env);
    lua.lua_pushvalue(L, env);
    lua.lua_setfield(L, defaults, G_KEY);

    this.#useEnv(env);
    const error = this.runChunk(ref, env);
    if (error !== undefined) {
      lua.lua_settop(L, top);
      return { error };
    }
    // The top level's globals went to scratch: make them defaults.
    copyTable(L, scratch, defaults);
    clearTable(L, scratch);
    clearTable(L, env);
    const scratchEmpty = emptinessProbe(L, scratch);
    const envEmpty = emptinessProbe(L, env);
    const refs: StaticEnv = {
      defaults: (lua.lua_pushvalue(L, defaults), lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX)),
      clean: () => scratchEmpty() && envEmpty(),
      scratch: (lua.lua_pushvalue(L, scratch), lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX)),
      env: (lua.lua_pushvalue(L, env), lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX)),
    };
    lua.lua_settop(L, top);
    return { env: refs };
  }

  /** Makes a static unit's environment the one `load` and `require` use for this call. */
  enterStatic(env: StaticEnv): void {
    this.#envSlot = env.env;
    this.#loadedFresh = false;
  }

  /** Pushes global `name` of a static unit as the top level left it. */
  pushStaticGlobal(env: StaticEnv, name: LuaString): number {
    const L = this.L;
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, env.defaults);
    lua.lua_pushstring(L, name);
    const t = lua.lua_rawget(L, -2);
    lua.lua_remove(L, -2);
    return t;
  }

  /** Forgets what the last call assigned in a static unit's environment. */
  scrubStatic(env: StaticEnv): void {
    if (env.clean()) return;
    const L = this.L;
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, env.scratch);
    clearTable(L, lua.lua_gettop(L));
    // Only rawset can write to env itself; empty it all the same.
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, env.env);
    clearTable(L, lua.lua_gettop(L));
    lua.lua_pop(L, 2);
  }

  /** Runs compiled chunk `ref` with the environment at `envIndex` (absolute). */
  runChunk(ref: number, envIndex: number): CallFailure {
    const L = this.L;
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, ref);
    lua.lua_pushvalue(L, envIndex);
    lua.lua_setupvalue(L, -2, 1);
    return this.pcall(0, 0);
  }

  /** `lua_pcall` that turns a failure into its message and pops it. */
  pcall(nargs: number, nresults: number): CallFailure {
    const L = this.L;
    if (lua.lua_pcall(L, nargs, nresults, 0) === lua.LUA_OK) return undefined;
    const message = this.errorText(-1);
    lua.lua_pop(L, 1);
    return message;
  }

  /** The text of an error value; never runs Lua code (no `__tostring`). */
  errorText(idx: number): string {
    return readText(this.L, idx) ?? `(error object is a ${typeName(this.L, idx)} value)`;
  }

  /** Drops what a call left on the stack and detaches its environment. */
  reset(): void {
    const L = this.L;
    lua.lua_settop(L, 0);
    if (this.#holdsCallEnv) {
      lua.lua_pushboolean(L, false);
      lua.lua_rawseti(L, lua.LUA_REGISTRYINDEX, this.#currentEnvRef);
      this.#holdsCallEnv = false;
    }
    lua.lua_sethook(L, null, 0, 0);
    this.bridge.clear();
    compactStack(L);
  }

  readonly #print: JsFunction = (L) => {
    const parts: string[] = [];
    const n = lua.lua_gettop(L);
    for (let i = 1; i <= n; i++) {
      parts.push(decode(lauxlib.luaL_tolstring(L, i)));
      lua.lua_pop(L, 1);
    }
    this.#logger.info({ lua: parts.join('\t') }, 'lua print');
    return 0;
  };

  /** `require(name)`: `a.b` is `<modulesDir>/a/b.lua`; one evaluation per call, in the caller's environment. */
  readonly #require: JsFunction = (L) => {
    const name = decode(lauxlib.luaL_checklstring(L, 1));
    if (this.#modulesDir === undefined)
      return raise(L, `require('${name}'): no module folder for this script`);
    if (!MODULE_NAME.test(name)) return raise(L, `require('${name}'): invalid module name`);
    if (!this.#loadedFresh) {
      lua.lua_createtable(L, 0, 2);
      lua.lua_rawseti(L, lua.LUA_REGISTRYINDEX, this.#loadedRef);
      this.#loadedFresh = true;
    }
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, this.#loadedRef);
    const loadedIndex = lua.lua_gettop(L);
    if (lua.lua_getfield(L, loadedIndex, name) !== lua.LUA_TNIL) return 1;
    lua.lua_pop(L, 1);
    let ref = this.#modules.get(name);
    if (ref === undefined) {
      const file = join(this.#modulesDir, ...name.split('.')) + '.lua';
      const rel = relative(this.#modulesDir, file);
      if (rel.startsWith('..') || isAbsolute(rel))
        return raise(L, `require('${name}'): outside the module folder`);
      let source: string;
      try {
        source = readFileSync(file, 'utf8');
      } catch (err) {
        return raise(
          L,
          `require('${name}'): cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
        );
      }
      const compiled = this.compile(source, `=${name.replaceAll('.', '/')}.lua`);
      if ('error' in compiled) return raise(L, `require('${name}'): ${compiled.error}`);
      ref = compiled.ref;
      this.#modules.set(name, ref);
    }
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, ref);
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, this.#envSlot);
    lua.lua_setupvalue(L, -2, 1);
    lua.lua_pushstring(L, name);
    lua.lua_call(L, 1, 1);
    if (lua.lua_type(L, -1) === lua.LUA_TNIL) {
      lua.lua_pop(L, 1);
      lua.lua_pushboolean(L, true);
    }
    lua.lua_pushvalue(L, -1);
    lua.lua_setfield(L, loadedIndex, name);
    return 1;
  };

  /** `load(text [, name [, mode [, env]]])`: text chunks only; the default environment is the caller's. */
  readonly #load: JsFunction = (L) => {
    const nargs = lua.lua_gettop(L);
    if (lua.lua_type(L, 1) !== lua.LUA_TSTRING) return raise(L, 'load: only string chunks are accepted');
    const text = decode(lua.lua_tolstring(L, 1) as Uint8Array);
    const name =
      nargs >= 2 && lua.lua_type(L, 2) === lua.LUA_TSTRING
        ? decode(lua.lua_tolstring(L, 2) as Uint8Array)
        : '=(load)';
    if (loadText(L, text, name) !== lua.LUA_OK) {
      lua.lua_pushnil(L);
      lua.lua_pushvalue(L, -2);
      return 2;
    }
    if (nargs >= 4) lua.lua_pushvalue(L, 4);
    else lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, this.#envSlot);
    lua.lua_setupvalue(L, -2, 1);
    return 1;
  };
}

/** Raw-copies every entry of table `from` into table `to` (absolute indexes). */
function copyTable(L: LuaState, from: number, to: number): void {
  lua.lua_pushnil(L);
  while (lua.lua_next(L, from)) {
    lua.lua_pushvalue(L, -2);
    lua.lua_insert(L, -2);
    lua.lua_rawset(L, to);
  }
}

/** Pushes a metatable with the given fields (each the value at an absolute index) that scripts cannot read or replace. */
function pushProtectedMeta(L: LuaState, fields: readonly [LuaString, number][]): void {
  lua.lua_createtable(L, 0, fields.length + 1);
  for (const [key, index] of fields) {
    lua.lua_pushvalue(L, index);
    lua.lua_setfield(L, -2, key);
  }
  lua.lua_pushboolean(L, false);
  lua.lua_setfield(L, -2, METATABLE_KEY);
}

/** Removes every entry of the table at absolute index `t`; costs one `next` when it is empty. */
function clearTable(L: LuaState, t: number): void {
  lua.lua_pushnil(L);
  while (lua.lua_next(L, t)) {
    lua.lua_pop(L, 1);
    lua.lua_pushvalue(L, -1);
    lua.lua_pushnil(L);
    lua.lua_rawset(L, t);
  }
}

function loadText(L: LuaState, source: string, chunkName: string): number {
  const bytes = Buffer.from(source, 'utf8');
  let done = false;
  return lua.lua_load(
    L,
    () => {
      if (done) return null;
      done = true;
      return bytes;
    },
    null,
    chunkName,
    't',
  );
}
