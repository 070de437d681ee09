import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { chromiumSkipReason } from '../support/chromium.js';
import { withEditor, buildUiAndLaunch } from './harness.js';

import { GATEWAY_YAML, key, leave } from './undo-fixture.js';

describe(
  'undo, redo and the unsaved guard in the route and consumer forms',
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

    test('routes: Ctrl+Z undoes a field edit in the route form, Ctrl+Shift+Z redoes it, leaving asks first', () =>
      open('#/routes', async (page) => {
        await page.locator('tr[data-route="hello"]').getByRole('button', { name: 'Edit' }).click();
        const form = page.getByRole('form', { name: 'Route' });
        const path = form.getByRole('textbox', { name: 'Path' });
        await path.fill('/typo');
        await form.getByText('Unsaved changes').waitFor();
        await key(page, 'Control+z');
        assert.equal(await path.inputValue(), '/hello');
        await key(page, 'Control+Shift+z');
        assert.equal(await path.inputValue(), '/typo');
        assert.match(await leave(page, 'Consumers', false), /unsaved changes/);
        assert.equal(await page.evaluate('window.location.hash'), '#/routes');
        assert.equal(await path.inputValue(), '/typo');
        await form.getByRole('button', { name: 'Undo' }).click();
        assert.equal(await path.inputValue(), '/hello');
        // Back where it was loaded: nothing unsaved, leaving asks nothing.
        assert.equal(await leave(page, 'Consumers', true), '');
        await page.locator('tr[data-consumer="bob"]').waitFor();
      }));

    test('consumers: the consumer form undoes and redoes, and Close with unsaved changes asks first', () =>
      open('#/consumers', async (page) => {
        await page.locator('tr[data-consumer="bob"]').getByRole('button', { name: 'Edit' }).click();
        const form = page.getByRole('form', { name: 'Consumer' });
        const group = form.getByRole('textbox', { name: 'Group' });
        await group.fill('gold');
        await key(page, 'Control+z');
        assert.equal(await group.inputValue(), '');
        await key(page, 'Control+y');
        assert.equal(await group.inputValue(), 'gold');
        const asked: string[] = [];
        page.once('dialog', (d) => {
          asked.push(d.message());
          void d.dismiss();
        });
        await form.getByRole('button', { name: 'Close' }).click();
        assert.match(asked[0] ?? '', /unsaved changes/);
        assert.equal(await group.inputValue(), 'gold', 'staying keeps the edit');
      }));
  },
);
