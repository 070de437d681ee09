/**
 * F7: `workers: 2` metrics Prometheus can trust (docs/workers.md#metrics-traces-sessions): the
 * summed counters never go backwards when a worker dies (the primary keeps what it had counted),
 * the process series are present, and the shipped 5xx-ratio alert does not misfire on a restart.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { load } from 'js-yaml';
import { promtool } from '../support/prometheus.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import {
  many,
  mockPolicy,
  mockPolicyJson,
  sample,
  startClusterGateway,
  total,
  waitForWorkers,
  type ClusterGateway,
} from './harness.js';

const failing = `
  - name: broken
    nodes:
      - { id: listener, type: listener }
      - { id: m, type: mocking, config: { response_status: 503, response_example: down } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: m.in }
      - { from: m.success, to: client.in }`;

const gatewayYaml = `
routes:
  - { name: ok, match: { path: /ok }, policy: ok }
  - { name: broken, match: { path: /broken }, policy: broken }
policies:${mockPolicy('ok', 'fine')}${failing}
`;

/** Worker slot 1 refuses a change naming this text, so the primary replaces it gracefully. */
const REFUSED = 'refused-by-worker-1';
const ALERTS = new URL('../../deploy/prometheus/alerts.yml', import.meta.url).pathname;

let gw: ClusterGateway;

before(async () => {
  gw = await startClusterGateway(gatewayYaml, {
    env: { SWITCHYARD_TEST_WORKER_REJECTS: `1:${REFUSED}` },
  });
  await waitForWorkers(gw, 2);
});

after(async () => gw?.stop());

/** Every counter and histogram sample of an exposition (series text → value). */
function monotonicSeries(text: string): Map<string, number> {
  const kinds = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) kinds.set(m[1]!, m[2]!);
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^([a-z_:][a-z0-9_:]*)(\{[^}]*\})? (\S+)$/gm)) {
    const name = m[1]!;
    const family = kinds.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    const kind = kinds.get(family);
    if (kind === 'counter' || kind === 'histogram') out.set(`${name}${m[2] ?? ''}`, Number(m[3]));
  }
  return out;
}

/** Series of `before` that are lower in `now` (a per-process series of a `gone` pid may end). */
function wentBackwards(before: Map<string, number>, now: Map<string, number>, gone: number[]): string[] {
  const lower: string[] = [];
  for (const [series, value] of before) {
    if (gone.some((pid) => series.includes(`pid="${pid}"`))) continue;
    const later = now.get(series);
    if (later === undefined || later < value) lower.push(`${series}: ${value} -> ${String(later)}`);
  }
  return lower;
}

const requests = (text: string) => total(text, 'gateway_requests_total');

/** The pid of the worker in `slot`, read from an exposition (no scrape of its own). */
function pidOf(text: string, slot: number): number {
  const m = new RegExp(`^gateway_cluster_worker_requests_total\\{worker="${slot}",pid="(\\d+)"\\}`, 'm').exec(
    text,
  );
  assert.ok(m !== null, `worker ${slot} in the scrape`);
  return Number(m[1]);
}

/** True while process `pid` exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Kills worker `victim` of `slot` with SIGKILL and waits for its replacement to serve. */
async function killAndReplace(slot: number, victim: number): Promise<void> {
  process.kill(victim, 'SIGKILL');
  await waitFor(
    async () => {
      const now = await gw.workers();
      return now.size === 2 && now.get(slot) !== undefined && now.get(slot)?.pid !== victim;
    },
    { timeoutMs: 60_000, intervalMs: 200, what: `worker ${slot} to be replaced` },
  );
}

/** Scrapes taken around the SIGKILL, for the alert test. */
const scrapes: string[] = [];

test('F7: after kill -9 of a worker no counter series goes backwards, and the replacement counts on top', async () => {
  const N = 30;
  const failed = 10;
  await many(gw, N - failed, '/ok');
  await many(gw, failed, '/broken');
  // Counted when the response finished: wait until every one of them is in the registry.
  let first = '';
  await waitFor(async () => requests((first = await gw.metrics())) === N, {
    what: `${N} requests counted`,
  });
  assert.equal(sample(first, 'gateway_requests_total{route="broken",status="503"}'), failed);
  const served = await gw.workers();
  // The victim must have counted something for the test to mean anything.
  const [slot, { pid: victim }] = [...served].find(([, w]) => w.requests > 0)!;
  await killAndReplace(slot, victim);
  const second = await gw.metrics();
  assert.equal(total(second, 'gateway_cluster_worker_restarts_total'), 1);
  assert.deepEqual(wentBackwards(monotonicSeries(first), monotonicSeries(second), [victim]), []);
  assert.ok(requests(second) >= N, `requests after the kill: ${requests(second)} (>= ${N})`);
  assert.ok(!second.includes(`pid="${victim}"`), 'the dead worker has no per-process series any more');

  const M = 20;
  await many(gw, M, '/ok');
  let third = '';
  await waitFor(async () => requests((third = await gw.metrics())) >= N + M, {
    what: `${N + M} requests counted`,
  });
  assert.deepEqual(wentBackwards(monotonicSeries(second), monotonicSeries(third), []), []);
  // Both workers answered the later requests (so the replacement's counts are on top).
  const later = await gw.workers();
  assert.equal(later.size, 2);
  scrapes.push(first, second, third);
});

