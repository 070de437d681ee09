import type { NodeInstance, PluginDefinition } from './plugin.js';

/** How the run loop left a node; recorded in traces (docs/debugging.md#reading-a-trace). */
export type EdgeKind =
  'success' | 'error' | 'catch_all' | 'terminal' | 'end_of_chain' | 'unhandled' | 'node_not_found';

/** A node of a compiled policy: its instance and its outgoing edges resolved to node objects. */
export interface CompiledNode {
  readonly id: string;
  readonly type: string;
  readonly instance: NodeInstance;
  readonly isClient: boolean;
  /** Port name → next node; an absent key means the port is unwired (end of chain). */
  readonly next: Record<string, CompiledNode | undefined>;
  /** Target of this node's own error edge, if wired. */
  readonly onError: CompiledNode | undefined;
  readonly definition: PluginDefinition<never, string>;
  /** Executions and their total time since this runtime was compiled; exported at scrape time. */
  readonly stats: NodeStats;
}

export interface NodeStats {
  runs: number;
  ms: number;
  /**
   * Runs per duration bucket: index i counts runs of at most NODE_DURATION_BOUNDS_MS[i], the last the
   * rest. Null until the node first runs: most nodes of a 10,000-policy configuration never run
   * between two reloads, and making 40,000 views cost a start 60 ms or more.
   */
  buckets: Float64Array | null;
}

/** Upper bounds (ms) of the per-node duration histogram, `gateway_node_duration_seconds` (docs/metrics.md). */
export const NODE_DURATION_BOUNDS_MS: readonly number[] = [
  0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000,
];

/** Nodes whose buckets share one buffer: a buffer per node cost ~3 µs each (and GC) on a 10,000-policy compile. */
const STATS_PER_SLAB = 1024;
let slab = new Float64Array(0);
let slabUsed = 0;

export function newNodeStats(): NodeStats {
  return { runs: 0, ms: 0, buckets: null };
}

function newBuckets(): Float64Array {
  const width = NODE_DURATION_BOUNDS_MS.length + 1;
  if (slabUsed + width > slab.length) {
    slab = new Float64Array(width * STATS_PER_SLAB);
    slabUsed = 0;
  }
  const buckets = slab.subarray(slabUsed, slabUsed + width);
  slabUsed += width;
  return buckets;
}

/** Counts one run of `ms`: a short linear scan, no allocation (the run loop calls it per node). */
export function recordNodeRun(stats: NodeStats, ms: number): void {
  stats.runs++;
  stats.ms += ms;
  const bounds = NODE_DURATION_BOUNDS_MS;
  let i = 0;
  while (i < bounds.length && ms > bounds[i]!) i++;
  (stats.buckets ??= newBuckets())[i]!++;
}

/**
 * An upstream whose body is buffered, and the node that forces it: in `buffering`, a node reading
 * its response body (docs/configuration.md#streaming); in `request_buffering`, a node reading the
 * request body (docs/routing.md#request-bodies).
 */
export interface BufferingReport {
  upstream: string;
  blocked_by: string;
}

export interface CachePairReport {
  id: string;
  node: string;
  message: string;
}

export interface CompiledPolicy {
  readonly name: string;
  readonly entry: CompiledNode | undefined;
  readonly errorHandler: CompiledNode | undefined;
  readonly nodes: ReadonlyMap<string, CompiledNode>;
  readonly buffering: readonly BufferingReport[];
  /** Response-cache halves without their counterpart (docs/plugins/proxy-cache.md). */
  readonly cachePairs?: readonly CachePairReport[];
  /** Upstream node ids that relay their response as it arrives. */
  readonly streaming: readonly string[];
  /** True when no node reads the request body: it is streamed to the upstream (docs/routing.md#request-bodies). */
  readonly streamsRequestBody?: boolean;
  /** Upstreams that get a buffered request body, each with the first node of the policy that reads it. */
  readonly requestBuffering?: readonly BufferingReport[];
  /** A node reads a file when created (a READS_FILE key, src/core/plugin.ts): every reload compiles it again. */
  readonly readsFiles?: boolean;
}

/** Optional observer of the run loop; absent on untraced requests, costing nothing. */
export interface TraceRecorder {
  step(node: CompiledNode, port: string, edge: EdgeKind, durationMs: number): void;
}
