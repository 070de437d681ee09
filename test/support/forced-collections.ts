import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';

/**
 * The forced collections of the young generation V8 reports while `run` runs: forced scavenges,
 * and forced full collections, which empty the young generation too. Node 24's V8 runs a forced
 * minor request as a full collection when an incremental marking is under way (one in 14 in
 * test/cluster/config-pieces.test.ts); Node 20's scavenged then.
 */
export async function forcedMinorCollections(run: () => unknown): Promise<number> {
  let count = 0;
  const tally = (entries: PerformanceEntry[]) => {
    for (const entry of entries) {
      const detail = (entry as PerformanceEntry & { detail?: unknown }).detail as {
        kind: number;
        flags: number;
      };
      if (
        (detail.kind === constants.NODE_PERFORMANCE_GC_MINOR ||
          detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) &&
        (detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0
      )
        count++;
    }
  };
  const observer = new PerformanceObserver((list) => tally(list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  try {
    await run();
    // Node records a GC entry in an immediate after the collection; then take what is not delivered.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    tally(observer.takeRecords());
  } finally {
    observer.disconnect();
  }
  return count;
}