test('F7: process_start_time_seconds is the primary start, each worker has its own, gauges of a dead worker are dropped', async () => {
  const text = await gw.metrics();
  const start = sample(text, 'process_start_time_seconds');
  const primaryStart = sample(scrapes[0] ?? '', 'process_start_time_seconds');
  assert.ok(start > 1_600_000_000, `process_start_time_seconds ${start}`);
  assert.equal(start, primaryStart, 'unchanged by the worker restart');
  const workers = await gw.workers();
  for (const [slot, w] of workers) {
    const own = sample(text, `gateway_cluster_worker_start_time_seconds{worker="${slot}",pid="${w.pid}"}`);
    assert.ok(own >= start, `worker ${slot} started at ${own}, after the primary (${start})`);
  }
  // process_max_fds is the same limit in each of the three processes: the dead fourth is not summed.
  const perProcess = sample(scrapes[0] ?? '', 'process_max_fds') / 3;
  assert.ok(perProcess > 0, 'process_max_fds present');
  assert.equal(sample(text, 'process_max_fds'), perProcess * 3);
  for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'process_open_fds']) {
    assert.ok(sample(text, name) > 0, `${name} present`);
  }
});

test('F7: the shipped SwitchyardHigh5xxRatio alert stays quiet across the restart (promtool, the real scrapes)', () => {
  assert.equal(scrapes.length, 3, 'the kill test ran');
  const rules = load(readFileSync(ALERTS, 'utf8')) as {
    groups: { rules: { alert?: string; expr: string }[] }[];
  };
  const rule = rules.groups.flatMap((g) => g.rules).find((r) => r.alert === 'SwitchyardHigh5xxRatio');
  assert.ok(rule !== undefined, 'alerts.yml has SwitchyardHigh5xxRatio');
  // One sample a minute: the first scrape (history with 1/3 of 5xx, no traffic since) for 10
  // minutes, the scrape after the kill at 10m, the one after M more requests from 11m to 20m.
  const [first, second, third] = scrapes as [string, string, string];
  const labelSets = new Set<string>();
  for (const text of scrapes)
    for (const m of text.matchAll(/^gateway_requests_total\{([^}]*)\} \S+$/gm)) labelSets.add(m[1]!);
  const value = (text: string, labels: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`gateway_requests_total{${labels}} `));
    return line === undefined ? '_' : line.slice(line.lastIndexOf(' ') + 1);
  };
  const inputSeries = [...labelSets].map((labels) => ({
    series: `gateway_requests_total{instance="gw:9090",${labels}}`,
    values: [
      ...Array.from({ length: 10 }, () => value(first, labels)),
      value(second, labels),
      ...Array.from({ length: 10 }, () => value(third, labels)),
    ].join(' '),
  }));
  const dir = tempDir('switchyard-alert-restart-');
  try {
    const file = join(dir.path, 'restart.test.yml');
    const minutes = Array.from({ length: 11 }, (_, i) => 10 + i);
    writeFileSync(
      file,
      JSON.stringify({
        rule_files: [ALERTS],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: inputSeries,
            // The rule's condition is false at every minute after the restart, not only "not firing yet".
            promql_expr_test: minutes.map((m) => ({ expr: rule.expr, eval_time: `${m}m`, exp_samples: [] })),
            alert_rule_test: minutes.map((m) => ({
              eval_time: `${m}m`,
              alertname: 'SwitchyardHigh5xxRatio',
              exp_alerts: [],
            })),
          },
        ],
      }),
    );
    const run = promtool(['test', 'rules', file]);
    assert.equal(run.status, 0, `${run.output}\ninput: ${JSON.stringify(inputSeries, null, 1)}`);
  } finally {
    dir.remove();
  }
});

test('F7: a worker replaced gracefully hands over everything it counted (its final snapshot)', async () => {
  const text = await gw.metrics();
  const before = requests(text);
  const old = pidOf(text, 1);
  const K = 24;
  await many(gw, K, '/ok');
  // No scrape until it exited: its counts reach the primary only by a push or its final snapshot.
  const put = await gw.adminCall('PUT', '/api/policies/ok', mockPolicyJson(REFUSED));
  assert.equal(put.status, 200, await put.text());
  await waitFor(() => !alive(old), { timeoutMs: 30_000, what: `the replaced worker ${old} to exit` });
  assert.match(gw.process.output(), /worker cannot apply the configuration; replacing it/);
  const after = await gw.metrics();
  assert.ok(!after.includes(`pid="${old}"`));
  assert.equal(requests(after), before + K);
});

test('F7: a worker killed with SIGKILL loses nothing it answered more than the push interval (5 s) before', async () => {
  const text = await gw.metrics();
  const before = requests(text);
  const victim = pidOf(text, 1);
  const K = 16;
  await many(gw, K, '/ok');
  // The documented bound: a worker sends its snapshot unasked every 5 s while it answers requests.
  await delay(9_000);
  await killAndReplace(1, victim);
  assert.equal(requests(await gw.metrics()), before + K);
});
