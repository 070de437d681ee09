/**
 * Per-node figures for the metrics overlay, read from the admin listener's
 * /metrics (docs/editor.md#traces-sandbox-and-metrics).
 */
export interface NodeFigures {
  executions: number;
  errors: number;
  /** Total run time over executions: exact. */
  meanMs: number | undefined;
  /** Estimated from a latency histogram, where the gateway keeps one for the node. */
  p50Ms: number | undefined;
  p99Ms: number | undefined;
}

const LINE = /^([a-z_:]+)\{([^}]*)\}\s+([0-9.eE+-]+|NaN|\+Inf)$/;

/**
 * The node's own run-time histogram only: it restarts with the node's counters when the policy is
 * compiled again, so runs, errors, mean and quantiles cover one window. (The upstream histogram
 * counts since the process started, which printed p50/p99 next to "0 runs" after a reload: F26.)
 */
const HISTOGRAMS = ['gateway_node_duration_seconds_bucket'];

/** What the overlay's figures cover, shown above the canvas while it is on (docs/editor.md#traces-sandbox-and-metrics). */
export const METRICS_WINDOW =
  'since this policy was last compiled (a reload that changes it starts again from 0)';

function labelsOf(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)) out[m[1] as string] = m[2] as string;
  return out;
}

/**
 * Quantile `q` from cumulative histogram buckets `[upper bound, count]`, the
 * way Prometheus' histogram_quantile estimates it: find the bucket holding
 * rank q·total and interpolate linearly between its lower and upper bound
 * (the first bucket starts at 0; a rank in the +Inf bucket answers the
 * highest finite bound). Always within the bounds of the bucket that holds
 * the true quantile.
 */
export function histogramQuantile(
  buckets: readonly (readonly [number, number])[],
  q: number,
): number | undefined {
  const sorted = [...buckets].sort((a, b) => a[0] - b[0]);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (total === 0 || sorted.length === 0) return undefined;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [upper, count] of sorted) {
    if (count >= rank) {
      if (!Number.isFinite(upper)) return lower;
      if (count === below) return upper;
      return lower + ((upper - lower) * (rank - below)) / (count - below);
    }
    lower = upper;
    below = count;
  }
  return lower;
}

/** Executions, errors, mean run time and p50/p99 per node id of `policy`. */
export function nodeFigures(text: string, policy: string): Map<string, NodeFigures> {
  const out = new Map<string, NodeFigures>();
  const seconds = new Map<string, number>();
  const buckets = new Map<string, Map<string, Map<number, number>>>();
  const get = (id: string) => {
    let f = out.get(id);
    if (f === undefined)
      out.set(id, (f = { executions: 0, errors: 0, meanMs: undefined, p50Ms: undefined, p99Ms: undefined }));
    return f;
  };
  for (const line of text.split('\n')) {
    const m = LINE.exec(line.trim());
    if (m === null) continue;
    const [, name, rawLabels, rawValue] = m as unknown as [string, string, string, string];
    const labels = labelsOf(rawLabels);
    if (labels.policy !== policy || labels.node_id === undefined) continue;
    // A node inside a supernode instance (`sub/inner`) counts for the instance.
    const id = labels.node_id.split('/')[0] ?? labels.node_id;
    const value = Number(rawValue);
    if (name === 'gateway_node_executions_total') get(id).executions += value;
    else if (name === 'gateway_node_errors_total') get(id).errors += value;
    else if (name === 'gateway_node_duration_seconds_total') seconds.set(id, (seconds.get(id) ?? 0) + value);
    else if (HISTOGRAMS.includes(name) && labels.le !== undefined) {
      const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
      const byName = buckets.get(id) ?? new Map<string, Map<number, number>>();
      const byLe = byName.get(name) ?? new Map<number, number>();
      byLe.set(le, (byLe.get(le) ?? 0) + value);
      byName.set(name, byLe);
      buckets.set(id, byName);
    }
  }
  for (const [id, total] of seconds) {
    const f = get(id);
    if (f.executions > 0) f.meanMs = (total * 1000) / f.executions;
  }
  for (const [id, byName] of buckets) {
    const byLe = HISTOGRAMS.map((n) => byName.get(n)).find((b) => b !== undefined);
    if (byLe === undefined) continue;
    const f = get(id);
    const p50 = histogramQuantile([...byLe], 0.5);
    const p99 = histogramQuantile([...byLe], 0.99);
    f.p50Ms = p50 === undefined ? undefined : p50 * 1000;
    f.p99Ms = p99 === undefined ? undefined : p99 * 1000;
  }
  return out;
}

/** Milliseconds with three significant digits (`0.412`, `12.3`, `194`). */
export const ms = (value: number): string =>
  value >= 100
    ? value.toFixed(0)
    : value >= 10
      ? value.toFixed(1)
      : value >= 1
        ? value.toFixed(2)
        : value.toFixed(3);

export const figuresText = (f: NodeFigures): string =>
  [
    `${f.executions} runs · ${f.errors} errors`,
    ...(f.meanMs === undefined ? [] : [`mean ${ms(f.meanMs)} ms`]),
    ...(f.p50Ms === undefined ? [] : [`p50 ≈${ms(f.p50Ms)} ms`]),
    ...(f.p99Ms === undefined ? [] : [`p99 ≈${ms(f.p99Ms)} ms`]),
  ].join(' · ');
