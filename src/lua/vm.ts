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
import type { Logger } from '../core/logger.js';
import { compactStack, dropMessageHandler, emptinessProbe } from './fengari-internals.js';
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
  /** Where `print` lines go: the node's logger, or (in a Lua worker) the call's reply. */
  print: PrintSink;
  /** Measures what the current call holds; absent, memory is not capped (in-process use). */
  memory?: MemoryMeter;
  /** Told the budget of every unit as it starts (a Lua worker publishes it to its watchdog). */
  onArm?: (timeoutMs: number) => void;
}

/** Receives `print` output; the VM has already cut it to the per-call bounds. */
export type PrintSink = (line: string) => void;

/** What the count hook asks about memory every HOOK_EVERY instructions. */
export interface MemoryMeter {
  /** True when the running call holds more than its limit. */
  over(): boolean;
  /** True once the running call was refused an allocation (the error it raised may have been caught). */
  readonly exceeded: boolean;
  readonly limitMb: number;
}

/** Why a call's budget ran out. */
export type Overrun = 'timeout' | 'memory';

/** `print` bounds per call: lines, and bytes per line; the rest is dropped with one notice. */
export const PRINT_MAX_LINES = 20;
export const PRINT_MAX_LINE_BYTES = 1024;

/** Wraps a logger as a PrintSink (in-process use: tests, benchmarks). */
export function logPrint(logger: Logger): PrintSink {
  return (line) => logger.info({ lua: line }, 'lua print');
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
  readonly #printSink: PrintSink;
  readonly #memory: MemoryMeter | undefined;
  readonly #onArm: ((timeoutMs: number) => void) | undefined;
  #printed = 0;
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
  #overrun: Overrun | undefined;
  readonly #hook: Hook;

  constructor(options: VmOptions) {
    this.#modulesDir = options.modulesDir;
    this.#printSink = options.print;
    this.#memory = options.memory;
    this.#onArm = options.onArm;
    const L = lauxlib.luaL_newstate();
    this.L = L;
    this.#hook = (state) => {
      if (this.#overrun === undefined) {
        if (performance.now() > this.#deadline) this.#overrun = 'timeout';
        else if (this.#memory?.over() === true) this.#overrun = 'memory';
        else return;
      }
      // From now on every instruction raises, so a script that catches the
      // error with pcall cannot keep running. The message handler of an
      // xpcall would run here with hooks off (we are inside the hook) and
      // could loop forever, so the error skips it.
      lua.lua_sethook(state, this.#hook, lua.LUA_MASKCOUNT, 1);
      dropMessageHandler(state);
      raise(state, this.#overrunMessage());
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

  /** Starts the budget of one call; a timeout of 0 disables the time budget. */
  arm(timeoutMs: number): void {
    this.#overrun = undefined;
    this.#timeoutMs = timeoutMs;
    this.#deadline = timeoutMs > 0 ? performance.now() + timeoutMs : Infinity;
    this.#onArm?.(timeoutMs);
    if (timeoutMs > 0 || this.#memory !== undefined)
      lua.lua_sethook(this.L, this.#hook, lua.LUA_MASKCOUNT, HOOK_EVERY);
    else lua.lua_sethook(this.L, null, 0, 0);
  }

  /**
   * Ends the current call's budget from outside the hook (an allocation over
   * the memory limit): every following instruction raises.
   */
  overrun(why: Overrun): void {
    this.#overrun ??= why;
    lua.lua_sethook(this.L, this.#hook, lua.LUA_MASKCOUNT, 1);
  }

  /** Why the last armed budget ran out, if it did. */
  get overrunReason(): Overrun | undefined {
    return this.#overrun ?? (this.#memory?.exceeded === true ? 'memory' : undefined);
  }

  /** True when the last armed budget ran out of time. */
  get timedOut(): boolean {
    return this.#overrun === 'timeout';
  }

  #overrunMessage(): string {
    return this.#overrun === 'memory'
      ? `script exceeded its memory limit of ${this.#memory?.limitMb ?? 0} MiB`
      : `script exceeded its ${this.#timeoutMs} ms timeout`;
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
    if (this.#printed > PRINT_MAX_LINES)
      this.#printSink(
        `(${this.#printed - PRINT_MAX_LINES} more print lines dropped: at most ${PRINT_MAX_LINES} per run)`,
      );
    this.#printed = 0;
    compactStack(L);
  }

  /** `print(...)`: at most PRINT_MAX_LINES lines per call, each cut to PRINT_MAX_LINE_BYTES. */
  readonly #print: JsFunction = (L) => {
    if (++this.#printed > PRINT_MAX_LINES) return 0;
    const parts: string[] = [];
    let bytes = 0;
    const n = lua.lua_gettop(L);
    for (let i = 1; i <= n && bytes <= PRINT_MAX_LINE_BYTES; i++) {
      const text = lauxlib.luaL_tolstring(L, i);
      bytes += text.length + 1;
      parts.push(decode(text.length > PRINT_MAX_LINE_BYTES ? text.subarray(0, PRINT_MAX_LINE_BYTES) : text));
      lua.lua_pop(L, 1);
    }
    const line = parts.join('\t');
    this.#printSink(line.length > PRINT_MAX_LINE_BYTES ? `${line.slice(0, PRINT_MAX_LINE_BYTES)}…` : line);
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
