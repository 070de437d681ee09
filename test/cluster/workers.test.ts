/** `workers: 2`: two worker processes behave as one gateway (docs/workers.md). */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { request, type SimpleResponse } from '../support/http.js';
import { gate, startOrigin, type Origin } from '../support/origins.js';
import { waitFor } from '../support/wait.js';
import { startClusterGateway, total, waitForWorkers, type ClusterGateway } from './harness.js';

let origin: Origin;
let held = gate();
let gw: ClusterGateway;

const mock = (name: string, body: string) => `
  - name: ${name}
    nodes:
      - { id: listener, type: listener }
      - { id: m, type: mocking, config: { response_status: 200, content_type: text/plain, response_example: '${body}' } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: m.in }
      - { from: m.success, to: client.in }`;

const gatewayYaml = (port: number) => `
routes:
  - { name: hello, match: { path: /hello }, policy: hello }
  - { name: traced, match: { path: /traced }, policy: traced }
  - { name: limited, match: { path: /limited }, policy: limited }
  - { name: leased, match: { path: /leased }, policy: leased }
  - { name: rated, match: { path: /rated }, policy: rated }
  - { name: conn, match: { path: /conn }, policy: conn }
  - { name: slow, match: { path: /slow }, policy: slow }
  - { name: cached, match: { path: /cached }, policy: cached }
policies:${mock('hello', 'v1')}${mock('traced', 'traced')}
  - name: limited
    nodes:
      - { id: listener, type: listener }
      - { id: lc, type: limit-count, config: { count: 5, time_window: 600, key_type: constant, key: everyone } }
      - { id: m, type: mocking, config: { response_status: 200, response_example: ok } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: lc.in }
      - { from: lc.success, to: m.in }
      - { from: lc.limited, to: client.in }
      - { from: m.success, to: client.in }
  - name: leased
    nodes:
      - { id: listener, type: listener }
      - { id: lc, type: limit-count, config: { count: 40, time_window: 600, key_type: constant, key: everyone } }
      - { id: m, type: mocking, config: { response_status: 200, response_example: ok } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: lc.in }
      - { from: lc.success, to: m.in }
      - { from: lc.limited, to: client.in }
      - { from: m.success, to: client.in }
  - name: rated
    nodes:
      - { id: listener, type: listener }
      - { id: rl, type: rate-limit, config: { requests_per_second: 0.001, burst: 3 } }
      - { id: m, type: mocking, config: { response_status: 200, response_example: ok } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: rl.in }
      - { from: rl.success, to: m.in }
      - { from: rl.limited, to: client.in }
      - { from: m.success, to: client.in }
  - name: conn
    nodes:
      - { id: listener, type: listener }
      - { id: take, type: limit-conn, config: { phase: acquire, conn: 1, key_type: constant, key: one } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: give, type: limit-conn, config: { phase: release, key_type: constant, key: one } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: take.in }
      - { from: take.success, to: up.in }
      - { from: take.limited, to: client.in }
      - { from: up.success, to: give.in }
      - { from: give.success, to: client.in }
      - { from: give.limited, to: client.in }
  - name: cached
    nodes:
      - { id: listener, type: listener }
      - { id: lookup, type: proxy-cache, config: { phase: lookup, id: shared, cache_status_header: x-cache } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: store, type: proxy-cache, config: { phase: store, id: shared, cache_ttl: 600, cache_status_header: x-cache } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: lookup.in }
      - { from: lookup.success, to: up.in }
      - { from: lookup.hit, to: client.in }
      - { from: up.success, to: store.in }
      - { from: store.success, to: client.in }
      - { from: store.hit, to: client.in }
  - name: slow
    nodes:
      - { id: listener, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }], timeout_ms: 60000 } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: up.in }
      - { from: up.success, to: client.in }
`;

/** `count` requests, each on a fresh connection, so node:cluster spreads them over the workers. */
const many = (count: number, path: string, headers: Record<string, string> = {}): Promise<SimpleResponse[]> =>
  Promise.all(Array.from({ length: count }, () => request(`${gw.data}${path}`, { headers })));

/** True when a TCP connection to `port` is refused (or not accepted within a second). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(1000, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

/** Requests each worker answered while `work` ran. */
async function servedDuring(work: () => Promise<unknown>): Promise<number[]> {
  const before = await gw.workers();
  await work();
  const afterwards = await gw.workers();
  return [...afterwards].map(([slot, w]) => w.requests - (before.get(slot)?.requests ?? 0));
}

