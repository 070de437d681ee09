import { lauxlib, lua, to_luastring, type LuaState } from 'fengari';
import type { Context } from '../core/context.js';
import { NodeError } from '../core/errors.js';
import { applyContext, type ScriptContext, type Unmarshalled } from './marshal.js';
import { ConversionError, readText, typeName } from './values.js';
import { hasStaticTopLevel } from './chunk-shape.js';
import { LuaVm, type MemoryMeter, type Overrun, type PrintSink, type StaticEnv } from './vm.js';

const EXECUTE = to_luastring('execute');

export type LuaErrorCode =
  | 'LUA_LOAD_ERROR'
  | 'LUA_MARSHAL_ERROR'
  | 'LUA_MISSING_EXECUTE'
  | 'LUA_EXECUTION_ERROR'
  | 'LUA_UNMARSHAL_ERROR'
  | 'LUA_BAD_PORT'
  | 'LUA_TIMEOUT'
  | 'LUA_MEMORY_LIMIT';

/** One script: its text, the chunk name Lua puts in messages, and the config field it came from. */
export interface ScriptUnit {
  source: string;
  chunkName: string;
  /** `inline`, a file path, or `functions[2]`: where a failure points. */
  label: string;
}

export interface ProgramOptions {
  /** Budget of each unit (top level plus `execute`), in ms; 0 disables it. */
  timeoutMs: number;
  modulesDir: string | undefined;
  print: PrintSink;
  /** Caps what one call holds (Lua workers only); absent, memory is not capped. */
  memory?: MemoryMeter;
  /** Told each unit's budget as it starts (Lua workers publish it to their watchdog). */
  onArm?: (timeoutMs: number) => void;
  /** Port names `execute` may return as its second value besides nothing; `success` always means success. */
  ports: readonly ('success' | 'respond')[];
}

type Failure = { code: LuaErrorCode; message: string };

/** A run's outcome before it touches the engine's Context: the port and what the script changed. */
export interface RunResult {
  port: 'success' | 'respond';
  back: Unmarshalled;
}

/** The code of a call whose budget ran out, or `otherwise`. */
function overrunCode(vm: LuaVm, otherwise: LuaErrorCode): LuaErrorCode {
  const why = vm.overrunReason;
  return why === 'timeout' ? 'LUA_TIMEOUT' : why === 'memory' ? 'LUA_MEMORY_LIMIT' : otherwise;
}

/** The failure for a unit whose `execute` (on top of the stack) is not a function. */
function missingExecute(L: LuaState): Failure {
  return {
    code: 'LUA_MISSING_EXECUTE',
    message: `the script defines no global function execute(ctx) (execute is ${typeName(L, -1)})`,
  };
}

/** Whether compiled chunk `ref` may run its top level once (chunk-shape.ts). */
function isStatic(vm: LuaVm, ref: number): boolean {
  lua.lua_rawgeti(vm.L, lua.LUA_REGISTRYINDEX, ref);
  const yes = hasStaticTopLevel(vm.L, -1);
  lua.lua_pop(vm.L, 1);
  return yes;
}

/** A script that fails its compile-time validation run. */
export class ScriptLoadError extends Error {
  constructor(
    readonly code: LuaErrorCode,
    readonly unit: ScriptUnit,
    message: string,
  ) {
    super(message);
    this.name = 'ScriptLoadError';
  }
}

interface Compiled {
  unit: ScriptUnit;
  ref: number;
  /** Set when the top level ran once at load: its environment and `execute`. */
  static?: { env: StaticEnv; execute: number };
}

/**
 * Scripts compiled into one VM and run in order against a request: each
 * `execute(ctx)` gets the table the previous one returned. The context is
 * written back only when every unit succeeded, so a failure leaves the
 * request as it was before the node ran.
 */
export class LuaProgram {
  readonly #vm: LuaVm;
  readonly #units: Compiled[];
  readonly #options: ProgramOptions;

  private constructor(vm: LuaVm, units: Compiled[], options: ProgramOptions) {
    this.#vm = vm;
    this.#units = units;
    this.#options = options;
  }

  /**
   * Compiles every unit and runs its top level once (under the same budget as
   * a request) to check that it defines `execute`. Throws ScriptLoadError.
   */
  static load(units: readonly ScriptUnit[], options: ProgramOptions): LuaProgram {
    const vm = new LuaVm({
      modulesDir: options.modulesDir,
      print: options.print,
      ...(options.memory === undefined ? {} : { memory: options.memory }),
      ...(options.onArm === undefined ? {} : { onArm: options.onArm }),
    });
    const compiled: Compiled[] = [];
    for (const unit of units) {
      const result = vm.compile(unit.source, unit.chunkName);
      if ('error' in result) throw new ScriptLoadError('LUA_LOAD_ERROR', unit, result.error);
      compiled.push({ unit, ref: result.ref });
    }
    const program = new LuaProgram(vm, compiled, options);
    for (const entry of compiled) {
      try {
        vm.arm(options.timeoutMs);
        const failure = isStatic(vm, entry.ref) ? program.#loadStatic(entry) : program.#prepare(entry);
        if (failure !== undefined) throw new ScriptLoadError(failure.code, entry.unit, failure.message);
      } finally {
        vm.reset();
      }
    }
    return program;
  }

