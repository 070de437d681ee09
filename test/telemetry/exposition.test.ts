/**
 * The `/metrics` text read back for the OTLP export of `workers: N` (src/telemetry/exposition.ts):
 * what prom-client writes parses into what its getMetricsAsJSON says, escaped label values and
 * histogram parts included, so the export of the aggregated text sends the same series.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Gauge, Histogram, Registry, Summary } from 'prom-client';
import { parseExposition } from '../../src/telemetry/exposition.js';

test('issue 35.3 OTLP with workers: the /metrics text parses into the registry it came from', async () => {
  const registry = new Registry();
  const counter = new Counter({
    name: 'demo_requests_total',
    help: 'Requests, with a "quoted" help\\line',
    labelNames: ['route', 'status'],
    registers: [registry],
  });
  counter.inc({ route: 'say "hi"\\now\nnext', status: '200' }, 3);
  counter.inc({ route: 'plain', status: '503' });
  new Gauge({ name: 'demo_up', help: 'Up.', registers: [registry] }).set(-1.5);
  const histogram = new Histogram({
    name: 'demo_seconds',
    help: 'Latency.',
    labelNames: ['route'],
    buckets: [0.1, 1],
    registers: [registry],
  });
  histogram.observe({ route: 'a' }, 0.05);
  histogram.observe({ route: 'a' }, 5);
  const summary = new Summary({
    name: 'demo_size',
    help: 'Sizes.',
    percentiles: [0.5],
    registers: [registry],
  });
  summary.observe(10);

  const parsed = parseExposition(await registry.metrics());
  const expected = await registry.getMetricsAsJSON();
  assert.deepEqual(
    parsed.map((m) => [m.name, m.type]),
    expected.map((m) => [m.name, String(m.type)]),
  );
  const norm = (values: readonly { labels: object; value: number; metricName?: string }[], name: string) =>
    values
      .map((v) => ({
        labels: Object.fromEntries(Object.entries(v.labels).map(([k, x]) => [k, String(x)])),
        value: v.value,
        metricName: v.metricName ?? name,
      }))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  for (const metric of expected) {
    const mine = parsed.find((m) => m.name === metric.name)!;
    assert.equal(mine.help, metric.help);
    assert.deepEqual(norm(mine.values, metric.name), norm(metric.values, metric.name), metric.name);
  }
  const route = parsed[0]?.values.find((v) => v.labels.status === '200')?.labels.route;
  assert.equal(route, 'say "hi"\\now\nnext');
});