before(async () => {
  origin = await startOrigin(async (req, res) => {
    if (req.url?.startsWith('/slow') === true || req.url?.startsWith('/conn') === true) await held.wait;
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('slow done');
  });
  gw = await startClusterGateway(gatewayYaml(origin.port), {
    system: ['debug: { enabled: true, trigger_header: x-trace-me }'],
  });
  await waitForWorkers(gw, 2);
});

after(async () => {
  held.release();
  await gw?.stop();
  await origin?.close();
});

test('workers: both workers answer requests arriving on fresh connections', async () => {
  const served = await servedDuring(async () => {
    const answers = await many(20, '/hello');
    assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]));
  });
  assert.equal(served.length, 2);
  assert.ok(
    served.every((n) => n > 0),
    `each worker served some of 20 requests: ${served.join(', ')}`,
  );
});

test('workers: /metrics sums the requests of every worker', async () => {
  await many(6, '/hello');
  const text = await gw.metrics();
  const perWorker = [...(await gw.workers()).values()].reduce((sum, w) => sum + w.requests, 0);
  assert.equal(total(text, 'gateway_requests_total'), perWorker);
  assert.ok(perWorker >= 26, `aggregated requests: ${perWorker}`);
  assert.match(text, /^gateway_cluster_workers 2$/m);
});

test('workers: a local limit-count of 5 admits exactly 5 requests across both workers', async () => {
  const answers = await many(16, '/limited');
  const ok = answers.filter((a) => a.status === 200).length;
  assert.equal(ok, 5, `statuses: ${answers.map((a) => a.status).join(',')}`);
  assert.equal(answers.filter((a) => a.status === 503).length, 11);
});

test('workers: a local limit-count of 40 (leased to the workers in parts) admits exactly 40 of 100 across both workers', async () => {
  const served = await servedDuring(async () => {
    const answers = [...(await many(30, '/leased')), ...(await many(70, '/leased'))];
    assert.equal(answers.filter((a) => a.status === 200).length, 40);
    assert.equal(answers.filter((a) => a.status === 503).length, 60);
  });
  assert.ok(
    served.every((n) => n > 0),
    `both workers counted: ${served.join(', ')}`,
  );
});

test('workers: a rate-limit burst of 3 is one bucket for the whole gateway', async () => {
  const answers = await many(10, '/rated');
  assert.equal(answers.filter((a) => a.status === 200).length, 3);
  assert.equal(answers.filter((a) => a.status === 429).length, 7);
});

test('workers: the local proxy-cache is one cache: a response stored by one worker is a hit on the other', async () => {
  const first = await request(`${gw.data}/cached`);
  assert.equal(first.status, 200);
  const atOrigin = origin.requests.filter((r) => r.url === '/cached').length;
  assert.equal(atOrigin, 1);
  // The store is a notice to the primary; the first hit may race it, so wait for one.
  await waitFor(async () => (await request(`${gw.data}/cached`)).headers['x-cache'] === 'HIT', {
    what: 'a cache hit',
  });
  // A request the other worker took before the store landed may have missed and refreshed it once.
  const beforeHits = origin.requests.filter((r) => r.url === '/cached').length;
  assert.ok(beforeHits <= 2, `origin calls before the first hit: ${beforeHits}`);
  const served = await servedDuring(async () => {
    const answers = await many(10, '/cached');
    assert.deepEqual(new Set(answers.map((a) => a.headers['x-cache'])), new Set(['HIT']));
    assert.deepEqual(new Set(answers.map((a) => a.body)), new Set([first.body]));
  });
  assert.ok(
    served.every((n) => n > 0),
    `both workers answered from the cache: ${served.join(', ')}`,
  );
  assert.equal(origin.requests.filter((r) => r.url === '/cached').length, beforeHits);
});

test('workers: limit-conn of 1 rejects a second in-flight request whichever worker takes it', async () => {
  held = gate();
  const first = request(`${gw.data}/conn`);
  await waitFor(() => origin.requests.some((r) => r.url === '/conn'), {
    what: 'the first request to reach the origin',
  });
  const others = await many(4, '/conn');
  assert.deepEqual(
    others.map((a) => a.status),
    [503, 503, 503, 503],
  );
  held.release();
  assert.equal((await first).status, 200);
  // The slot is given back (over IPC) once the first request is done.
  await waitFor(async () => (await request(`${gw.data}/conn`)).status === 200, {
    what: 'the slot to be free',
  });
});

