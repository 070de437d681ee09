/**
 * The Prometheus text exposition (format 0.0.4, what `GET /metrics` answers) read back into the
 * shape prom-client's `getMetricsAsJSON` gives, so the OTLP metric export of `workers: N` sends
 * exactly the series the aggregated `/metrics` shows (docs/opentelemetry.md#workers).
 */

export interface ExposedValue {
  labels: Record<string, string>;
  value: number;
  /** The sample's own name: `x_bucket`, `x_sum`, `x_count` of a histogram `x`, else the family's. */
  metricName: string;
}

export interface ExposedMetric {
  name: string;
  help: string;
  type: string;
  values: ExposedValue[];
}

/** The samples a family of this type may have besides its own name. */
const SUFFIXES: Record<string, readonly string[]> = {
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['_sum', '_count'],
};

function unescapeHelp(text: string): string {
  return text.replace(/\\(\\|n)/g, (_m, c: string) => (c === 'n' ? '\n' : '\\'));
}

function parseValue(text: string): number {
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return NaN;
  return Number(text);
}

/** `{a="x",b="y\"z"}` from `start` (the `{`): the labels and the index after the `}`. */
function parseLabels(line: string, start: number): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  let i = start + 1;
  for (;;) {
    while (line[i] === ' ' || line[i] === ',') i++;
    if (line[i] === '}') return [labels, i + 1];
    const eq = line.indexOf('=', i);
    if (eq < 0 || line[eq + 1] !== '"') throw new Error(`malformed labels in: ${line}`);
    const name = line.slice(i, eq).trim();
    let value = '';
    i = eq + 2;
    for (; i < line.length && line[i] !== '"'; i++) {
      if (line[i] === '\\') {
        i++;
        const c = line[i];
        value += c === 'n' ? '\n' : (c ?? '');
      } else value += line[i];
    }
    if (i >= line.length) throw new Error(`unterminated label value in: ${line}`);
    labels[name] = value;
    i++;
  }
}

/** Every metric family of an exposition, in its order; a sample without `# TYPE` is `untyped`. */
export function parseExposition(text: string): ExposedMetric[] {
  const families = new Map<string, ExposedMetric>();
  const family = (name: string): ExposedMetric => {
    let metric = families.get(name);
    if (metric === undefined) {
      metric = { name, help: '', type: 'untyped', values: [] };
      families.set(name, metric);
    }
    return metric;
  };
  let current: ExposedMetric | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      const match = /^#\s*(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
      if (match === null) continue;
      const [, kind, name = '', rest = ''] = match;
      current = family(name);
      if (kind === 'HELP') current.help = unescapeHelp(rest);
      else current.type = rest.trim();
      continue;
    }
    const brace = line.indexOf('{');
    const space = line.search(/\s/);
    const nameEnd = brace >= 0 && (space < 0 || brace < space) ? brace : space;
    if (nameEnd <= 0) continue;
    const sample = line.slice(0, nameEnd);
    let labels: Record<string, string> = {};
    let rest = nameEnd;
    if (line[nameEnd] === '{') [labels, rest] = parseLabels(line, nameEnd);
    const [valueText] = line.slice(rest).trim().split(/\s+/);
    if (valueText === undefined || valueText === '') continue;
    const owner =
      current !== undefined &&
      (sample === current.name ||
        (SUFFIXES[current.type] ?? []).some((suffix) => sample === current!.name + suffix))
        ? current
        : family(sample);
    owner.values.push({ labels, value: parseValue(valueText), metricName: sample });
  }
  return [...families.values()];
}
