/**
 * Issue 35 item 3: OTLP export on the OpenTelemetry SDK, over http/protobuf and gRPC, to a local
 * receiver that decodes with the official protobuf definitions. A real gateway (data plane, run
 * loop, upstream pool) serves requests to a real origin; the assertions read what the receiver
 * decoded: spans per request/node/upstream call with the switchyard.* attributes, the /metrics
 * series under their own names (histograms as histograms), log records with trace ids, the
 * configured headers on every export, and the header value nowhere in the gateway's own log.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { parseSystemConfig } from '../../src/config/system.js';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { Gateway } from '../../src/gateway.js';
import { startTelemetry, type Telemetry } from '../../src/telemetry/index.js';
import { waitFor } from '../support/wait.js';
import { OtlpReceiver, type SpanSeen } from './otlp-receiver.js';

const SECRET = 'Bearer otlp-secret-0123456789abcdef';
const INCOMING_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const INCOMING_SPAN = '00f067aa0ba902b7';
const SPAN_KIND_INTERNAL = 1;
const SPAN_KIND_SERVER = 2;
const SPAN_KIND_CLIENT = 3;

let receiver: OtlpReceiver;
let origin: Server;
let originPort: number;
let deadPort: number;
const seenUpstream: IncomingHttpHeaders[] = [];

before(async () => {
  receiver = await new OtlpReceiver().start();
  origin = createServer((req, res) => {
    seenUpstream.push(req.headers);
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
  });
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  originPort = (origin.address() as AddressInfo).port;
  // A port that was bound and released: connecting to it is refused.
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  deadPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
});

after(async () => {
  origin.closeAllConnections();
  origin.close();
  await receiver.stop();
});

const gatewayYaml = (origin: number, dead: number) => `
routes:
  - { name: api, match: { path: /api/* }, policy: api }
  - { name: broken, match: { path: /broken/* }, policy: broken }
policies:
  - name: api
    nodes:
      - { id: in, type: listener }
      - { id: rid, type: request-id }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: rid.in }
      - { from: rid.success, to: up.in }
      - { from: up.success, to: out.in }
  - name: broken
    nodes:
      - { id: in, type: listener }
      - { id: dead-up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${dead} }], timeout_ms: 2000 } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: dead-up.in }
      - { from: dead-up.success, to: out.in }
`;

interface Running {
  url: string;
  telemetry: Telemetry;
  logLines: string[];
  stop(): Promise<void>;
}

/** A gateway wired as the CLI wires it (src/cli.ts): SDK first, the logger feeding its log export. */
async function startWithTelemetry(protocol: 'http/protobuf' | 'grpc'): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'otlp-'));
  const endpoint = protocol === 'grpc' ? receiver.grpcUrl : receiver.httpUrl;
  const system = parseSystemConfig(`
listener: { bind: 127.0.0.1, port: 0 }
timeouts: { shutdown_timeout_seconds: 5 }
access_log: { output: ${join(dir, 'access.log')} }
telemetry:
  otlp:
    endpoint: ${endpoint}
    protocol: ${protocol}
    headers: { authorization: "${SECRET}", x-tenant: edge }
    metrics: { interval_s: 1 }
    resource: { service.name: switchyard-test, deployment.environment.name: ci }
`);
  const telemetry = startTelemetry(system, {});
  assert.ok(telemetry !== undefined);
  const logLines: string[] = [];
  const capture = { write: (line: string) => void logLines.push(line) };
  const logger = pino(
    { level: 'info', base: null },
    pino.multistream([{ stream: capture }, { stream: telemetry.logSink! }]),
  );
  telemetry.useLogger(logger);
  const gateway = Gateway.create(
    { system, logger, telemetry },
    parseGatewayConfig(gatewayYaml(originPort, deadPort)),
  );
  telemetry.exportMetrics(gateway.metrics.registry);
  const address = await gateway.listen();
  return {
    url: `http://127.0.0.1:${address.port}`,
    telemetry,
    logLines,
    stop: async () => {
      await gateway.shutdown();
      await telemetry.shutdown();
    },
  };
}