test('workers: an Admin PUT is served by every worker as soon as it is acknowledged', async () => {
  const put = await gw.adminCall('PUT', '/api/policies/hello', {
    nodes: [
      { id: 'listener', type: 'listener' },
      { id: 'm', type: 'mocking', config: { response_status: 200, response_example: 'v2' } },
      { id: 'client', type: 'client' },
    ],
    edges: [
      { from: 'listener.out', to: 'm.in' },
      { from: 'm.success', to: 'client.in' },
    ],
  });
  assert.equal(put.status, 200, await put.text());
  const served = await servedDuring(async () => {
    const answers = await many(12, '/hello');
    assert.deepEqual(new Set(answers.map((a) => a.body)), new Set(['v2']));
  });
  assert.ok(
    served.every((n) => n > 0),
    `both workers answered after the write: ${served.join(', ')}`,
  );
});

test('workers: an edit of gateway.yaml reaches every worker', async () => {
  writeFileSync(
    gw.gatewayPath,
    gatewayYaml(origin.port).replace("response_example: 'v1'", "response_example: 'v3'"),
  );
  await waitFor(
    async () => {
      const answers = await many(12, '/hello');
      return answers.every((a) => a.body === 'v3');
    },
    { timeoutMs: 30_000, intervalMs: 200, what: 'every worker to serve the edited file' },
  );
  const served = await servedDuring(async () => {
    const answers = await many(12, '/hello');
    assert.deepEqual(new Set(answers.map((a) => a.body)), new Set(['v3']));
  });
  assert.ok(
    served.every((n) => n > 0),
    `both workers answered: ${served.join(', ')}`,
  );
});

test('workers: debug traces from both workers are listed by the Admin API', async () => {
  const served = await servedDuring(async () => {
    const answers = await many(10, '/traced', { 'x-trace-me': '1' });
    assert.ok(answers.every((a) => typeof a.headers['x-switchyard-trace-id'] === 'string'));
  });
  assert.ok(
    served.every((n) => n > 0),
    `both workers traced requests: ${served.join(', ')}`,
  );
  await waitFor(
    async () => {
      const list = (await (await gw.adminCall('GET', '/api/debug/traces?route=traced')).json()) as {
        traces: unknown[];
      };
      return list.traces.length === 10;
    },
    { what: 'ten traces listed' },
  );
});

test('workers: a killed worker is replaced while the other finishes its in-flight requests', async () => {
  held = gate();
  const seen = origin.requests.length;
  const inflight = Array.from({ length: 4 }, () =>
    request(`${gw.data}/slow`).then(
      (r) => r.status,
      () => 'reset' as const,
    ),
  );
  await waitFor(() => origin.requests.length === seen + 4, { what: 'four requests at the origin' });
  const before = await gw.workers();
  const victim = before.get(1)?.pid as number;
  process.kill(victim, 'SIGKILL');
  await waitFor(
    async () => {
      const now = (await gw.workers()).get(1);
      return now !== undefined && now.pid !== victim;
    },
    { timeoutMs: 60_000, intervalMs: 200, what: 'worker 1 to be replaced' },
  );
  held.release();
  const outcomes = await Promise.all(inflight);
  const completed = outcomes.filter((o) => o === 200).length;
  assert.ok(completed >= 1, `the surviving worker's requests completed: ${outcomes.join(',')}`);
  assert.ok(
    outcomes.every((o) => o === 200 || o === 'reset'),
    `only the killed worker's requests failed: ${outcomes.join(',')}`,
  );
  assert.equal(total(await gw.metrics(), 'gateway_cluster_worker_restarts_total'), 1);
  const answers = await many(8, '/hello');
  assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]));
});

test('workers: SIGTERM lets every worker finish its in-flight requests, then the gateway exits', async () => {
  held = gate();
  const seen = origin.requests.length;
  const inflight = Array.from({ length: 4 }, () => request(`${gw.data}/slow`));
  await waitFor(() => origin.requests.length === seen + 4, { what: 'four requests at the origin' });
  gw.process.child.kill('SIGTERM');
  await waitFor(() => gw.process.output().includes('shutting down'), { what: 'the shutdown to begin' });
  // New connections are refused while the old ones drain.
  const port = Number(new URL(gw.data).port);
  await waitFor(() => refused(port), { what: 'the listener to close' });
  held.release();
  const answers = await Promise.all(
    inflight.map((r) =>
      r.then(
        (a) => a.status,
        (err: Error) => err.message,
      ),
    ),
  );
  assert.deepEqual(answers, [200, 200, 200, 200], gw.process.output().slice(-3000));
  const started = Date.now();
  assert.equal(await gw.process.exited, 0);
  assert.ok(Date.now() - started < 10_000, 'exited within shutdown_timeout_seconds');
});
