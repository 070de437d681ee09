import type { buildSync } from 'esbuild';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import type { LuaErrorCode } from './program.js';
import {
  SHARED_BYTES,
  epochNow,
  type ContextSnapshot,
  type FromWorker,
  type ProgramSpec,
  type ToWorker,
  type WorkerData,
} from './worker-protocol.js';

/**
 * Where Lua runs: worker threads the main thread can stop. fengari cannot
 * interrupt its own native code (a pathological pattern, a huge
 * `string.rep`) nor account memory, so scripts run in workers with a heap
 * ceiling, and a watchdog here terminates a worker whose call runs past its
 * deadline plus a grace period; the call fails with LUA_TIMEOUT and a fresh
 * worker takes over. Requests call a pool of workers asynchronously, so the
 * event loop keeps serving while a script runs; the compile-time validation
 * of a config (plugin `create`, which is synchronous) calls a separate
 * validator worker and blocks on it with Atomics.wait, bounded the same way.
 */

/** Request-time workers: scripts are CPU work, so more threads than cores only add latency. */
export const POOL_SIZE = 2;
/** A fresh worker loads its sources and fengari before its first call; not the script's time. */
const BOOT_MS = 20000;
/** The compile-time validation run of a script with `timeout_ms: 0` still ends here. */
export const LOAD_CEILING_MS = 10000;
/** Heap ceiling of a worker: twice the largest per-call limit it may serve, plus its own needs. */
const MIN_HEAP_MB = 256;

/** Time past a unit's deadline before its worker is terminated (the count hook normally ends it first). */
export function graceMs(timeoutMs: number): number {
  return Math.min(1000, Math.max(20, timeoutMs / 4));
}

/**
 * Runs in the worker before anything else: tsx's loader when the gateway
 * runs from TypeScript sources (a worker does not inherit hooks registered
 * with module.register), then worker.ts.
 */
const BOOTSTRAP = `
const { workerData } = require('node:worker_threads');
(async () => {
  // An eval'd worker runs no --import hooks, even when the process has them.
  if (workerData.tsx !== undefined) (await import(workerData.tsx)).register();
  await import(workerData.entry);
})().catch((err) => process.nextTick(() => { throw err; }));
`;

