import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { mockPolicyYaml, type AdminHarness } from '../admin/harness.js';
import { chromiumSkipReason } from '../support/chromium.js';
import {
  addFromPalette,
  admin,
  buildUiAndLaunch,
  edgesOf,
  expectCount,
  nodesOf,
  selectNode,
  storedPolicy,
  withEditor,
} from './harness.js';

// A policy with positions, an error handler, a description and a config_ref: everything a save could disturb.
const GATEWAY_YAML = `routes:
  - name: hello
    match: { path: /hello }
    policy: hello-policy
  - name: rich
    match: { path: /rich }
    policy: rich-policy
plugin_configs:
  - name: teapot
    type: mocking
    config: { response_status: 418 }
policies:${mockPolicyYaml('hello-policy', 'hello')}
  - name: rich-policy
    description: kept as it was
    error_handler: oops
    nodes:
      - { id: in, type: listener, position: { x: 0, y: 0 } }
      - { id: tea, type: mocking, config_ref: teapot, config: { response_example: brewed }, position: { x: 280, y: 0 } }
      - { id: oops, type: mocking, config: { response_status: 500, response_example: oops } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: tea.in }
      - { from: tea.success, to: out.in }
      - { from: oops.success, to: out.in }
`;

const key = (page: Page, combo: string) => page.keyboard.press(combo);

describe('editor history and shortcuts', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  before(async () => {
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
  });

  const open = (policy: string, run: (page: Page, h: AdminHarness) => Promise<void>) =>
    withEditor(browser, `#/policies/${policy}`, { gatewayYaml: GATEWAY_YAML }, run);

  test('history: Ctrl+Z undoes graph and form edits one by one and Ctrl+Shift+Z redoes them', () =>
    open('hello-policy', async (page) => {
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await addFromPalette(page, 'redirect');
      await expectCount('nodes', () => nodesOf(page).count(), 4);
      await selectNode(page, 'm');
      const example = page
        .getByRole('form', { name: 'Node config form' })
        .getByRole('textbox', { name: 'response_example' });
      await example.fill('typo');
      await page.locator('.react-flow__pane').click({ position: { x: 5, y: 5 } });

      await key(page, 'Control+z'); // the form edit
      await selectNode(page, 'm');
      assert.equal(await example.inputValue(), 'hello');
      await page.locator('.react-flow__pane').click({ position: { x: 5, y: 5 } });
      await key(page, 'Control+z'); // the added node
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await key(page, 'Control+Shift+z');
      await expectCount('nodes', () => nodesOf(page).count(), 4);
      await key(page, 'Control+Shift+z');
      await selectNode(page, 'm');
      assert.equal(await example.inputValue(), 'typo');
      await page.getByRole('button', { name: 'Undo' }).click();
      assert.equal(await example.inputValue(), 'hello');
      await page.getByRole('button', { name: 'Redo' }).click();
      assert.equal(await example.inputValue(), 'typo');
    }));

  test('history: deleting a node removes its edges, and undo brings both back', () =>
    open('hello-policy', async (page, h) => {
      await expectCount('edges', () => edgesOf(page).count(), 2);
      await selectNode(page, 'm');
      await page.getByRole('button', { name: 'Delete node' }).click();
      await expectCount('nodes', () => nodesOf(page).count(), 2);
      await expectCount('edges', () => edgesOf(page).count(), 0);
      await key(page, 'Control+z');
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await expectCount('edges', () => edgesOf(page).count(), 2);
      await key(page, 'Control+Shift+z');
      await expectCount('edges', () => edgesOf(page).count(), 0);
      // Saved: the gateway refuses a listener with no edge, so the stored policy is untouched.
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText('Not saved: the gateway refused the policy').waitFor();
      assert.equal(((await storedPolicy(h, 'hello-policy')).edges as unknown[]).length, 2);
    }));

  test('history: saving an unchanged graph stores exactly what was loaded', () =>
    open('rich-policy', async (page, h) => {
      await expectCount('nodes', () => nodesOf(page).count(), 4);
      const before = await storedPolicy(h, 'rich-policy');
      const etag = (await admin(h, 'GET', '/api/policies/rich-policy')).headers.etag;
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText("Saved 'rich-policy'").waitFor();
      assert.deepEqual(await storedPolicy(h, 'rich-policy'), before);
      assert.equal((await admin(h, 'GET', '/api/policies/rich-policy')).headers.etag, etag, 'same ETag');
    }));

  test('history: leaving with unsaved changes asks first, and staying keeps the edit', () =>
    open('hello-policy', async (page) => {
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await addFromPalette(page, 'redirect');
      await page.getByText('Unsaved changes').waitFor();
      const asked: string[] = [];
      page.once('dialog', (dialog) => {
        asked.push(dialog.message());
        void dialog.dismiss();
      });
      await page.getByRole('link', { name: 'Routes' }).click();
      await page.waitForFunction("window.location.hash === '#/policies/hello-policy'");
      assert.match(asked[0] ?? '', /unsaved changes/);
      await expectCount('nodes', () => nodesOf(page).count(), 4);
    }));

  test('shortcuts: ? lists every keyboard shortcut, Escape closes the list', () =>
    open('hello-policy', async (page) => {
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await page.locator('.react-flow__pane').click({ position: { x: 5, y: 5 } });
      await key(page, '?');
      const dialog = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
      const text = await dialog.innerText();
      for (const shortcut of ['Ctrl+S', 'Ctrl+Z', 'Ctrl+Shift+Z', 'Delete', '/'])
        assert.ok(text.includes(shortcut), shortcut);
      await key(page, 'Escape');
      await dialog.waitFor({ state: 'detached' });
      // `/` jumps to the palette search.
      await key(page, '/');
      assert.equal(await page.evaluate("document.activeElement?.getAttribute('aria-label')"), 'Search nodes');
    }));
});
