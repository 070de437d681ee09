import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { chromiumSkipReason } from '../support/chromium.js';
import { startOrigin, type Origin } from '../support/origins.js';
import {
  admin,
  buildUiAndLaunch,
  dataPlane,
  expectCount,
  nodesOf,
  storedPolicy,
  withEditor,
} from './harness.js';

// Latencies the origin adds, in ms: eight at 300 (bucket 250–500 ms), two at 1200 (bucket 1–2.5 s).
const DELAYS = [300, 300, 300, 300, 300, 300, 300, 300, 1200, 1200];
// The node run-time histogram's bounds (gateway_node_duration_seconds, docs/metrics.md).
const BOUNDS_MS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000];

/** The bucket [lower, upper] in ms that holds rank q·count of the node's histogram in /metrics. */
function bucketOf(metrics: string, node: string, q: number): [number, number] {
  const counts = new Map<number, number>();
  for (const m of metrics.matchAll(/^gateway_node_duration_seconds_bucket\{([^}]*)\} (\d+)$/gm)) {
    const labels = m[1] ?? '';
    if (!labels.includes(`node_id="${node}"`)) continue;
    const le = /le="([^"]+)"/.exec(labels)?.[1] ?? '';
    const bound = le === '+Inf' ? Infinity : Number(le) * 1000;
    counts.set(bound, (counts.get(bound) ?? 0) + Number(m[2]));
  }
  const sorted = [...counts].sort((a, b) => a[0] - b[0]);
  const total = sorted.at(-1)?.[1] ?? 0;
  let lower = 0;
  for (const [upper, count] of sorted) {
    if (count >= q * total) return [lower, upper];
    lower = upper;
  }
  throw new Error(`no bucket for q=${q}`);
}

const yaml = (port: number) => `routes:
  - name: slow
    match: { path: /slow }
    policy: slow-policy
policies:
  - name: slow-policy
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`;

const figure = (text: string, name: string): number => {
  const m = new RegExp(`${name} ≈?([0-9.]+) ms`).exec(text);
  assert.ok(m, `${name} in "${text}"`);
  return Number(m[1]);
};

describe('editor metrics overlay', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  let origin: Origin;
  before(async () => {
    browser = await buildUiAndLaunch();
    origin = await startOrigin((req, res) => {
      const delay = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('delay') ?? 0);
      setTimeout(() => res.end('ok'), delay);
    });
  });
  after(async () => {
    await browser?.close();
    await origin?.close();
  });

  test('metrics: p50 and p99 are interpolated inside the histogram bucket that holds the true value, and the mean is exact', () =>
    withEditor(browser, '#/policies/slow-policy', { gatewayYaml: yaml(origin.port) }, async (page, h) => {
      const roundTrips: number[] = [];
      for (const delay of DELAYS) {
        const started = performance.now();
        assert.equal((await dataPlane(h, `/slow?delay=${delay}`)).status, 200);
        roundTrips.push(performance.now() - started);
      }
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await page.getByRole('button', { name: 'Metrics' }).click();
      const text = await page.locator('[data-node-id="up"] .pnode-figures').innerText();
      assert.match(text, /^10 runs · 0 errors/);
      const metrics = (await admin(h, 'GET', '/metrics')).body;
      for (const [name, q, atLeast] of [
        ['p50', 0.5, 300],
        ['p99', 0.99, 1200],
      ] as const) {
        const shown = figure(text, name);
        const [lower, upper] = bucketOf(metrics, 'up', q);
        // The bucket holding the true quantile, and the true value is at least the origin's delay.
        assert.ok(upper >= atLeast, `${name} bucket ${lower}–${upper} ms holds a value >= ${atLeast} ms`);
        assert.ok(shown > lower && shown < upper, `${name} ${shown} ms inside (${lower}, ${upper}) ms`);
        // Interpolated, not a bucket bound (what the overlay used to print).
        assert.ok(!BOUNDS_MS.includes(shown), `${name} ${shown} ms is not a bucket bound`);
      }
      // The mean is run time over runs: at least the origin's delays, at most what the client waited.
      const mean = figure(text, 'mean');
      const delays = DELAYS.reduce((a, b) => a + b, 0) / DELAYS.length;
      const waited = roundTrips.reduce((a, b) => a + b, 0) / roundTrips.length;
      assert.ok(
        mean >= delays - 1 && mean <= waited + 1,
        `mean ${mean} ms within [${delays}, ${waited.toFixed(1)}] ms`,
      );
    }));

  test('F26 metrics: runs, errors and quantiles cover one labelled window, so a recompiled policy shows 0 runs and no stale p50/p99; the button shows it is pressed', () =>
    withEditor(browser, '#/policies', { gatewayYaml: yaml(origin.port) }, async (page, h) => {
      for (const delay of [300, 300]) assert.equal((await dataPlane(h, `/slow?delay=${delay}`)).status, 200);
      // A change to the policy recompiles it: its node counters start again, the upstream histogram does not.
      const policy = await storedPolicy(h, 'slow-policy');
      const nodes = (policy.nodes as { id: string; config?: Record<string, unknown> }[]).map((n) =>
        n.id === 'up' ? { ...n, config: { ...n.config, timeout_ms: 4000 } } : n,
      );
      assert.equal((await admin(h, 'PUT', '/api/policies/slow-policy', { ...policy, nodes })).status, 200);
      const metrics = (await admin(h, 'GET', '/metrics')).body;
      assert.match(metrics, /^gateway_upstream_duration_seconds_count\{[^}]*node_id="up"[^}]*\} 2$/m);

      await page.goto(`${h.url}/#/policies/slow-policy`);
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      const button = page.getByRole('button', { name: 'Metrics' });
      const background = () =>
        page.evaluate<string>(
          "getComputedStyle([...document.querySelectorAll('.editor-toolbar button')].find((b) => b.textContent === 'Metrics')).backgroundColor",
        );
      const unpressed = await background();
      assert.equal(await button.getAttribute('aria-pressed'), 'false');
      await button.click();
      const note = page.getByRole('note', { name: 'Metrics window' });
      await note.waitFor();
      assert.equal(await button.getAttribute('aria-pressed'), 'true');
      const pressed = await background();
      assert.notEqual(pressed, unpressed, 'the pressed state is visible, not only announced');
      assert.match(await note.innerText(), /since this policy was last compiled/);
      const figures = page.locator('[data-node-id="up"] .pnode-figures');
      assert.equal(await figures.innerText(), '0 runs · 0 errors', 'no p50/p99 from before the reload');

      assert.equal((await dataPlane(h, '/slow?delay=300')).status, 200);
      await button.click();
      await figures.waitFor({ state: 'detached' });
      await button.click();
      await note.waitFor();
      const text = await figures.innerText();
      assert.match(text, /^1 runs · 0 errors · mean [0-9.]+ ms · p50 ≈[0-9.]+ ms · p99 ≈[0-9.]+ ms$/);
      const p50 = figure(text, 'p50');
      assert.ok(p50 > 250 && p50 < 500, `p50 ${p50} ms in the 250–500 ms bucket of this window's one run`);
    }));
});