const ENTRY = new URL(`./worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url).href;

function tsxLoader(): string | undefined {
  if (!ENTRY.endsWith('.ts')) return undefined;
  try {
    return import.meta.resolve('tsx/esm/api');
  } catch {
    return undefined;
  }
}

/**
 * The worker's sources bundled into one JavaScript module (esbuild, which
 * tsx ships with), built once per process: a worker then boots in tens of
 * milliseconds instead of the second tsx takes to load and transpile, which
 * is how fast a stopped worker is replaced. Undefined when the sources are
 * JavaScript already or esbuild is not there (the BOOTSTRAP path).
 */
let bundled: URL | null | undefined = null;

function workerBundle(): URL | undefined {
  if (bundled !== null) return bundled;
  bundled = undefined;
  if (!ENTRY.endsWith('.ts')) return bundled;
  try {
    const fromTsx = createRequire(createRequire(import.meta.url).resolve('tsx'));
    const esbuild = fromTsx('esbuild') as { buildSync: typeof buildSync };
    const entry = fileURLToPath(ENTRY);
    const out = esbuild.buildSync({
      entryPoints: [entry],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      write: false,
      logLevel: 'silent',
      // fengari's CommonJS requires Node built-ins; an ES module has no `require` of its own.
      banner: {
        js: `import { createRequire as __cr } from 'node:module'; const require = __cr(${JSON.stringify(entry)});`,
      },
    });
    const text = out.outputFiles[0]?.text;
    if (text === undefined) return bundled;
    // A file, not a data: URL: Node parses a large data: module several times slower.
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-lua-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'worker.mjs');
    writeFileSync(file, text);
    bundled = pathToFileURL(file);
  } catch {
    bundled = undefined;
  }
  return bundled;
}

type Failure = Extract<FromWorker, { ok: false }>;

function failure(seq: number, code: LuaErrorCode, message: string, script?: string): Failure {
  return { seq, ok: false, code, message, prints: [], ...(script === undefined ? {} : { script }) };
}

/** Calls one request worker may have queued: enough to batch wake-ups, few enough to move on a kill. */
const MAX_IN_FLIGHT = 32;
/** How often the watchdog looks at a busy worker whose running call has no deadline yet. */
const IDLE_CHECK_MS = 25;

interface Call {
  seq: number;
  program: number;
  spec: ProgramSpec;
  ctx: ContextSnapshot;
  resolve: (reply: FromWorker) => void;
  /** Set while the call waits in the pool's queue for a worker with room (timeout_ms bounds the wait). */
  timer: NodeJS.Timeout | undefined;
}

class LuaWorker {
  readonly worker: Worker;
  readonly port: MessagePort;
  /** [0] replies posted (a synchronous caller waits on it), [1] seq of the call running now (0: none). */
  readonly status: Int32Array;
  /** [0] the running unit's deadline, epoch ms (0: nothing runs; Infinity: no time budget). */
  readonly deadline: Float64Array;
  /** Programs this worker compiled (or was sent): later calls omit the spec. */
  readonly loaded = new Set<number>();
  /** Calls sent and not answered, in the order the worker runs them. */
  readonly inFlight = new Map<number, Call>();
  watchdog: NodeJS.Timeout | undefined;
  /** Set when the worker has loaded its sources (its first message). */
  ready = false;
  dead = false;

  constructor(heapMb: number, notify: boolean) {
    const shared = new SharedArrayBuffer(SHARED_BYTES);
    this.status = new Int32Array(shared, 0, 2);
    this.deadline = new Float64Array(shared, 8, 1);
    const channel = new MessageChannel();
    this.port = channel.port1;
    const bundle = workerBundle();
    const data: WorkerData = {
      port: channel.port2,
      shared,
      notify,
      entry: ENTRY,
      tsx: bundle === undefined ? tsxLoader() : undefined,
    };
    this.worker = new Worker(bundle ?? BOOTSTRAP, {
      eval: bundle === undefined,
      // The bundle is plain JavaScript: no `--import tsx` (tests run with it) to load again.
      ...(bundle === undefined ? {} : { execArgv: [] }),
      workerData: data,
      transferList: [channel.port2],
      resourceLimits: { maxOldGenerationSizeMb: heapMb },
    });
    this.worker.unref();
  }

  kill(): void {
    this.dead = true;
    clearTimeout(this.watchdog);
    this.port.close();
    void this.worker.terminate();
  }
}

export class LuaPool {
  readonly #workers: (LuaWorker | undefined)[] = new Array<LuaWorker | undefined>(POOL_SIZE).fill(undefined);
  readonly #queue: Call[] = [];
  #validator: LuaWorker | undefined;
  #seq = 0;
  #nextProgram = 1;
  #maxLimitMb = 64;

  /** A new program id. */
  register(spec: ProgramSpec): number {
    this.#maxLimitMb = Math.max(this.#maxLimitMb, spec.memoryLimitMb);
    return this.#nextProgram++;
  }

  /**
   * Compiles `spec` and runs its top levels (the compile-time validation),
   * blocking until the validator answers or the watchdog stops it.
   */
  loadSync(program: number, spec: ProgramSpec): FromWorker {
    const timeoutMs = spec.timeoutMs > 0 ? spec.timeoutMs : LOAD_CEILING_MS;
    if (this.#validator?.dead === true) this.#validator = undefined;
    const w = (this.#validator ??= this.#spawnValidator());
    const seq = ++this.#seq;
    const before = Atomics.load(w.status, 0);
    const posted = epochNow();
    w.port.postMessage({ op: 'load', seq, program, spec: { ...spec, timeoutMs } } satisfies ToWorker);
    for (;;) {
      const got = receiveMessageOnPort(w.port) as { message: FromWorker } | undefined;
      if (got !== undefined) {
        if (got.message.seq !== seq) continue;
        // Start the request workers now, after the validator (they compete for the same cores),
        // so the first request does not wait for them to boot.
        for (let i = 0; i < POOL_SIZE; i++)
          this.#workers[i] ??= this.#attach(new LuaWorker(this.#heapMb(), false), i);
        return got.message;
      }
      const d = w.deadline[0] ?? 0;
      const now = epochNow();
      // Not started yet: the validator is still booting.
      const until =
        d === 0 ? posted + BOOT_MS : d === Infinity ? posted + LOAD_CEILING_MS : d + graceMs(timeoutMs);
      if (now >= until) {
        w.kill();
        // Boot the next validator now, while the event loop is free again.
        this.#validator = this.#spawnValidator();
        return failure(seq, 'LUA_TIMEOUT', stoppedMessage(timeoutMs));
      }
      Atomics.wait(w.status, 0, before, Math.min(until - now, 100));
    }
  }

  /**
   * Runs a program against a context snapshot on the least busy worker.
   * Resolves with the worker's reply, or with LUA_TIMEOUT when no worker had
   * room within the budget or the watchdog stopped the call. `signal` stops
   * a call without a time budget (the sandbox deadline).
   */
  run(program: number, spec: ProgramSpec, ctx: ContextSnapshot, signal?: AbortSignal): Promise<FromWorker> {
    return new Promise((resolve) => {
      const call: Call = { seq: ++this.#seq, program, spec, ctx, resolve, timer: undefined };
      if (signal !== undefined && spec.timeoutMs === 0) {
        const onAbort = (): void => this.#abort(call);
        signal.addEventListener('abort', onAbort, { once: true });
        call.resolve = (reply) => {
          signal.removeEventListener('abort', onAbort);
          resolve(reply);
        };
      }
      const w = this.#freeWorker();
      if (w !== undefined) {
        this.#dispatch(w, call);
        return;
      }
      this.#queue.push(call);
      if (spec.timeoutMs > 0) {
        call.timer = setTimeout(() => {
          const i = this.#queue.indexOf(call);
          if (i < 0) return;
          this.#queue.splice(i, 1);
          call.resolve(
            failure(
              call.seq,
              'LUA_TIMEOUT',
              `no Lua worker was free within timeout_ms (${spec.timeoutMs} ms)`,
            ),
          );
        }, spec.timeoutMs);
      }
    });
  }

  /** Forgets a program in every worker that holds it. */
  drop(program: number): void {
    for (const w of this.#workers) {
      if (w === undefined || w.dead || !w.loaded.delete(program)) continue;
      w.port.postMessage({ op: 'drop', program } satisfies ToWorker);
    }
  }

  #heapMb(): number {
    return Math.max(MIN_HEAP_MB, 2 * this.#maxLimitMb + 64);
  }

  #spawnValidator(): LuaWorker {
    const w = new LuaWorker(this.#heapMb(), true);
    const gone = (): void => {
      w.dead = true;
    };
    w.worker.on('error', gone);
    w.worker.on('exit', gone);
    return w;
  }

  /**
   * A request worker for `slot`: the idle validator when there is one (it has
   * booted already, so a killed worker is replaced at once and a new
   * validator boots in the background), else a new worker.
   */
  #spawnRequestWorker(slot: number): LuaWorker {
    const spare = this.#validator;
    if (spare !== undefined && !spare.dead) {
      this.#validator = this.#spawnValidator();
      for (let m = receiveMessageOnPort(spare.port); m !== undefined; m = receiveMessageOnPort(spare.port))
        if ((m.message as FromWorker).seq === 0) spare.ready = true;
      return this.#attach(spare, slot);
    }
    return this.#attach(new LuaWorker(this.#heapMb(), false), slot);
  }

  #attach(w: LuaWorker, slot: number): LuaWorker {
    w.port.on('message', (reply: FromWorker) => {
      if (reply.seq === 0) {
        w.ready = true;
        return;
      }
      const call = w.inFlight.get(reply.seq);
      if (call === undefined) return;
      w.inFlight.delete(reply.seq);
      if (w.inFlight.size === 0) this.#idle(w);
      call.resolve(reply);
      this.#pump();
    });
    w.port.unref();
    const gone = (err?: Error): void => {
      const wasKilled = w.dead;
      w.dead = true;
      clearTimeout(w.watchdog);
      // After a kill, boot the replacement now (a worker takes up to a second
      // to load its sources); after a crash, on the next call, so a worker
      // that cannot start does not respawn in a loop.
      if (this.#workers[slot] === w)
        this.#workers[slot] = wasKilled ? this.#spawnRequestWorker(slot) : undefined;
      if (wasKilled) return;
      const running = w.inFlight.get(Atomics.load(w.status, 1));
      const oom = (err as NodeJS.ErrnoException | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
      if (running !== undefined) {
        w.inFlight.delete(running.seq);
        running.resolve(
          oom
            ? failure(
                running.seq,
                'LUA_MEMORY_LIMIT',
                'the script outgrew its Lua worker heap; the worker was restarted',
              )
            : failure(running.seq, 'LUA_EXECUTION_ERROR', `the Lua worker stopped: ${String(err ?? 'exit')}`),
        );
      }
      this.#requeue(w);
    };
    w.worker.on('error', gone);
    w.worker.on('exit', () => gone());
    return w;
  }

  /**
   * The live worker with the fewest calls in flight, if one has room; a
   * booting worker only when none is ready (a replacement boots while its
   * sibling serves).
   */
  #freeWorker(): LuaWorker | undefined {
    let best: LuaWorker | undefined;
    for (let i = 0; i < POOL_SIZE; i++) {
      let w = this.#workers[i];
      if (w === undefined || w.dead) w = this.#workers[i] = this.#spawnRequestWorker(i);
      if (w.inFlight.size >= MAX_IN_FLIGHT) continue;
      if (
        best === undefined ||
        (w.ready && !best.ready) ||
        (w.ready === best.ready && w.inFlight.size < best.inFlight.size)
      )
        best = w;
    }
    return best;
  }

  #dispatch(w: LuaWorker, call: Call): void {
    clearTimeout(call.timer);
    const first = !w.loaded.has(call.program);
    const msg: ToWorker = {
      op: 'run',
      seq: call.seq,
      program: call.program,
      ctx: call.ctx,
      ...(first ? { spec: call.spec } : {}),
    };
    try {
      w.port.postMessage(msg);
    } catch (err) {
      call.resolve(
        failure(call.seq, 'LUA_MARSHAL_ERROR', `the context cannot reach the Lua worker: ${String(err)}`),
      );
      return;
    }
    if (first) w.loaded.add(call.program);
    w.inFlight.set(call.seq, call);
    if (w.inFlight.size === 1) {
      w.port.ref();
      this.#watch(w, IDLE_CHECK_MS);
    }
  }

  #idle(w: LuaWorker): void {
    clearTimeout(w.watchdog);
    w.watchdog = undefined;
    w.port.unref();
  }

  /**
   * Looks at the call the worker runs now; terminates the worker once that
   * call's unit is past its deadline plus the grace period.
   */
  #watch(w: LuaWorker, after: number): void {
    w.watchdog = setTimeout(() => {
      if (w.dead || w.inFlight.size === 0) return;
      const running = w.inFlight.get(Atomics.load(w.status, 1));
      const d = w.deadline[0] ?? 0;
      if (running === undefined || d === 0 || d === Infinity) {
        this.#watch(w, IDLE_CHECK_MS);
        return;
      }
      const killAt = d + graceMs(running.spec.timeoutMs);
      const now = epochNow();
      if (now < killAt) {
        this.#watch(w, Math.min(killAt - now + 1, IDLE_CHECK_MS * 4));
        return;
      }
      w.kill();
      w.inFlight.delete(running.seq);
      running.resolve(
        failure(running.seq, 'LUA_TIMEOUT', stoppedMessage(running.spec.timeoutMs), scriptOf(running)),
      );
      this.#requeue(w);
    }, after);
    w.watchdog.unref();
  }

  /** Calls a dead worker had not answered go back to the front of the queue (scripts change nothing outside the call). */
  #requeue(w: LuaWorker): void {
    const waiting = [...w.inFlight.values()];
    w.inFlight.clear();
    this.#queue.unshift(...waiting);
    this.#pump();
  }

  #abort(call: Call): void {
    const i = this.#queue.indexOf(call);
    if (i >= 0) this.#queue.splice(i, 1);
    else {
      const w = this.#workers.find((x) => x?.inFlight.has(call.seq) === true);
      if (w === undefined) return;
      w.kill();
      w.inFlight.delete(call.seq);
      call.resolve(
        failure(call.seq, 'LUA_TIMEOUT', 'the run was cancelled (deadline of the caller)', scriptOf(call)),
      );
      this.#requeue(w);
      return;
    }
    call.resolve(
      failure(call.seq, 'LUA_TIMEOUT', 'the run was cancelled (deadline of the caller)', scriptOf(call)),
    );
  }

  /** Hands queued calls to workers with room. */
  #pump(): void {
    while (this.#queue.length > 0) {
      const w = this.#freeWorker();
      if (w === undefined) return;
      this.#dispatch(w, this.#queue.shift() as Call);
    }
  }
}

function stoppedMessage(timeoutMs: number): string {
  return `script exceeded its ${timeoutMs} ms timeout inside a native function; its Lua worker was stopped and replaced`;
}

function scriptOf(call: Call): string | undefined {
  return call.spec.units.length === 1 ? call.spec.units[0]?.label : undefined;
}

let pool: LuaPool | undefined;

/** The process's Lua pool, started on first use; its threads never keep the process alive. */
export function luaPool(): LuaPool {
  return (pool ??= new LuaPool());
}
