import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type GcFunction = (options?: { type?: 'minor' | 'major'; execution?: 'sync' | 'async' }) => unknown;

let gc: GcFunction | undefined;

/**
 * V8's `gc` function without exposing it to the gateway's own global: the flag is on only while
 * one throwaway context is made, then off again, so contexts made later (script sandboxes) lack it.
 */
function gcFunction(): GcFunction {
  const exposed = (globalThis as { gc?: GcFunction }).gc;
  if (typeof exposed === 'function') return exposed;
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as GcFunction;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/**
 * Runs a young-generation collection (a scavenge) now. A reload builds tens of megabytes of
 * objects that all survive; left to V8, a scavenge runs when the young generation is full (up to
 * 16 MiB of survivors here) and stalls requests for 20–40 ms. Collected between compile slices,
 * each scavenge copies only what one slice built (docs/benchmarks.md, "Config scale").
 */
export function collectYoungGeneration(): void {
  gc ??= gcFunction();
  gc({ type: 'minor' });
}

/** Resolves in a later event-loop turn, after pending I/O callbacks (requests) have run. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Between two slices of a long build (compile, reading a parsed config): lets requests run, then
 * collects what the last slice built in a turn of its own, then lets requests run again.
 */
export async function pauseAndCollect(): Promise<void> {
  await nextTurn();
  collectYoungGeneration();
  await nextTurn();
}
