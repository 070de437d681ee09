import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { chromiumSkipReason } from '../support/chromium.js';
import {
  addFromPalette,
  adminJson,
  buildUiAndLaunch,
  connect,
  edgesOf,
  expectCount,
  nodesOf,
  withEditor,
} from './harness.js';

import { GATEWAY_YAML, key, leave } from './undo-fixture.js';

describe(
  'undo, redo and the unsaved guard in the shared config form and the supernode graph',
  { skip: chromiumSkipReason() },
  () => {
    let browser: Browser;
    before(async () => {
      browser = await buildUiAndLaunch();
    });
    after(async () => {
      await browser?.close();
    });

    const open = (hash: string, run: Parameters<typeof withEditor>[3]) =>
      withEditor(browser, hash, { gatewayYaml: GATEWAY_YAML }, run);

    test('shared configs: edited in the schema form with undo/redo, the raw toggle shows the same value, Save stores numbers', () =>
      open('#/plugin-configs', async (page, h) => {
        await page.locator('tr[data-name="teapot"]').getByRole('button', { name: 'Edit' }).click();
        const editor = page.getByRole('region', { name: 'Edit shared config' });
        const status = editor.getByRole('spinbutton', { name: 'response_status' });
        assert.equal(await status.inputValue(), '418');
        await status.fill('503');
        await editor.getByRole('textbox', { name: 'response_example' }).fill('busy');
        await key(page, 'Control+z');
        assert.equal(await editor.getByRole('textbox', { name: 'response_example' }).inputValue(), '');
        await key(page, 'Control+z');
        assert.equal(await status.inputValue(), '418');
        await key(page, 'Control+Shift+z');
        assert.equal(await status.inputValue(), '503');
        await editor.getByRole('tab', { name: 'YAML / JSON' }).click();
        assert.match(
          await editor.getByRole('textbox', { name: 'shared config definition' }).inputValue(),
          /response_status: 503/,
        );
        assert.match(await leave(page, 'Routes', false), /unsaved changes/);
        await editor.getByRole('button', { name: 'Save', exact: true }).click();
        await editor.waitFor({ state: 'detached' });
        assert.deepEqual(await adminJson(h, '/api/plugin-configs/teapot'), {
          name: 'teapot',
          type: 'mocking',
          config: { response_status: 503 },
        });
      }));

    test('supernodes: a supernode opens in the graph editor with its input and output, edits undo, and Save stores the graph', () =>
      open('#/supernodes', async (page, h) => {
        await page.getByRole('link', { name: 'Open guard' }).click();
        await expectCount('nodes', () => nodesOf(page).count(), 2);
        assert.equal(
          await page.locator('.react-flow__handle[data-nodeid="input"][data-handleid="in"]').count(),
          0,
        );
        await addFromPalette(page, 'mocking');
        await expectCount('nodes', () => nodesOf(page).count(), 3);
        await key(page, 'Control+z');
        await expectCount('nodes', () => nodesOf(page).count(), 2);
        await key(page, 'Control+Shift+z');
        await expectCount('nodes', () => nodesOf(page).count(), 3);
        await connect(page, 'input', 'success', 'mocking-1');
        await connect(page, 'mocking-1', 'success', 'output');
        await expectCount('edges', () => edgesOf(page).count(), 2);
        assert.match(await leave(page, 'Routes', false), /unsaved changes/);
        await page.getByRole('button', { name: 'Save', exact: true }).click();
        await page.getByText("Saved 'guard'").waitFor();
        const stored = await adminJson<{ nodes: { id: string }[]; edges: { from: string; to: string }[] }>(
          h,
          '/api/supernodes/guard',
        );
        assert.deepEqual(
          stored.nodes.map((n) => n.id),
          ['input', 'output', 'mocking-1'],
        );
        assert.deepEqual(stored.edges.map((e) => `${e.from}->${e.to}`).sort(), [
          'input.out->mocking-1.in',
          'mocking-1.success->output.in',
        ]);
      }));
  },
);
