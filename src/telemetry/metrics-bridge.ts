import { ValueType, type Attributes, type HrTime } from '@opentelemetry/api';
import { millisToHrTime } from '@opentelemetry/core';
import {
  AggregationTemporality,
  DataPointType,
  type CollectionResult,
  type DataPoint,
  type Histogram,
  type MetricData,
  type MetricProducer,
} from '@opentelemetry/sdk-metrics';
import { emptyResource } from '@opentelemetry/resources';

/**
 * A metric family as prom-client's `getMetricsAsJSON` gives it, or as src/telemetry/exposition.ts
 * reads it from the `/metrics` text; `metricName` names histogram and summary parts (`_bucket`,
 * `_sum`, `_count`).
 */
export interface PromMetric {
  name: string;
  help: string;
  type: unknown;
  values: readonly PromValue[];
}
type PromValue = { labels: Record<string, string | number | undefined>; value: number; metricName?: string };

const SCOPE = { name: 'switchyard' } as const;

/**
 * The `/metrics` series as OTLP: the same series under the same names (no second naming
 * scheme), read at each export from prom-client's registry (one process) or from the
 * aggregated `/metrics` of `workers: N` (docs/opentelemetry.md#workers). Counters become monotonic cumulative sums,
 * gauges gauges, histograms OTLP explicit-bucket histograms with the registry's bounds, and a
 * summary's quantiles gauges with a `quantile` attribute.
 */
export class PrometheusProducer implements MetricProducer {
  readonly #source: () => Promise<readonly PromMetric[]> | undefined;
  /**
   * Cumulative series start when this process does: prom-client never resets them, and the
   * summed series of `workers: N` restart only with the primary (docs/workers.md).
   */
  readonly #start: HrTime = millisToHrTime(performance.timeOrigin);

  constructor(source: () => Promise<readonly PromMetric[]> | undefined) {
    this.#source = source;
  }

  async collect(): Promise<CollectionResult> {
    const reading = this.#source();
    const metrics: MetricData[] = [];
    const errors: unknown[] = [];
    if (reading !== undefined) {
      const now = millisToHrTime(Date.now());
      for (const metric of await reading) {
        try {
          const data = convert(metric, this.#start, now);
          if (data !== undefined) metrics.push(data);
        } catch (err) {
          errors.push(err);
        }
      }
    }
    // The reader puts these scope metrics under the provider's resource.
    return {
      resourceMetrics: { resource: emptyResource(), scopeMetrics: [{ scope: SCOPE, metrics }] },
      errors,
    };
  }
}

function attributesOf(labels: PromValue['labels'], skip?: string): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(labels))
    if (key !== skip && value !== undefined) out[key] = String(value);
  return out;
}

function descriptor(metric: PromMetric) {
  return { name: metric.name, description: metric.help, unit: '', valueType: ValueType.DOUBLE };
}

function convert(metric: PromMetric, startTime: HrTime, endTime: HrTime): MetricData | undefined {
  const point = (v: PromValue, skip?: string): DataPoint<number> => ({
    startTime,
    endTime,
    attributes: attributesOf(v.labels, skip),
    value: v.value,
  });
  switch (String(metric.type)) {
    case 'counter':
      return {
        descriptor: descriptor(metric),
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.SUM,
        isMonotonic: true,
        dataPoints: metric.values.map((v) => point(v)),
      };
    case 'gauge':
      return {
        descriptor: descriptor(metric),
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.GAUGE,
        dataPoints: metric.values.map((v) => point(v)),
      };
    case 'summary':
      return {
        descriptor: descriptor(metric),
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.GAUGE,
        dataPoints: metric.values
          .filter((v) => v.metricName === undefined || v.metricName === metric.name)
          .map((v) => point(v)),
      };
    case 'histogram':
      return {
        descriptor: descriptor(metric),
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.HISTOGRAM,
        dataPoints: histogramPoints(metric, startTime, endTime),
      };
    default:
      return undefined;
  }
}

/** prom-client lists `_bucket` (cumulative, by `le`), `_sum` and `_count` per label set; OTLP wants one point each. */
function histogramPoints(metric: PromMetric, startTime: HrTime, endTime: HrTime): DataPoint<Histogram>[] {
  const series = new Map<
    string,
    { attributes: Attributes; bounds: [number, number][]; sum: number; count: number }
  >();
  for (const v of metric.values) {
    const attributes = attributesOf(v.labels, 'le');
    const key = JSON.stringify(attributes);
    let entry = series.get(key);
    if (entry === undefined) {
      entry = { attributes, bounds: [], sum: 0, count: 0 };
      series.set(key, entry);
    }
    const name: string = v.metricName ?? '';
    if (name.endsWith('_bucket')) {
      const le = v.labels.le;
      if (le !== undefined && le !== '+Inf') entry.bounds.push([Number(le), v.value]);
    } else if (name.endsWith('_sum')) entry.sum = v.value;
    else if (name.endsWith('_count')) entry.count = v.value;
  }
  return [...series.values()].map(({ attributes, bounds, sum, count }) => {
    bounds.sort((a, b) => a[0] - b[0]);
    const counts: number[] = [];
    let below = 0;
    for (const [, cumulative] of bounds) {
      counts.push(cumulative - below);
      below = cumulative;
    }
    counts.push(count - below);
    return {
      startTime,
      endTime,
      attributes,
      value: { buckets: { boundaries: bounds.map(([le]) => le), counts }, sum, count },
    };
  });
}
