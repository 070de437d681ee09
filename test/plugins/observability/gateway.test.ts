/** Loggers inside a running gateway: they never delay or change the response, and they see the final request. */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { after, test } from 'node:test';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { deadPort, startOrigin, type Origin } from '../../support/origins.js';
import { waitFor } from '../../support/wait.js';
import { startSlowOrigin } from '../streaming-probe.js';
import { parse, startHttpCollector, type Entry } from './fakes.js';

const origins: Origin[] = [];
const gateways: RunningGateway[] = [];
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await Promise.all(origins.map((o) => o.close()));
  for (const c of cleanups) await c();
  await closeAllPools();
});

/** A TCP port that accepts connections and never answers. */
async function blackHole(): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return (server.address() as { port: number }).port;
}

/** One route through upstream → the given logger nodes (in a chain) → client. */
function gatewayYaml(
  originPort: number,
  loggers: { id: string; type: string; config: Record<string, unknown> }[],
): string {
  const chain = ['up', ...loggers.map((l) => l.id), 'out'];
  const edges = chain.slice(1).map((to, i) => ({ from: `${chain[i]}.success`, to: `${to}.in` }));
  return JSON.stringify({
    routes: [{ name: 'orders', match: { path: '/orders' }, policy: 'p' }],
    policies: [
      {
        name: 'p',
        nodes: [
          { id: 'in', type: 'listener' },
          { id: 'up', type: 'upstream', config: { targets: [{ host: '127.0.0.1', port: originPort }] } },
          ...loggers,
          { id: 'out', type: 'client' },
        ],
        edges: [{ from: 'in.out', to: 'up.in' }, ...edges],
      },
    ],
  });
}

async function origin(status = 200): Promise<Origin> {
  const o = await startOrigin((_req, res) => {
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end('hello');
  });
  origins.push(o);
  return o;
}

test('gateway: a silent or dead collector never changes or delays the response', async () => {
  const backend = await origin();
  const silent = await blackHole();
  const dead = await deadPort();
  const gw = await startGateway(
    gatewayYaml(backend.port, [
      {
        id: 'http',
        type: 'http-logger',
        config: { uri: `http://127.0.0.1:${silent}/logs`, inactive_timeout: 0, timeout: 3 },
      },
      { id: 'tcp', type: 'tcp-logger', config: { host: '127.0.0.1', port: dead, batch_max_size: 1 } },
      {
        id: 'es',
        type: 'elasticsearch-logger',
        config: { endpoint_addr: `http://127.0.0.1:${dead}`, field: { index: 'i' }, batch_max_size: 1 },
      },
    ]),
  );
  gateways.push(gw);
  for (let i = 0; i < 20; i++) {
    const started = performance.now();
    const res = await request(`${gw.url}/orders`);
    assert.equal(res.status, 200);
    assert.equal(res.body, 'hello');
    // The silent collector holds each shipment for its full 3 s timeout: a response waiting for it would show.
    assert.ok(performance.now() - started < 2500, 'the response does not wait for the collector');
  }
});

test('gateway: the entry shows the route, the final status, the size and a latency', async () => {
  const backend = await origin(201);
  const collector = await startHttpCollector();
  origins.push(collector);
  const gw = await startGateway(
    gatewayYaml(backend.port, [
      {
        id: 'log',
        type: 'http-logger',
        config: { uri: `http://127.0.0.1:${collector.port}/e2e`, batch_max_size: 1 },
      },
    ]),
  );
  gateways.push(gw);
  const res = await request(`${gw.url}/orders?x=1`, { headers: { 'x-client': 'c1' } });
  assert.equal(res.status, 201);
  await collector.received(1);
  const [entry] = parse<Entry[]>(collector.requests[0]!.body);
  assert.equal(entry!.route, 'orders');
  assert.equal(entry!.policy, 'p');
  assert.equal(entry!.request.uri, '/orders?x=1');
  assert.equal(entry!.request.headers['x-client'], 'c1');
  assert.equal(entry!.response.status, 201);
  assert.equal(entry!.response.size, 5);
  assert.equal(entry!.client_ip, '127.0.0.1');
  assert.ok(entry!.latency >= 0 && entry!.latency < 5000);
  assert.ok(Math.abs(entry!.start_time - Date.now()) < 60_000);
});

test('gateway: STREAM — a log_format logger keeps the upstream streaming; a default-entry logger buffers', async () => {
  const slow = await startSlowOrigin();
  origins.push(slow.origin);
  const collector = await startHttpCollector();
  origins.push(collector);
  const uri = `http://127.0.0.1:${collector.port}/stream`;
  const formatted = await startGateway(
    gatewayYaml(slow.origin.port, [
      { id: 'log', type: 'http-logger', config: { uri, batch_max_size: 1, log_format: { s: '$status' } } },
    ]),
  );
  const plain = await startGateway(
    gatewayYaml(slow.origin.port, [{ id: 'log', type: 'http-logger', config: { uri, batch_max_size: 1 } }]),
  );
  gateways.push(formatted, plain);
  const streamed = await slow.probe(`${formatted.url}/orders`);
  assert.equal(streamed.streamed, true);
  assert.equal(streamed.body, 'data: one\n\ndata: two\n\n');
  const buffered = await slow.probe(`${plain.url}/orders`);
  assert.equal(buffered.streamed, false);
  await waitFor(() => collector.requests.length === 2, { what: 'both entries' });
  const bodies = collector.requests.map((r) => parse<unknown[]>(r.body));
  assert.deepEqual(bodies[0], [{ s: '200' }]);
  assert.equal((bodies[1]![0] as Entry).response.size, 'data: one\n\ndata: two\n\n'.length);
});
