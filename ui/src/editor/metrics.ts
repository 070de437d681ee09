/** Per-node figures for the metrics overlay, read from the admin listener's /metrics. */
export interface NodeFigures {
  executions: number;
  errors: number;
  p50Ms: number | undefined;
  p99Ms: number | undefined;
}

const LINE = /^([a-z_:]+)\{([^}]*)\}\s+([0-9.eE+-]+|NaN|\+Inf)$/;

function labelsOf(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)) out[m[1] as string] = m[2] as string;
  return out;
}

/** The upper bound of the bucket holding quantile `q`, from cumulative histogram buckets. */
function quantile(buckets: [number, number][], q: number): number | undefined {
  const sorted = [...buckets].sort((a, b) => a[0] - b[0]);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (total === 0) return undefined;
  const bound = sorted.find(([, count]) => count >= q * total)?.[0];
  return bound === undefined || !Number.isFinite(bound) ? undefined : bound * 1000;
}

/** Executions, errors and p50/p99 per node id of `policy`. */
export function nodeFigures(text: string, policy: string): Map<string, NodeFigures> {
  const out = new Map<string, NodeFigures>();
  const buckets = new Map<string, Map<number, number>>();
  const get = (id: string) => {
    let f = out.get(id);
    if (f === undefined) out.set(id, (f = { executions: 0, errors: 0, p50Ms: undefined, p99Ms: undefined }));
    return f;
  };
  for (const line of text.split('\n')) {
    const m = LINE.exec(line.trim());
    if (m === null) continue;
    const [, name, rawLabels, rawValue] = m as unknown as [string, string, string, string];
    const labels = labelsOf(rawLabels);
    if (labels.policy !== policy || labels.node_id === undefined) continue;
    const id = labels.node_id.split('/')[0] ?? labels.node_id;
    const value = Number(rawValue);
    if (name === 'gateway_node_executions_total') get(id).executions += value;
    else if (name === 'gateway_node_errors_total') get(id).errors += value;
    else if (name === 'gateway_node_duration_seconds_bucket' && labels.le !== undefined) {
      const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
      const byLe = buckets.get(id) ?? new Map<number, number>();
      byLe.set(le, (byLe.get(le) ?? 0) + value);
      buckets.set(id, byLe);
    }
  }
  for (const [id, byLe] of buckets) {
    const f = get(id);
    f.p50Ms = quantile([...byLe], 0.5);
    f.p99Ms = quantile([...byLe], 0.99);
  }
  return out;
}

export const figuresText = (f: NodeFigures): string =>
  `${f.executions} runs · ${f.errors} errors${f.p50Ms === undefined ? '' : ` · p50 ≤${f.p50Ms} ms · p99 ≤${f.p99Ms ?? '?'} ms`}`;