function byTrace(traceId: string): SpanSeen[] {
  return receiver.spans().filter((s) => s.traceId === traceId);
}

for (const protocol of ['http/protobuf', 'grpc'] as const) {
  test(`issue 35.3 OTLP ${protocol}: spans per request, node and upstream call; metrics with the /metrics names; logs with trace ids`, async () => {
    receiver.exports.length = 0;
    seenUpstream.length = 0;
    const gw = await startWithTelemetry(protocol);
    let stopped = false;
    try {
      const ok = await fetch(`${gw.url}/api/items`, {
        headers: {
          traceparent: `00-${INCOMING_TRACE}-${INCOMING_SPAN}-01`,
          baggage: 'tenant=acme,tier=gold',
        },
      });
      assert.equal(ok.status, 200);
      await ok.text();
      const failed = await fetch(`${gw.url}/broken/x`);
      assert.ok(failed.status >= 500, `broken route answered ${failed.status}`);
      await failed.text();
      await waitFor(() => receiver.metrics().get('gateway_requests_total')?.points.length === 2, {
        timeoutMs: 20000,
        what: 'gateway_requests_total for both routes',
      });
      await gw.stop();
      stopped = true;

      // Traces: the incoming trace continued; SERVER → node spans → CLIENT, and upstream saw the CLIENT id.
      const spans = byTrace(INCOMING_TRACE);
      const server = spans.find((s) => s.kind === SPAN_KIND_SERVER);
      assert.ok(server, `no SERVER span in ${JSON.stringify(spans.map((s) => s.name))}`);
      assert.equal(server.parentSpanId, INCOMING_SPAN);
      assert.equal(server.attributes['http.response.status_code'], 200);
      assert.equal(server.resource['service.name'], 'switchyard-test');
      assert.equal(server.resource['deployment.environment.name'], 'ci');
      const nodes = spans.filter((s) => s.kind === SPAN_KIND_INTERNAL);
      assert.deepEqual(nodes.map((s) => s.attributes['switchyard.node.id']).sort(), ['rid', 'up']);
      for (const node of nodes) {
        assert.equal(node.parentSpanId, server.spanId);
        assert.equal(node.attributes['switchyard.policy'], 'api');
        assert.equal(node.attributes['switchyard.node.port'], 'success');
      }
      const up = nodes.find((s) => s.attributes['switchyard.node.id'] === 'up')!;
      assert.equal(up.attributes['switchyard.node.type'], 'upstream');
      const client = spans.find((s) => s.kind === SPAN_KIND_CLIENT);
      assert.ok(client, 'no CLIENT span');
      assert.equal(client.parentSpanId, up.spanId);
      assert.equal(seenUpstream.length, 1);
      assert.equal(seenUpstream[0]?.traceparent, `00-${INCOMING_TRACE}-${client.spanId}-01`);
      assert.match(String(seenUpstream[0]?.baggage), /tenant=acme/);
      assert.match(String(seenUpstream[0]?.baggage), /tier=gold/);

      // The failing node: its span carries the error code and the error port.
      const deadSpan = receiver
        .spans()
        .find((s) => s.attributes['switchyard.node.id'] === 'dead-up' && s.kind === SPAN_KIND_INTERNAL);
      assert.ok(deadSpan, 'no span for the failing node');
      assert.equal(deadSpan.attributes['switchyard.node.port'], 'error');
      assert.match(String(deadSpan.attributes['switchyard.error.code']), /^UPSTREAM_/);
      assert.equal(deadSpan.status.code, 2);

      // Metrics: the /metrics names, counters as sums, latency as an OTLP histogram with the registry's bounds.
      const metrics = receiver.metrics();
      const requests = metrics.get('gateway_requests_total');
      assert.equal(requests?.kind, 'sum');
      const okPoint = requests.points.find((p) => (p.attributes as Record<string, unknown>).route === 'api');
      assert.equal(Number(okPoint?.asDouble), 1);
      assert.equal((okPoint?.attributes as Record<string, unknown>).status, '200');
      const duration = metrics.get('gateway_request_duration_seconds');
      assert.equal(duration?.kind, 'histogram');
      const hist = duration.points.find((p) => (p.attributes as Record<string, unknown>).route === 'api')!;
      assert.equal(Number(hist.count), 1);
      assert.ok((hist.explicitBounds as number[]).includes(0.005));
      assert.equal(
        (hist.bucketCounts as string[]).reduce((a, b) => a + Number(b), 0),
        1,
      );
      assert.ok(metrics.has('gateway_upstream_duration_seconds'));
      assert.ok(metrics.has('process_cpu_user_seconds_total'), 'the default process series go too');

      // Logs: the access record and the failing node's record, each with its request's trace id.
      const logs = receiver.logs();
      const access = logs.find((l) => l.attributes['log.type'] === 'access' && l.attributes.route === 'api');
      assert.ok(access, 'no access record');
      assert.equal(access.traceId, INCOMING_TRACE);
      assert.equal(access.spanId, server.spanId);
      assert.equal(access.attributes.status, 200);
      const failure = logs.find(
        (l) => l.attributes.node === 'dead-up' && String(l.body).startsWith('node failed'),
      );
      assert.ok(failure, `no 'node failed' record in ${JSON.stringify(logs.map((l) => l.body))}`);
      assert.equal(failure.severityText, 'WARN');
      assert.equal(failure.traceId, deadSpan.traceId);
      assert.equal(failure.spanId, deadSpan.spanId);
      assert.ok(
        logs.some((l) => l.attributes.listener === 'data plane'),
        "the gateway's start-up record",
      );

      // Headers on every export, over this protocol only; the value is in no log line.
      const mine = receiver.exports;
      assert.ok(mine.length >= 3);
      for (const e of mine) {
        assert.equal(e.protocol, protocol);
        assert.equal(e.headers.authorization, SECRET);
        assert.equal(e.headers['x-tenant'], 'edge');
      }
      assert.deepEqual(new Set(mine.map((e) => e.signal)), new Set(['traces', 'metrics', 'logs']));
      assert.ok(!gw.logLines.join('').includes('otlp-secret'), 'the header value was logged');
      assert.ok(!JSON.stringify(receiver.logs()).includes('otlp-secret'), 'the header value was exported');
    } finally {
      if (!stopped) await gw.stop();
    }
  });
}