  /** Ends the running call's budget from outside the VM (an allocation over the memory limit). */
  overrun(why: Overrun): void {
    this.#vm.overrun(why);
  }

  /** How many units run their top level once per program rather than once per request. */
  get staticUnits(): number {
    return this.#units.filter((u) => u.static !== undefined).length;
  }

  /** Runs a static unit's top level for good and keeps its `execute`. */
  #loadStatic(entry: Compiled): Failure | undefined {
    const vm = this.#vm;
    const L = vm.L;
    const result = vm.runStatic(entry.ref);
    if ('error' in result) return { code: overrunCode(vm, 'LUA_LOAD_ERROR'), message: result.error };
    const t = vm.pushStaticGlobal(result.env, EXECUTE);
    if (t !== lua.LUA_TFUNCTION) return missingExecute(L);
    entry.static = { env: result.env, execute: lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX) };
    return undefined;
  }

  /** Runs the units against `ctx`; returns the port to leave through or throws NodeError. */
  run(ctx: Context): 'success' | 'respond' {
    const { port, back } = this.execute(ctx);
    applyContext(ctx, back);
    return port;
  }

  /** Runs the units against `ctx` and returns what they changed, without touching `ctx`; throws NodeError. */
  execute(ctx: ScriptContext): RunResult {
    const vm = this.#vm;
    const L = vm.L;
    try {
      vm.bridge.push(ctx);
      const ctxIndex = lua.lua_gettop(L);
      let port: 'success' | 'respond' = 'success';
      for (const entry of this.#units) {
        vm.arm(this.#options.timeoutMs);
        const failure = this.#prepare(entry);
        if (failure !== undefined) throw this.#fail(failure.code, entry.unit, failure.message);
        lua.lua_pushvalue(L, ctxIndex);
        const error = vm.pcall(1, 2);
        if (error !== undefined) {
          const code = overrunCode(
            vm,
            vm.bridge.failure !== undefined ? 'LUA_MARSHAL_ERROR' : 'LUA_EXECUTION_ERROR',
          );
          throw this.#fail(code, entry.unit, error);
        }
        if (lua.lua_type(L, -2) !== lua.LUA_TTABLE) {
          throw this.#fail(
            'LUA_UNMARSHAL_ERROR',
            entry.unit,
            `execute(ctx) must return the ctx table; got ${typeName(L, -2)}`,
          );
        }
        port = this.#port(entry.unit, port);
        lua.lua_copy(L, -2, ctxIndex);
        lua.lua_settop(L, ctxIndex);
      }
      let back;
      try {
        back = vm.bridge.read(ctxIndex);
      } catch (err) {
        if (!(err instanceof ConversionError)) throw err;
        throw this.#fail('LUA_UNMARSHAL_ERROR', this.#units.at(-1)?.unit, err.message);
      }
      return { port, back };
    } finally {
      for (const entry of this.#units) if (entry.static !== undefined) vm.scrubStatic(entry.static.env);
      vm.reset();
    }
  }

  /**
   * Runs the unit's top level in a fresh environment and leaves that
   * environment's `execute` on the stack; returns a failure otherwise.
   */
  #prepare(entry: Compiled): Failure | undefined {
    const vm = this.#vm;
    const L = vm.L;
    if (entry.static !== undefined) {
      vm.enterStatic(entry.static.env);
      lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, entry.static.execute);
      return undefined;
    }
    vm.pushEnv();
    const env = lua.lua_gettop(L);
    const error = vm.runChunk(entry.ref, env);
    if (error !== undefined) return { code: overrunCode(vm, 'LUA_LOAD_ERROR'), message: error };
    lua.lua_pushstring(L, EXECUTE);
    if (lua.lua_rawget(L, env) !== lua.LUA_TFUNCTION) return missingExecute(L);
    lua.lua_remove(L, env);
    return undefined;
  }

  /** Reads the optional second return value (top of the stack) against the accepted ports. */
  #port(unit: ScriptUnit, current: 'success' | 'respond'): 'success' | 'respond' {
    const L = this.#vm.L;
    const t = lua.lua_type(L, -1);
    if (t === lua.LUA_TNIL) return current;
    const name = t === lua.LUA_TSTRING ? readText(L, -1) : undefined;
    if (name === 'success') return current;
    if (name === 'respond' && this.#options.ports.includes('respond')) return 'respond';
    const accepted = this.#options.ports.map((p) => `"${p}"`).join(' or ');
    const shown = name === undefined ? `a ${typeName(L, -1)}` : `"${name}"`;
    throw this.#fail(
      'LUA_BAD_PORT',
      unit,
      `execute(ctx) returned ${shown} as its port; expected ${accepted} or no second value`,
    );
  }

  #fail(code: LuaErrorCode, unit: ScriptUnit | undefined, message: string): NodeError {
    return new NodeError(code, message, { metadata: unit === undefined ? {} : { script: unit.label } });
  }
}
