import type { MessagePort } from 'node:worker_threads';
import type { Context } from '../core/context.js';
import type { ScriptContext, Unmarshalled } from './marshal.js';
import type { LuaErrorCode, RunResult, ScriptUnit } from './program.js';

/** Everything a Lua worker needs to compile and run one node's scripts. */
export interface ProgramSpec {
  units: ScriptUnit[];
  /** Budget of each unit per call, in ms; 0 disables the time budget (the memory cap stays). */
  timeoutMs: number;
  memoryLimitMb: number;
  modulesDir: string | undefined;
  ports: ('success' | 'respond')[];
}

/** The request context as it crosses to a worker: plain data the structured clone copies. */
export interface ContextSnapshot extends ScriptContext {
  readonly request: ScriptContext['request'] & { readonly query: Map<string, readonly string[]> };
}

export type ToWorker =
  | { op: 'load'; seq: number; program: number; spec: ProgramSpec }
  | { op: 'run'; seq: number; program: number; spec?: ProgramSpec; ctx: ContextSnapshot }
  | { op: 'drop'; program: number };

export type FromWorker = {
  seq: number;
  prints: string[];
  /** On a load reply: why this worker's fengari shortcuts are off (fengari-internals.ts), when they are. */
  fallback?: string;
} & (
  | { ok: true; result?: RunResult }
  | {
      ok: false;
      code: LuaErrorCode;
      message: string;
      /** The failing unit's label, and (for a load) its index. */
      script?: string;
      unit?: number;
    }
);

/** What the pool hands a worker at start: where to reply and the shared status words. */
export interface WorkerData {
  port: MessagePort;
  /** Int32 [0]: replies posted; Int32 [1]: seq of the running call; Float64 [1]: its unit's deadline. */
  shared: SharedArrayBuffer;
  /** Wake a synchronous caller (Atomics.notify) after each reply: the validator only. */
  notify: boolean;
  /** URL of worker.ts (or .js), loaded after the allocation guard is in place. */
  entry: string;
  /** URL of tsx's loader API when the gateway runs from TypeScript sources. */
  tsx: string | undefined;
}

/** Byte size of the shared status block: a reply counter and the running unit's deadline. */
export const SHARED_BYTES = 16;

/** Wall-clock ms with sub-ms precision, comparable across threads (each has its own timeOrigin). */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/** A copy of what scripts can read; the engine's Context stays in the main thread. */
export function snapshot(ctx: Context): ContextSnapshot {
  const req = ctx.request;
  const res = ctx.response;
  return {
    request: {
      method: req.method,
      path: req.path,
      host: req.host,
      scheme: req.scheme,
      remoteAddr: req.remoteAddr,
      headers: req.headers,
      query: req.query,
      body: req.body,
    },
    response: { status: res.status, headers: res.headers, body: res.body },
    message: ctx.message,
    errors: ctx.errors,
  };
}

/** Buffers come back from the structured clone as plain Uint8Arrays; the engine wants Buffers. */
export function fromWire(back: Unmarshalled): Unmarshalled {
  const r = back.request;
  if (r?.body !== undefined && !Buffer.isBuffer(r.body)) r.body = asBuffer(r.body);
  const s = back.response;
  if (s?.body !== undefined && !Buffer.isBuffer(s.body)) s.body = asBuffer(s.body);
  return back;
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
