import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { mockPolicyYaml, type AdminHarness } from '../admin/harness.js';
import { chromiumSkipReason } from '../support/chromium.js';
import {
  adminJson,
  buildUiAndLaunch,
  centre,
  expectCount,
  nodesOf,
  selectNode,
  withEditor,
} from './harness.js';

const GATEWAY_YAML = `routes:
  - name: hello
    match: { path: /hello }
    policy: hello-policy
supernodes:
  - name: guard
    nodes:
      - { id: input, type: input }
      - { id: output, type: output }
      - { id: blocked, type: output }
      - { id: auth, type: key-auth, config: { keys: [k1] } }
    edges:
      - { from: input.out, to: auth.in }
      - { from: auth.success, to: output.in }
      - { from: auth.denied, to: blocked.in }
plugin_configs:
  - name: teapot
    type: mocking
    config: { response_status: 418, response_example: short and stout }
policies:${mockPolicyYaml('hello-policy', 'hello')}`;

const palette = (page: Page) => page.getByRole('complementary', { name: 'Node palette' });

describe('editor palette', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  before(async () => {
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
  });

  const open = (run: (page: Page, h: AdminHarness) => Promise<void>) =>
    withEditor(browser, '#/policies/hello-policy', { gatewayYaml: GATEWAY_YAML }, async (page, h) => {
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await run(page, h);
    });

  test('palette: every node type of /api/plugins is offered, grouped by its family', () =>
    open(async (page, h) => {
      const { plugins } = await adminJson<{ plugins: { type: string; category: string }[] }>(
        h,
        '/api/plugins',
      );
      await palette(page).getByRole('button', { name: 'Expand all' }).click();
      const families = [...new Set(plugins.map((p) => p.category))];
      for (const family of families) {
        const expected = plugins.filter((p) => p.category === family).map((p) => `Add ${p.type}`);
        const list = palette(page).getByRole('list', { name: family, exact: true });
        const offered: string[] = [];
        for (const button of await list.getByRole('button').all()) {
          offered.push((await button.getAttribute('aria-label')) ?? '');
        }
        assert.deepEqual(offered.sort(), expected.sort(), `family ${family}`);
      }
      const total = await palette(page)
        .locator(
          '.palette-family:not([data-family="supernodes"]):not([data-family="shared configs"]) .palette-item',
        )
        .count();
      assert.equal(total, plugins.length);
    }));

  test('palette: families start collapsed and expand and collapse on click', () =>
    open(async (page) => {
      const head = palette(page).getByRole('button', { name: /^▸ auth/ });
      assert.equal(await head.getAttribute('aria-expanded'), 'false');
      assert.equal(await palette(page).getByRole('button', { name: 'Add key-auth', exact: true }).count(), 0);
      await head.click();
      const expanded = palette(page)
        .getByRole('button', { name: /auth \(\d+\)/ })
        .first();
      assert.equal(await expanded.getAttribute('aria-expanded'), 'true');
      await palette(page).getByRole('button', { name: 'Add key-auth', exact: true }).waitFor();
      await expanded.click();
      await palette(page)
        .getByRole('button', { name: 'Add key-auth', exact: true })
        .waitFor({ state: 'detached' });
    }));

  test('palette: a search by description finds the node type and a click adds it, selected', () =>
    open(async (page) => {
      const search = palette(page).getByRole('searchbox', { name: 'Search nodes' });
      await search.fill('fixed-window');
      const found = palette(page).locator('.palette-item');
      await expectCount('search results', () => found.count(), 1);
      assert.equal(await found.getAttribute('aria-label'), 'Add limit-count');
      await found.click();
      await page.locator('[data-node-id="limit-count-1"]').waitFor();
      await page
        .getByRole('form', { name: 'Node config form' })
        .getByRole('spinbutton', { name: 'count' })
        .waitFor();
      await search.fill('no such node anywhere');
      await palette(page).getByText('No node matches').waitFor();
    }));

  test('palette: a node type dragged onto the canvas lands where it is dropped', () =>
    open(async (page) => {
      await palette(page).getByRole('searchbox', { name: 'Search nodes' }).fill('redirect');
      const from = await centre(page, '[data-palette-item="redirect"]');
      const canvas = await page.locator('.canvas').boundingBox();
      assert.ok(canvas);
      const drop = { x: canvas.x + canvas.width - 120, y: canvas.y + canvas.height - 80 };
      const dataTransfer = await page.evaluateHandle('new DataTransfer()');
      await page.dispatchEvent('[data-palette-item="redirect"]', 'dragstart', { dataTransfer });
      await page.dispatchEvent('.react-flow__pane', 'dragover', {
        dataTransfer,
        clientX: drop.x,
        clientY: drop.y,
      });
      await page.dispatchEvent('.react-flow__pane', 'drop', {
        dataTransfer,
        clientX: drop.x,
        clientY: drop.y,
      });
      const box = await page.locator('[data-node-id="redirect-1"]').boundingBox();
      assert.ok(box, 'the dropped node is on the canvas');
      assert.ok(
        Math.abs(box.x - drop.x) < 40 && Math.abs(box.y - drop.y) < 40,
        `dropped at ${box.x},${box.y}`,
      );
      assert.ok(from.x < canvas.x, 'the palette sits left of the canvas');
    }));

  test('palette: clicking a node on the canvas opens its config form with typed fields and defaults', () =>
    open(async (page) => {
      await selectNode(page, 'm');
      const form = page.getByRole('form', { name: 'Node config form' });
      assert.equal(await form.getByRole('textbox', { name: 'response_example' }).inputValue(), 'hello');
      const status = form.getByRole('spinbutton', { name: 'response_status' });
      assert.equal(await status.getAttribute('placeholder'), 'default 200');
      assert.equal(
        await form.getByRole('switch', { name: 'with_mock_header' }).isChecked(),
        true,
        'default true',
      );
    }));

  test('palette: supernodes and shared configs are offered; an instance shows its ports and a read-only inside', () =>
    open(async (page) => {
      await palette(page).getByRole('button', { name: 'Add guard' }).waitFor({ state: 'detached' });
      await palette(page)
        .getByRole('button', { name: /supernodes \(1\)/ })
        .click();
      await palette(page).getByRole('button', { name: 'Add guard' }).click();
      const instance = page.locator('[data-node-id="guard-1"]');
      await instance.waitFor();
      assert.deepEqual(await instance.locator('.port-label').allInnerTexts(), [
        'success',
        'blocked',
        'error',
      ]);
      const inside = page.getByRole('region', { name: 'Inside supernode guard' });
      assert.match(await inside.innerText(), /auth\s+key-auth/);
      assert.match(await inside.innerText(), /auth\.denied → blocked\.in/);

      await palette(page)
        .getByRole('button', { name: /shared configs \(1\)/ })
        .click();
      await palette(page).getByRole('button', { name: 'Add teapot' }).click();
      const shared = page.locator('[data-node-id="teapot-1"]');
      assert.match(await shared.innerText(), /mocking[\s\S]*config_ref: teapot/);
      assert.equal(await page.getByLabel('config_ref').inputValue(), 'teapot');
    }));
});
