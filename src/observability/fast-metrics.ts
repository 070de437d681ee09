import type { Registry } from 'prom-client';

/**
 * Per-request counters and histograms whose label sets are resolved once:
 * a request adds to plain numbers in a cell it already holds, while
 * prom-client's own children hash and validate their labels on every call
 * (about 300 ns each). The metrics register in a prom-client Registry like any
 * other, so the registry renders them and a cluster aggregator merges them
 * (`aggregator: 'sum'`).
 */
interface MetricValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

interface FastMetricOptions<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  registers: Registry[];
}

abstract class FastMetric<L extends string, Cell> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly aggregator = 'sum';
  abstract readonly type: 'counter' | 'histogram';
  protected readonly cells = new Map<string, { labels: Record<string, string>; cell: Cell }>();

  constructor(options: FastMetricOptions<L>) {
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames;
    for (const registry of options.registers) registry.registerMetric(this as never);
  }

  protected abstract create(): Cell;

  /** The cell of one label set (values in `labelNames` order); keep it, it lives as long as the metric. */
  cell(...values: string[]): Cell {
    const key = values.join('\u0000');
    let entry = this.cells.get(key);
    if (entry === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => (labels[name] = values[i] ?? ''));
      entry = { labels, cell: this.create() };
      this.cells.set(key, entry);
    }
    return entry.cell;
  }

  abstract get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: MetricValue[];
  }>;

  reset(): void {
    this.cells.clear();
  }
}

/** A counter cell: add to `value`. */
export interface CounterCell {
  value: number;
}

export class FastCounter<L extends string> extends FastMetric<L, CounterCell> {
  readonly type = 'counter';

  protected create(): CounterCell {
    return { value: 0 };
  }

  get() {
    const values: MetricValue[] = [];
    for (const { labels, cell } of this.cells.values()) values.push({ labels, value: cell.value });
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    });
  }
}

/** A histogram cell: `observe` finds the bucket with a short linear scan (15 bounds). */
export class HistogramCell {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  readonly #bounds: readonly number[];

  constructor(bounds: readonly number[]) {
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    const bounds = this.#bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        this.counts[i]!++;
        break;
      }
    }
    this.sum += value;
    this.count++;
  }
}

export class FastHistogram<L extends string> extends FastMetric<L, HistogramCell> {
  readonly type = 'histogram';
  readonly #bounds: readonly number[];

  constructor(options: FastMetricOptions<L> & { buckets: readonly number[] }) {
    super(options);
    this.#bounds = [...options.buckets].sort((a, b) => a - b);
  }

  protected create(): HistogramCell {
    return new HistogramCell(this.#bounds);
  }

  /** Cumulative `_bucket` series with `le`, then `_sum` and `_count`, as Prometheus expects. */
  get() {
    const values: MetricValue[] = [];
    for (const { labels, cell } of this.cells.values()) {
      let cumulative = 0;
      this.#bounds.forEach((bound, i) => {
        cumulative += cell.counts[i]!;
        values.push({
          labels: { ...labels, le: bound },
          value: cumulative,
          metricName: `${this.name}_bucket`,
        });
      });
      values.push({
        labels: { ...labels, le: '+Inf' },
        value: cell.count,
        metricName: `${this.name}_bucket`,
      });
      values.push({ labels, value: cell.sum, metricName: `${this.name}_sum` });
      values.push({ labels, value: cell.count, metricName: `${this.name}_count` });
    }
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    });
  }
}
