/**
 * `workers: 2`: the primary serves no requests, so nothing wakes it periodically (its idle cost is
 * paid once per gateway, not per request), while `/metrics` still reports the event-loop lag the
 * workers measure (docs/workers.md#what-it-costs).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { request } from '../support/http.js';
import { startClusterGateway, waitForWorkers, type ClusterGateway } from './harness.js';

const gatewayYaml = `
routes:
  - { name: hello, match: { path: /hello }, policy: hello }
policies:
  - name: hello
    nodes:
      - { id: listener, type: listener }
      - { id: m, type: mocking, config: { response_status: 200, content_type: text/plain, response_example: hi } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: m.in }
      - { from: m.success, to: client.in }
`;

let gw: ClusterGateway;

before(async () => {
  gw = await startClusterGateway(gatewayYaml);
  await waitForWorkers(gw, 2);
});

after(async () => {
  await gw?.stop();
});

/** Times the main thread of `pid` went to sleep and was woken again (voluntary context switches). */
function wakeups(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('voluntary_ctxt_switches:'));
  return Number(line?.split(/\s+/)[1]);
}

test(
  'workers: an idle primary is not woken periodically (a 10 ms monitor would wake it ~300 times in 3 s)',
  { skip: process.platform !== 'linux' ? 'reads /proc' : false },
  async () => {
    const pid = gw.process.child.pid as number;
    // Let the start-up work (workers' hellos, the first scrape of waitForWorkers) finish.
    await delay(1000);
    const before = wakeups(pid);
    await delay(3000);
    const woken = wakeups(pid) - before;
    assert.ok(woken < 30, `the primary's main thread was woken ${woken} times in 3 s of idling`);
  },
);

test('workers: /metrics still reports event-loop lag, measured in the workers that serve requests', async () => {
  for (let i = 0; i < 10; i++) assert.equal((await request(`${gw.data}/hello`)).status, 200);
  const text = await gw.metrics();
  for (const series of ['nodejs_eventloop_lag_p99_seconds', 'nodejs_eventloop_lag_max_seconds']) {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    assert.ok(line !== undefined, `${series} is in /metrics`);
    const value = Number(line.slice(series.length + 1));
    // The workers' monitors sample every 10 ms: a real delay, never the empty-histogram sentinel.
    assert.ok(Number.isFinite(value) && value > 0 && value < 60, `${line}`);
  }
});
