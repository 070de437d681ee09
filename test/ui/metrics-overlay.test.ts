import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { chromiumSkipReason } from '../support/chromium.js';
import { startOrigin, type Origin } from '../support/origins.js';
import { buildUiAndLaunch, dataPlane, expectCount, nodesOf, withEditor } from './harness.js';

// Latencies the origin adds, in ms: eight in the 100–250 ms bucket, two in the 500–1000 ms bucket.
const DELAYS = [120, 120, 120, 120, 120, 120, 120, 120, 600, 600];

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
      for (const delay of DELAYS) assert.equal((await dataPlane(h, `/slow?delay=${delay}`)).status, 200);
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await page.getByRole('button', { name: 'Metrics' }).click();
      const text = await page.locator('[data-node-id="up"] .pnode-figures').innerText();
      assert.match(text, /^10 runs · 0 errors/);
      // True p50 is about 120 ms: bucket 100–250 ms. True p99 is about 600 ms: bucket 500–1000 ms.
      const p50 = figure(text, 'p50');
      const p99 = figure(text, 'p99');
      assert.ok(p50 > 100 && p50 < 250, `p50 ${p50} ms inside (100, 250)`);
      assert.ok(p99 > 500 && p99 < 1000, `p99 ${p99} ms inside (500, 1000)`);
      // Interpolated, not a bucket bound (what the overlay used to print).
      assert.ok(![100, 250].includes(p50) && ![500, 1000].includes(p99), text);
      // The mean is run time over runs: at least the origin's delays, and not far above on loopback.
      const mean = figure(text, 'mean');
      const trueMean = DELAYS.reduce((a, b) => a + b, 0) / DELAYS.length;
      assert.ok(
        mean >= trueMean - 1 && mean < trueMean + 150,
        `mean ${mean} ms vs delays' mean ${trueMean} ms`,
      );
    }));
});
