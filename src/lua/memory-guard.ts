import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { MemoryMeter } from './vm.js';

/**
 * The per-call memory cap of a Lua worker thread (see pool.ts). Lua values
 * live in two places: tables and closures on the V8 heap, and strings in
 * Uint8Arrays whose bytes are outside it. The count hook asks `over()` every
 * 1000 instructions, which catches a table growing in a loop; a single
 * instruction can allocate a lot of string bytes at once (`s = s .. s`,
 * `string.rep`), so every Uint8Array the worker allocates is charged here
 * first and refused before it exists when the call would hold more than its
 * limit. Worker threads only: it replaces the thread's global Uint8Array.
 */
export class MemoryGuard implements MemoryMeter {
  #limit = 0;
  #baseline = 0;
  /** Bytes allocated since the last measurement; measuring costs ~0.5 µs, allocating is per string. */
  #charged = 0;
  #active = false;
  /** Set by a refused allocation: the call stays over its limit until it ends. */
  #exceeded = false;
  readonly #gc: (() => void) | undefined;

  constructor() {
    this.#gc = exposeGc();
  }

  get limitMb(): number {
    return Math.round(this.#limit / 1048576);
  }

  /** Starts metering one call. */
  start(limitBytes: number): void {
    this.#limit = limitBytes;
    this.#exceeded = false;
    this.#charged = 0;
    this.#baseline = live();
    this.#active = true;
  }

  stop(): void {
    this.#active = false;
  }

  /** True once an allocation was refused: the call ends at the count hook's next check. */
  get exceeded(): boolean {
    return this.#exceeded;
  }

  /** True when the call holds more than its limit (after a collection if one is possible), or was refused an allocation. */
  over(): boolean {
    if (!this.#active) return false;
    if (this.#exceeded) return true;
    this.#charged = 0;
    return this.#holdsTooMuch(0);
  }

  /**
   * Called for every Uint8Array of `bytes`; throws (a Lua error, through
   * fengari) when the call would hold more than its limit. Smaller
   * allocations after a refusal still succeed, so error handling can build
   * its message.
   */
  charge(bytes: number): void {
    if (!this.#active || !(bytes > 0)) return;
    this.#charged += bytes;
    if (bytes <= this.#limit && this.#charged <= this.#limit / 4) return;
    this.#charged = 0;
    if (bytes > this.#limit || this.#holdsTooMuch(bytes)) {
      this.#exceeded = true;
      throw new RangeError(`script exceeded its memory limit of ${this.limitMb} MiB`);
    }
  }

  #holdsTooMuch(extra: number): boolean {
    if (live() + extra - this.#baseline <= this.#limit) return false;
    if (this.#gc === undefined) return true;
    this.#gc();
    return live() + extra - this.#baseline > this.#limit;
  }

  /**
   * Makes `new Uint8Array(n)` (the global fengari allocates strings with)
   * go through `charge`. A plain function returning the real array keeps
   * `instanceof`, the static methods and the speed of the native constructor.
   */
  install(): void {
    const Native = globalThis.Uint8Array;
    const charge = (n: unknown): void => {
      if (typeof n === 'number') this.charge(n);
    };
    function Guarded(a?: unknown, b?: unknown, c?: unknown): Uint8Array {
      if (new.target === undefined) throw new TypeError("Constructor Uint8Array requires 'new'");
      charge(a);
      return new Native(a as ArrayBuffer, b as number | undefined, c as number | undefined);
    }
    Guarded.prototype = Native.prototype;
    Object.setPrototypeOf(Guarded, Native);
    globalThis.Uint8Array = Guarded as unknown as Uint8ArrayConstructor;
  }
}

/** What this thread's isolate holds: its heap plus the ArrayBuffers outside it. */
function live(): number {
  const s = getHeapStatistics();
  return s.used_heap_size + s.external_memory;
}

/** The isolate's `gc()`, so a call is not blamed for garbage it left behind. */
function exposeGc(): (() => void) | undefined {
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('typeof gc === "function" ? gc : undefined');
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}
