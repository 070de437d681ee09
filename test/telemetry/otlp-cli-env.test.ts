/**
 * Issue 35 item 3, the CLI path: `switchyard` as users run it, with `telemetry.otlp` naming
 * neither endpoint nor protocol, so the SDK's OTEL_* variables decide (endpoint, protocol,
 * headers, service name, resource attributes); records logged while stopping are exported too.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnGateway } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { OtlpReceiver } from './otlp-receiver.js';

const ENV_SECRET = 'env-secret-value-9f8e7d6c';

let receiver: OtlpReceiver;
before(async () => {
  receiver = await new OtlpReceiver().start();
});
after(() => receiver.stop());

const gatewayYaml = `
routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: "hi", content_type: text/plain } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`;

/** The data plane's port, read from its start-up log line (the listener binds port 0). */
async function dataPlanePort(output: () => string): Promise<number> {
  let port = 0;
  await waitFor(
    () => {
      const line = output()
        .split('\n')
        .find((l) => l.includes('"listener":"data plane"'));
      if (line !== undefined) port = (JSON.parse(line) as { port: number }).port;
      return port > 0;
    },
    { timeoutMs: 30000, what: 'the data plane to listen' },
  );
  return port;
}

test('issue 35.3 OTLP: the OTEL_* variables pick endpoint, protocol, headers and resource when system.yaml does not', async () => {
  const dir = tempDir();
  const sys = join(dir.path, 'system.yaml');
  const gw = join(dir.path, 'gateway.yaml');
  writeFileSync(
    sys,
    'listener: { bind: 127.0.0.1, port: 0 }\nlogging: { level: info }\ntimeouts: { shutdown_timeout_seconds: 5 }\ntelemetry:\n  otlp:\n    metrics: { interval_s: 1 }\n',
  );
  writeFileSync(gw, gatewayYaml);
  const p = spawnGateway(['--system-config', sys, '--gateway-config', gw], {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.grpcUrl,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    OTEL_EXPORTER_OTLP_HEADERS: `x-api-key=${ENV_SECRET}`,
    OTEL_SERVICE_NAME: 'edge-from-env',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging',
  });
  try {
    const port = await dataPlanePort(() => p.output());
    const res = await fetch(`http://127.0.0.1:${port}/x`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'hi');
    await waitFor(() => receiver.metrics().has('gateway_requests_total'), {
      timeoutMs: 20000,
      what: 'a metrics export',
    });
  } finally {
    assert.equal(await p.stop('SIGTERM'), 0, p.output());
  }
  const signals = new Set(receiver.exports.map((e) => e.signal));
  assert.deepEqual(signals, new Set(['traces', 'metrics', 'logs']));
  for (const e of receiver.exports) {
    assert.equal(e.protocol, 'grpc');
    assert.equal(e.headers['x-api-key'], ENV_SECRET);
  }
  const server = receiver.spans().find((s) => s.kind === 2);
  assert.ok(server);
  assert.equal(server.resource['service.name'], 'edge-from-env');
  assert.equal(server.resource['deployment.environment.name'], 'staging');
  assert.deepEqual(
    receiver
      .spans()
      .map((s) => s.attributes['switchyard.node.id'])
      .filter(Boolean)
      .sort(),
    ['m'],
  );
  // Logged during shutdown, exported by the final flush.
  assert.ok(
    receiver.logs().some((l) => l.body === 'stopped'),
    'the last record was not exported',
  );
  assert.ok(!p.output().includes(ENV_SECRET), 'the header value reached stdout');
});

test('issue 35.3 OTLP: examples/opentelemetry runs as written and exports all three signals', async () => {
  receiver.exports.length = 0;
  const origin = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end(JSON.stringify({ traceparent: req.headers.traceparent ?? null })));
  });
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  const examples = fileURLToPath(new URL('../../examples/opentelemetry/', import.meta.url));
  const p = spawnGateway(
    ['--system-config', join(examples, 'system.yaml'), '--gateway-config', join(examples, 'gateway.yaml')],
    {
      GATEWAY_PORT: '0',
      OTLP_ENDPOINT: receiver.httpUrl,
      OTLP_TOKEN: ENV_SECRET,
      UPSTREAM_PORT: String((origin.address() as AddressInfo).port),
    },
  );
  let traceparent: string;
  try {
    const port = await dataPlanePort(() => p.output());
    const res = await fetch(`http://127.0.0.1:${port}/api/hello`);
    assert.equal(res.status, 200);
    traceparent = String(((await res.json()) as { traceparent: unknown }).traceparent);
  } finally {
    assert.equal(await p.stop('SIGTERM'), 0, p.output());
    origin.close();
  }
  assert.deepEqual(new Set(receiver.exports.map((e) => e.signal)), new Set(['traces', 'metrics', 'logs']));
  for (const e of receiver.exports) assert.equal(e.headers.authorization, `Bearer ${ENV_SECRET}`);
  const client = receiver.spans().find((s) => s.kind === 3);
  assert.ok(client);
  assert.equal(traceparent, `00-${client.traceId}-${client.spanId}-01`);
  assert.ok(receiver.metrics().has('gateway_requests_total'));
  assert.ok(
    receiver.logs().some((l) => l.attributes['log.type'] === 'access' && l.traceId === client.traceId),
  );
  assert.ok(!p.output().includes(ENV_SECRET), 'the header value reached stdout');
});
