/**
 * The dashboard series of a running gateway (docs/metrics.md), read from the
 * registry a scrape renders: latency by route, policy and status class,
 * upstream latency and health per target, in-flight requests, bytes, reload
 * status; and the load-time checks of admin.metrics_auth.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import http2 from 'node:http2';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { echo, gate, startOrigin, type Origin } from '../support/origins.js';
import { deadPort } from '../support/origins.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';

let origin: Origin;
let slow: Origin;
let held = gate();
let dead = 0;

before(async () => {
  origin = await startOrigin(echo('origin'));
  slow = await startOrigin(async (_req, res) => {
    await held.wait;
    res.end('late');
  });
  dead = await deadPort();
});

after(async () => {
  held.release();
  await origin.close();
  await slow.close();
});

const policy = (name: string, port: number, extra = '') => `
  - name: ${name}
    nodes:
      - { id: listener, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }]${extra} } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: up.in }
      - { from: up.success, to: client.in }`;

const yaml = (): string => `
routes:
  - { name: api, match: { path: /api/* }, policy: api-policy }
  - { name: slow, match: { path: /slow }, policy: slow-policy }
  - { name: dead, match: { path: /dead }, policy: dead-policy }
policies:${policy('api-policy', origin.port)}${policy('slow-policy', slow.port)}${policy(
  'dead-policy',
  dead,
  ', health_check: { passive: { max_fails: 1, fail_timeout_seconds: 60 } }',
)}
`;

/** The value of one sample in the rendered registry (labels in any order); undefined when absent. */
async function sample(gw: RunningGateway, name: string, labels: Record<string, string> = {}) {
  const text = (await gw.gateway.metrics.render()).body;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const got = new Map([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got.get(k) === v)) return Number(m[3]);
  }
  return undefined;
}

test('metrics: request latency is a histogram by route, policy and status class; upstream latency by target', async () => {
  const gw = await startGateway(yaml());
  try {
    for (let i = 0; i < 3; i++) assert.equal((await fetch(`${gw.url}/api/a`)).status, 200);
    assert.equal((await fetch(`${gw.url}/nowhere`)).status, 404);
    const api = { route: 'api', policy: 'api-policy', status_class: '2xx' };
    assert.equal(await sample(gw, 'gateway_request_duration_seconds_count', api), 3);
    assert.equal(
      await sample(gw, 'gateway_request_duration_seconds_count', { route: '', status_class: '4xx' }),
      1,
    );
    const target = { policy: 'api-policy', node_id: 'up', target: `127.0.0.1:${origin.port}` };
    assert.equal(await sample(gw, 'gateway_upstream_duration_seconds_count', target), 3);
    assert.ok((await sample(gw, 'gateway_upstream_duration_seconds_sum', target))! > 0);
  } finally {
    await gw.stop();
  }
});

test('metrics: an ejected upstream target reads 0 in gateway_upstream_target_up, a healthy one 1', async () => {
  const gw = await startGateway(yaml());
  try {
    const deadTarget = { policy: 'dead-policy', node_id: 'up', target: `127.0.0.1:${dead}` };
    assert.equal(await sample(gw, 'gateway_upstream_target_up', deadTarget), 1);
    assert.ok((await fetch(`${gw.url}/dead`)).status >= 500);
    assert.equal(await sample(gw, 'gateway_upstream_target_up', deadTarget), 0);
    const live = { policy: 'api-policy', node_id: 'up', target: `127.0.0.1:${origin.port}` };
    assert.equal(await sample(gw, 'gateway_upstream_target_up', live), 1);
  } finally {
    await gw.stop();
  }
});

test('metrics: a request waiting on its upstream shows in gateway_requests_in_flight and in the target in-flight gauge', async () => {
  const gw = await startGateway(yaml());
  held = gate();
  try {
    assert.equal(await sample(gw, 'gateway_requests_in_flight'), 0);
    const pending = fetch(`${gw.url}/slow`);
    const target = { policy: 'slow-policy', node_id: 'up', target: `127.0.0.1:${slow.port}` };
    await waitFor(async () => (await sample(gw, 'gateway_requests_in_flight')) === 1, {
      what: 'one request in flight',
    });
    assert.equal(await sample(gw, 'gateway_upstream_target_in_flight', target), 1);
    held.release();
    assert.equal(await (await pending).text(), 'late');
    await waitFor(async () => (await sample(gw, 'gateway_requests_in_flight')) === 0, {
      what: 'no request in flight',
    });
  } finally {
    held.release();
    await gw.stop();
  }
});

