/** `workers: 2` with `proxy-cache` `policy: local`: the primary holds the one cache (docs/workers.md). */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { request } from '../support/http.js';
import { startOrigin, type Origin } from '../support/origins.js';
import { waitFor } from '../support/wait.js';
import {
  many,
  sample,
  servedDuring,
  startClusterGateway,
  waitForWorkers,
  type ClusterGateway,
} from './harness.js';

let origin: Origin;
let gw: ClusterGateway;

const gatewayYaml = (port: number) => `
routes:
  - { name: cached, match: { path: /cached/* }, policy: cached }
policies:
  - name: cached
    nodes:
      - { id: listener, type: listener }
      - { id: lookup, type: proxy-cache, config: { phase: lookup, id: pages, cache_key: ["$uri"] } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: store, type: proxy-cache, config: { phase: store, id: pages, cache_key: ["$uri"], cache_ttl: 600 } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: lookup.in }
      - { from: lookup.success, to: up.in }
      - { from: lookup.hit, to: client.in }
      - { from: up.success, to: store.in }
      - { from: store.success, to: client.in }
      - { from: store.hit, to: client.in }
`;

const event = (text: string, name: string): number =>
  sample(text, `gateway_cache_events_total{backend="local",store="",event="${name}"}`);

before(async () => {
  origin = await startOrigin((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`page ${req.url ?? ''}`);
  });
  gw = await startClusterGateway(gatewayYaml(origin.port));
  await waitForWorkers(gw, 2);
});

after(async () => {
  await gw?.stop();
  await origin?.close();
});

test('F6: workers: a local-cache miss over IPC is a clean miss on every worker (no backend_error), and the entry is a hit on the other worker', async () => {
  const paths = Array.from({ length: 8 }, (_, i) => `/cached/p${i}`);
  // Fresh connections, so both workers take some of the misses.
  const served = await servedDuring(gw, async () => {
    const answers = await Promise.all(paths.map((p) => request(`${gw.data}${p}`)));
    assert.deepEqual(
      answers.map((a) => `${a.status} ${String(a.headers['switchyard-cache-status'])} ${a.body}`),
      paths.map((p) => `200 MISS page ${p}`),
    );
  });
  assert.ok(
    served.length === 2 && served.every((n) => n > 0),
    `both workers looked up a miss: ${served.join(', ')}`,
  );
  const afterMisses = await gw.metrics();
  assert.equal(event(afterMisses, 'backend_error'), 0, 'a miss is not a backend failure');
  assert.equal(event(afterMisses, 'miss'), paths.length);

  // The store half notifies the primary without waiting, so the entry may land a moment later.
  for (const p of paths) {
    await waitFor(
      async () => (await request(`${gw.data}${p}`)).headers['switchyard-cache-status'] === 'HIT',
      {
        timeoutMs: 10_000,
        what: `a hit on ${p}`,
      },
    );
  }
  const atOrigin = origin.requests.length;
  const hitsOnBoth = await servedDuring(gw, async () => {
    const answers = await many(gw, 12, '/cached/p0');
    assert.deepEqual(new Set(answers.map((a) => a.headers['switchyard-cache-status'])), new Set(['HIT']));
    assert.deepEqual(new Set(answers.map((a) => a.body)), new Set(['page /cached/p0']));
  });
  assert.ok(
    hitsOnBoth.every((n) => n > 0),
    `both workers answered from the one cache: ${hitsOnBoth.join(', ')}`,
  );
  assert.equal(origin.requests.length, atOrigin, 'hits never reach the origin');

  const text = await gw.metrics();
  assert.equal(event(text, 'backend_error'), 0);
  assert.equal(
    event(text, 'miss'),
    origin.requests.length,
    'every miss, and only a miss, reached the origin',
  );
  assert.ok(event(text, 'hit') >= paths.length + 12, `hits: ${event(text, 'hit')}`);
  assert.doesNotMatch(gw.process.output(), /cache backend failed/);
});
