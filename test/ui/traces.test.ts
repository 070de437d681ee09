import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { mockPolicyYaml, type AdminHarness } from '../admin/harness.js';
import { chromiumSkipReason } from '../support/chromium.js';
import { buildUiAndLaunch, dataPlane, expectCount, nodesOf, withEditor } from './harness.js';

const GATEWAY_YAML = `routes:
  - name: hello
    match: { path: /hello }
    policy: hello-policy
policies:${mockPolicyYaml('hello-policy', 'hello')}`;

const DEBUG = 'debug: { enabled: true, trace_all: true, sandbox: true }';

describe('editor traces, sandbox and metrics', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  before(async () => {
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
  });

  const open = (hash: string, run: (page: Page, h: AdminHarness) => Promise<void>) =>
    withEditor(browser, hash, { gatewayYaml: GATEWAY_YAML, system: DEBUG }, run);

  test('traces: a live request is listed, filters narrow the list, and opening it draws its path on the graph', () =>
    open('#/routes', async (page, h) => {
      assert.equal((await dataPlane(h, '/hello')).body, 'hello');
      await page.getByRole('link', { name: 'Traces' }).click();
      const rows = page.locator('table[aria-label="Traces"] tbody tr');
      await expectCount('traces', () => rows.count(), 1);
      assert.match(await rows.first().innerText(), /GET \/hello\s+200\s+hello \/ hello-policy\s+2/);

      const filters = page.getByRole('form', { name: 'Trace filters' });
      await filters.getByLabel('Status').fill('404');
      await filters.getByRole('button', { name: 'Refresh' }).click();
      await page.getByText('No traces.').waitFor();
      await filters.getByLabel('Status').fill('200');
      await filters.getByRole('button', { name: 'Refresh' }).click();
      await page.getByRole('link', { name: 'hello / hello-policy' }).click();

      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await expectCount('traced nodes', () => page.locator('.pnode.traced').count(), 2);
      // textContent, not innerText: React Flow keeps a node hidden until it has measured it, and
      // the inner text of a hidden element is empty.
      assert.match(
        (await page.locator('[data-node-id="m"] .pnode-trace').textContent()) ?? '',
        /step 1 · \d+ µs/,
      );
      await expectCount('traced edges', () => page.locator('.react-flow__edge.traced').count(), 2);
      const panel = page.getByRole('region', { name: 'Trace' });
      assert.match(await panel.innerText(), /GET \/hello → 200/);
      assert.match(await panel.locator('[data-step="m"]').innerText(), /m mocking → success \d+ µs/);
      assert.match(await panel.locator('[data-step="m"]').innerText(), /response\.body/);
    }));

  test('sandbox: a request described in the form runs through the policy and its trace opens on the graph', () =>
    open('#/traces', async (page) => {
      const sandbox = page.getByRole('region', { name: 'Sandbox' });
      await sandbox.getByLabel('Path').fill('/hello');
      await sandbox.getByRole('button', { name: 'Run' }).click();
      const result = sandbox.getByRole('status', { name: 'Sandbox result' });
      assert.match(await result.innerText(), /GET \/hello → 200 in 2 steps \(m → out\)/);
      await result.getByRole('link', { name: 'Show on graph' }).click();
      await expectCount('traced nodes', () => page.locator('.pnode.traced').count(), 2);
    }));

  test('metrics: the overlay shows each node’s executions and errors from /metrics', () =>
    open('#/policies/hello-policy', async (page, h) => {
      for (let i = 0; i < 3; i++) assert.equal((await dataPlane(h, '/hello')).status, 200);
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await page.getByRole('button', { name: 'Metrics' }).click();
      const figures = page.locator('[data-node-id="m"] .pnode-figures');
      assert.match(await figures.innerText(), /^3 runs · 0 errors/);
      assert.equal(await page.getByRole('button', { name: 'Metrics' }).getAttribute('aria-pressed'), 'true');
    }));
});