test('issue 35.3 OTLP: telemetry off leaves the engine without span hooks (no per-node cost)', () => {
  const system = parseSystemConfig('listener: { bind: 127.0.0.1, port: 0 }\n');
  assert.equal(startTelemetry(system, {}), undefined);
  const withOtlp = parseSystemConfig(
    `telemetry:\n  otlp:\n    endpoint: ${receiver.httpUrl}\n    traces: { enabled: false }\n`,
  );
  const telemetry = startTelemetry(withOtlp, {});
  assert.equal(telemetry?.spans, undefined);
  assert.equal(startTelemetry(withOtlp, { OTEL_SDK_DISABLED: 'true' }), undefined);
  return telemetry?.shutdown();
});

test('issue 35.3 OTLP: telemetry.otlp mistakes are refused naming the key path', () => {
  const issues = (yaml: string) => {
    try {
      parseSystemConfig(yaml);
      return [];
    } catch (err) {
      return (err as { issues: { path: string }[] }).issues.map((i) => i.path);
    }
  };
  assert.deepEqual(issues('telemetry:\n  otlp:\n    endpoint: ftp://collector\n'), [
    'telemetry.otlp.endpoint',
  ]);
  assert.deepEqual(issues('telemetry:\n  otlp:\n    protocol: grpc\n    endpoint: http://c:4317/v1\n'), [
    'telemetry.otlp.endpoint',
  ]);
  assert.deepEqual(issues('telemetry:\n  otlp:\n    protocol: http/json\n'), ['telemetry.otlp.protocol']);
  assert.deepEqual(issues('telemetry:\n  otlp:\n    traces: { sample_ratio: 2 }\n'), [
    'telemetry.otlp.traces.sample_ratio',
  ]);
});
