/**
 * A Lua worker thread (see pool.ts): compiles and runs script programs for
 * the main thread and replies on the port it was given. The main thread's
 * watchdog terminates this thread when a call runs past its deadline in
 * native code, and the thread's heap ceiling ends it when tables outgrow
 * it; everything a program held is rebuilt in the next worker.
 */
import { workerData } from 'node:worker_threads';
import { MemoryGuard } from './memory-guard.js';
import type { LuaErrorCode, LuaProgram as Program } from './program.js';
import {
  epochNow,
  type FromWorker,
  type ProgramSpec,
  type ToWorker,
  type WorkerData,
} from './worker-protocol.js';

// Before fengari loads: it allocates every string through the global Uint8Array.
const guard = new MemoryGuard();
guard.install();

const { LuaProgram, ScriptLoadError } = await import('./program.js');
const { NodeError } = await import('../core/errors.js');
const { fengariShapeProblem } = await import('./fengari-internals.js');
/** Checked once, as the worker starts; every load reply carries it (the gateway logs it once). */
const shapes = fengariShapeProblem();

const MIB = 1048576;
const data = workerData as WorkerData;
const status = new Int32Array(data.shared, 0, 2);
const deadline = new Float64Array(data.shared, 8, 1);
const programs = new Map<number, Program>();
/** Memory limits of the programs this worker holds (a run message carries the spec only the first time). */
const limits = new Map<number, number>();
let prints: string[] = [];

const print = (line: string): void => {
  prints.push(line);
};
const onArm = (timeoutMs: number): void => {
  deadline[0] = timeoutMs > 0 ? epochNow() + timeoutMs : Infinity;
};

function load(spec: ProgramSpec): Program {
  return LuaProgram.load(spec.units, {
    timeoutMs: spec.timeoutMs,
    modulesDir: spec.modulesDir,
    ports: spec.ports,
    print,
    memory: guard,
    onArm,
  });
}

function handle(msg: Exclude<ToWorker, { op: 'drop' }>): FromWorker {
  const spec = msg.spec;
  try {
    if (msg.op === 'load') {
      guard.start(msg.spec.memoryLimitMb * MIB);
      load(msg.spec);
      return { seq: msg.seq, ok: true, prints, ...(shapes === undefined ? {} : { fallback: shapes }) };
    }
    let program = programs.get(msg.program);
    if (program === undefined) {
      if (spec === undefined) throw new Error(`program ${msg.program} is not loaded in this worker`);
      guard.start(spec.memoryLimitMb * MIB);
      program = load(spec);
      programs.set(msg.program, program);
      guard.stop();
    }
    guard.start((spec?.memoryLimitMb ?? limits.get(msg.program) ?? 64) * MIB);
    const result = program.execute(msg.ctx);
    return { seq: msg.seq, ok: true, result, prints };
  } catch (err) {
    if (err instanceof ScriptLoadError) {
      const unit = spec?.units.indexOf(err.unit) ?? -1;
      return {
        seq: msg.seq,
        ok: false,
        code: err.code,
        message: err.message,
        script: err.unit.label,
        unit,
        prints,
      };
    }
    if (err instanceof NodeError) {
      const script = err.metadata.script;
      return {
        seq: msg.seq,
        ok: false,
        code: err.code as LuaErrorCode,
        message: err.message,
        ...(typeof script === 'string' ? { script } : {}),
        prints,
      };
    }
    return { seq: msg.seq, ok: false, code: 'LUA_EXECUTION_ERROR', message: String(err), prints };
  } finally {
    guard.stop();
    deadline[0] = 0;
  }
}

data.port.on('message', (msg: ToWorker) => {
  if (msg.op === 'drop') {
    programs.delete(msg.program);
    limits.delete(msg.program);
    return;
  }
  if (msg.op === 'run' && msg.spec !== undefined) limits.set(msg.program, msg.spec.memoryLimitMb);
  prints = [];
  Atomics.store(status, 1, msg.seq);
  const reply = handle(msg);
  Atomics.store(status, 1, 0);
  try {
    data.port.postMessage(reply);
  } catch (err) {
    data.port.postMessage({
      seq: msg.seq,
      ok: false,
      code: 'LUA_UNMARSHAL_ERROR',
      message: `the result cannot leave the Lua worker: ${String(err)}`,
      prints,
    } satisfies FromWorker);
  }
  if (data.notify) {
    Atomics.add(status, 0, 1);
    Atomics.notify(status, 0);
  }
});

// Tells the pool this worker has loaded its sources and takes calls at once.
data.port.postMessage({ seq: 0, ok: true, prints: [] } satisfies FromWorker);
