/**
 * Issue 35 item 3 with `workers: 2` (docs/opentelemetry.md#workers): a real `switchyard` whose two
 * worker processes serve requests, exporting to the local OTLP receiver. Each worker exports its
 * own spans and log records under a resource naming it (`service.instance.id` `<id>-worker-<slot>`,
 * `switchyard.worker`); the metrics are exported once, by the primary, as the aggregated `/metrics`
 * sums them: `gateway_requests_total` equals the requests sent (neither doubled nor missing a
 * worker), while the gateway runs and in the last export after the workers stopped.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { many, mockPolicy, startClusterGateway, total, waitForWorkers } from '../cluster/harness.js';
import { attributes, OtlpReceiver } from './otlp-receiver.js';

const SPAN_KIND_SERVER = 2;

let receiver: OtlpReceiver;
before(async () => {
  receiver = await new OtlpReceiver().start();
});
after(() => receiver.stop());

const gatewayYaml = `
routes:
  - { name: hello, match: { path: /hello }, policy: hello }
policies:${mockPolicy('hello', 'hi')}
`;

/** The resource of every metrics export, and the gateway_requests_total sum each carried. */
function metricExports(): { resource: Record<string, unknown>; requests: number | undefined }[] {
  return receiver.of('metrics').flatMap((e) =>
    ((e.body.resourceMetrics as Record<string, unknown>[] | undefined) ?? []).map((rm) => {
      let requests: number | undefined;
      for (const sm of (rm.scopeMetrics as Record<string, unknown>[] | undefined) ?? [])
        for (const m of (sm.metrics as Record<string, unknown>[] | undefined) ?? [])
          if (m.name === 'gateway_requests_total') {
            const points = ((m.sum as Record<string, unknown>).dataPoints as { asDouble?: number }[]) ?? [];
            requests = points.reduce((sum, p) => sum + Number(p.asDouble ?? 0), 0);
          }
      return {
        resource: attributes((rm.resource as Record<string, unknown> | undefined)?.attributes),
        requests,
      };
    }),
  );
}

test('issue 35.3 OTLP with workers: 2: per-worker spans and logs, metrics exported once as /metrics sums them', async () => {
  const dir = tempDir('otlp-workers-');
  const gw = await startClusterGateway(gatewayYaml, {
    workers: 2,
    system: [
      `access_log: { output: ${join(dir.path, 'access.log')} }`,
      'telemetry:',
      '  otlp:',
      `    endpoint: ${receiver.httpUrl}`,
      '    protocol: http/protobuf',
      '    metrics: { interval_s: 1 }',
      '    resource: { service.name: switchyard-workers }',
    ],
  });
  let stopped = false;
  let sent = 0;
  let perSlot = new Map<number, { pid: number; requests: number }>();
  try {
    await waitForWorkers(gw, 2);
    // Fresh connections until both workers answered some (node:cluster hands them out in turn).
    await waitFor(
      async () => {
        const answers = await many(gw, 4, '/hello');
        for (const a of answers) assert.equal(a.status, 200);
        sent += answers.length;
        perSlot = await gw.workers();
        return [...perSlot.values()].filter((w) => w.requests > 0).length === 2;
      },
      { timeoutMs: 30_000, what: 'both workers to answer' },
    );
    assert.equal(total(await gw.metrics(), 'gateway_requests_total'), sent);
    // The primary's export: the summed count, not one worker's, not twice.
    await waitFor(() => metricExports().at(-1)?.requests === sent, {
      timeoutMs: 20_000,
      what: `an export with gateway_requests_total = ${sent}`,
    });
    await gw.stop();
    stopped = true;
  } finally {
    if (!stopped) await gw.stop();
    dir.remove();
  }

  // Metrics: only the primary exports them, under the gateway's own instance id; the last export
  // (after the workers drained and ended) still counts every request.
  const exports = metricExports();
  assert.ok(exports.length >= 2);
  const instance = String(exports[0]?.resource['service.instance.id']);
  assert.match(instance, /^[0-9a-f-]{36}$/, 'a random UUID when none is configured');
  for (const e of exports) {
    assert.equal(e.resource['service.instance.id'], instance);
    assert.equal(e.resource['switchyard.worker'], undefined);
    assert.equal(e.resource['service.name'], 'switchyard-workers');
  }
  assert.equal(exports.at(-1)?.requests, sent);
  const metrics = receiver.metrics();
  assert.equal(metrics.get('gateway_cluster_workers_configured')?.points[0]?.asDouble, 2);
  assert.equal(metrics.get('gateway_request_duration_seconds')?.kind, 'histogram');

  // Spans: one SERVER span per request, each under the resource of the worker that served it.
  const servers = receiver.spans().filter((s) => s.kind === SPAN_KIND_SERVER);
  assert.equal(servers.length, sent);
  const bySlot = new Map<number, number>();
  for (const s of servers) {
    const slot = Number(s.resource['switchyard.worker']);
    assert.ok(slot === 1 || slot === 2, `span resource ${JSON.stringify(s.resource)}`);
    assert.equal(s.resource['service.instance.id'], `${instance}-worker-${slot}`);
    assert.equal(s.resource['service.name'], 'switchyard-workers');
    assert.equal(s.resource['process.pid'], perSlot.get(slot)?.pid);
    bySlot.set(slot, (bySlot.get(slot) ?? 0) + 1);
  }
  assert.deepEqual(
    [...bySlot].sort(([a], [b]) => a - b),
    [...perSlot].map(([slot, w]) => [slot, w.requests]).sort(([a], [b]) => Number(a) - Number(b)),
  );

  // Logs: each worker's access records and own records under its resource, with its spans' trace ids.
  const logs = receiver.logs();
  const access = logs.filter((l) => l.attributes['log.type'] === 'access');
  assert.equal(access.length, sent);
  for (const record of access) {
    const span = servers.find((s) => s.traceId === record.traceId);
    assert.ok(span, 'an access record without its request span');
    assert.equal(record.resource['service.instance.id'], span.resource['service.instance.id']);
  }
  for (const slot of [1, 2])
    assert.ok(
      logs.some(
        (l) =>
          l.attributes.listener === 'data plane' &&
          l.resource['service.instance.id'] === `${instance}-worker-${slot}`,
      ),
      `worker ${slot}'s start-up record`,
    );
  // The primary's own records carry the gateway's id.
  assert.ok(logs.some((l) => l.body === 'stopped' && l.resource['service.instance.id'] === instance));
});