test('metrics: byte counters add up the bytes each HTTP/1.1 request and response carried', async () => {
  const gw = await startGateway(yaml());
  try {
    const raw = 'POST /api/bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc';
    const socket = connect(gw.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.write(raw);
    await once(socket, 'close');
    const answer = Buffer.concat(chunks);
    assert.match(answer.toString('latin1'), /^HTTP\/1\.1 200/);
    assert.equal(await sample(gw, 'gateway_request_bytes_total', { route: 'api' }), Buffer.byteLength(raw));
    assert.equal(await sample(gw, 'gateway_response_bytes_total', { route: 'api' }), answer.length);
  } finally {
    await gw.stop();
  }
});

test('metrics: an HTTP/2 upload streamed without content-length counts the bytes the upstream got', async () => {
  const gw = await startGateway(yaml());
  const session = http2.connect(`http://127.0.0.1:${gw.port}`);
  try {
    const stream = session.request({ ':method': 'POST', ':path': '/api/h2-bytes' });
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.write(Buffer.alloc(1000, 'a'));
    stream.write(Buffer.alloc(2000, 'b'));
    stream.end(Buffer.alloc(500, 'c'));
    const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
    await once(stream, 'end');
    assert.equal(headers[':status'], 200);
    assert.equal(await sample(gw, 'gateway_request_bytes_total', { route: 'api' }), 3500);
  } finally {
    session.close();
    await gw.stop();
  }
});

test('metrics: a rejected reload sets last_reload_successful to 0 and counts a failure; the next good one restores it', async () => {
  const dir = tempDir('switchyard-reload-metrics-');
  const path = join(dir.path, 'gateway.yaml');
  writeFileSync(path, yaml());
  const gw = await startGateway('', { gatewayPath: path });
  try {
    assert.equal(await sample(gw, 'gateway_config_last_reload_successful'), 1);
    const startedAt = (await sample(gw, 'gateway_config_last_reload_success_timestamp_seconds'))!;
    assert.ok(Math.abs(startedAt - Date.now() / 1000) < 60, String(startedAt));
    writeFileSync(path, 'routes: [ { name: broken, policy: nowhere } ]\n');
    await assert.rejects(gw.gateway.reloadFromFile('signal'), ConfigRejected);
    assert.equal(await sample(gw, 'gateway_config_last_reload_successful'), 0);
    assert.equal(
      await sample(gw, 'gateway_config_reloads_total', { source: 'signal', result: 'failure' }),
      1,
    );
    writeFileSync(path, yaml());
    await gw.gateway.reloadFromFile('signal');
    assert.equal(await sample(gw, 'gateway_config_last_reload_successful'), 1);
    assert.equal(
      await sample(gw, 'gateway_config_reloads_total', { source: 'signal', result: 'success' }),
      1,
    );
  } finally {
    await gw.stop();
    dir.remove();
  }
});

test('metrics_auth: an incomplete or weak metrics credential is refused at load with its key path', () => {
  const load = (metricsAuth: string) => {
    try {
      parseSystemConfig(
        `admin: { username: admin, password: pw-0123456789, metrics_auth: ${metricsAuth} }\n`,
      );
      return [];
    } catch (err) {
      if (err instanceof ConfigRejected) return err.issues.map((i) => i.path);
      throw err;
    }
  };
  assert.deepEqual(load('{ bearer_token: short }'), ['admin.metrics_auth.bearer_token']);
  assert.deepEqual(load('{ username: prometheus }'), ['admin.metrics_auth.password']);
  assert.deepEqual(load('{ username: prometheus, password: "" }'), ['admin.metrics_auth.password']);
  assert.deepEqual(load('{}'), ['admin.metrics_auth']);
  assert.deepEqual(load('{ bearer_token: 0123456789abcdef }'), []);
  assert.deepEqual(load('{ username: prometheus, password: x }'), []);
});
