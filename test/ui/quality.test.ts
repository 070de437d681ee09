import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { mockPolicyYaml } from '../admin/harness.js';
import { chromiumSkipReason } from '../support/chromium.js';
import { buildUiAndLaunch, expectCount, nodesOf, selectNode, withEditor } from './harness.js';

const GATEWAY_YAML = `routes:
  - name: hello
    match: { path: /hello }
    policy: hello-policy
consumers:
  - name: bob
    credentials: { key-auth: { key: k } }
policies:${mockPolicyYaml('hello-policy', 'hello')}`;

const CONTROLS = 'button|textbox|combobox|checkbox|switch|spinbutton|searchbox|link|radio|tab|slider';
/** Lines of the accessibility tree that are a control without a name (`- button`, `- textbox: value`). */
const UNNAMED = new RegExp(`^\\s*- (${CONTROLS})(:| \\[|$)`, 'm');

async function unnamedControls(page: Page): Promise<string[]> {
  const tree = await page.locator('body').ariaSnapshot();
  assert.match(tree, /- (button|link) "/, 'the snapshot lists named controls');
  return tree.split('\n').filter((line) => UNNAMED.test(line));
}

describe('editor quality', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  before(async () => {
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
  });

  test('theme: the dark theme chosen in the top bar survives a reload', () =>
    withEditor(browser, '#/routes', { gatewayYaml: GATEWAY_YAML }, async (page) => {
      const toggle = page.getByRole('button', { name: 'Dark theme' });
      assert.equal(await toggle.getAttribute('aria-pressed'), 'false');
      await toggle.click();
      assert.equal(await page.locator('html').getAttribute('data-theme'), 'dark');
      await page.reload();
      await page.locator('tr[data-route="hello"]').waitFor();
      assert.equal(await page.locator('html').getAttribute('data-theme'), 'dark');
      assert.equal(
        await page.getByRole('button', { name: 'Dark theme' }).getAttribute('aria-pressed'),
        'true',
      );
      const background = await page
        .locator('body')
        .evaluate('getComputedStyle(document.documentElement).backgroundColor');
      assert.equal(background, 'rgb(20, 24, 30)');
    }));

  test('layout: at 1024 px wide the palette, canvas, side panel and Save all fit without horizontal scrolling', () =>
    withEditor(
      browser,
      '#/policies/hello-policy',
      { gatewayYaml: GATEWAY_YAML, width: 1024 },
      async (page) => {
        await expectCount('nodes', () => nodesOf(page).count(), 3);
        await selectNode(page, 'm');
        for (const target of [
          page.getByRole('button', { name: 'Save', exact: true }),
          page.getByRole('searchbox', { name: 'Search nodes' }),
          page.getByRole('form', { name: 'Node config form' }),
          page.locator('.canvas'),
        ]) {
          const box = await target.boundingBox();
          assert.ok(
            box !== null && box.x >= 0 && box.x + box.width <= 1024,
            `${String(target)} inside 1024 px`,
          );
        }
        const scrollWidth = await page.evaluate('document.documentElement.scrollWidth');
        assert.ok(Number(scrollWidth) <= 1024, `page is ${String(scrollWidth)} px wide`);
      },
    ));

  test('accessibility: every control on every main view has an accessible name', () =>
    withEditor(browser, '#/routes', { gatewayYaml: GATEWAY_YAML }, async (page) => {
      const views: [string, () => Promise<void>][] = [
        ['#/routes', () => page.locator('tr[data-route="hello"]').waitFor()],
        ['#/policies', () => page.locator('tr[data-policy="hello-policy"]').waitFor()],
        [
          '#/policies/hello-policy',
          async () => {
            await expectCount('nodes', () => nodesOf(page).count(), 3);
            await selectNode(page, 'm');
          },
        ],
        ['#/consumers', () => page.locator('tr[data-consumer="bob"]').waitFor()],
        ['#/stores', () => page.getByRole('heading', { name: 'Stores' }).waitFor()],
        ['#/sessions', () => page.getByRole('heading', { name: 'Sessions' }).waitFor()],
        ['#/traces', () => page.getByRole('heading', { name: 'Traces' }).waitFor()],
      ];
      for (const [hash, ready] of views) {
        await page.goto(`${page.url().split('#')[0] ?? ''}${hash}`);
        await ready();
        assert.deepEqual(await unnamedControls(page), [], `unnamed controls on ${hash}`);
      }
    }));
});
