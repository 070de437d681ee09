import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { mockPolicyYaml } from '../admin/harness.js';
import { chromiumSkipReason } from '../support/chromium.js';
import { buildUiAndLaunch, dataPlane, expectCount, nodesOf, selectNode, withEditor } from './harness.js';
import { horizontalOverflow, lowContrastTexts, navRows, unnamedControls } from './page-audit.js';

// F10 (contrast), F13 (1024 px), F12/names: every page of the console, in both themes, at the
// two widths docs/editor.md promises, with its forms open where a page has one.

const GATEWAY_YAML = `routes:
  - name: hello
    match: { path: /hello }
    policy: hello-policy
    description: the greeting
stores:
  - { name: cache, type: redis, url: 'redis://127.0.0.1:1' }
plugin_configs:
  - name: teapot
    type: mocking
    description: the shared 418 answer
    config: { response_status: 418 }
supernodes:
  - name: guard
    nodes:
      - { id: input, type: input }
      - { id: output, type: output }
    edges:
      - { from: input.out, to: output.in }
consumers:
  - name: bob
    group: gold
    credentials: { key-auth: { key: k } }
policies:${mockPolicyYaml('hello-policy', 'hello')}
  - name: orders-policy
    nodes:
      - { id: listener, type: listener }
      - id: backend
        type: upstream
        config:
          targets:
            - { host: orders-1.internal.example, port: 8080, weight: 3 }
            - { host: orders-2.internal.example, port: 8080, weight: 1 }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: backend.in }
      - { from: backend.success, to: client.in }`;

const SYSTEM = 'debug: { enabled: true, trace_all: true, sandbox: true }';

/** Each page with what makes it complete: its rows loaded, its form open. */
const PAGES: [string, (page: Page) => Promise<void>][] = [
  [
    '#/routes',
    async (page) => {
      await page.locator('tr[data-route="hello"]').getByRole('button', { name: 'Edit' }).click();
      await page.getByRole('form', { name: 'Route' }).waitFor();
    },
  ],
  ['#/policies', (page) => page.locator('tr[data-policy="hello-policy"]').waitFor()],
  [
    '#/policies/hello-policy',
    async (page) => {
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await selectNode(page, 'm');
    },
  ],
  [
    '#/policies/orders-policy',
    async (page) => {
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await selectNode(page, 'backend');
      await page.getByRole('form', { name: 'Node config form' }).waitFor();
    },
  ],
  ['#/supernodes', (page) => page.locator('tr[data-name="guard"]').waitFor()],
  [
    '#/plugin-configs',
    async (page) => {
      await page.locator('tr[data-name="teapot"]').getByRole('button', { name: 'Edit' }).click();
      await page
        .getByRole('button', { name: /Save|Close/ })
        .first()
        .waitFor();
    },
  ],
  [
    '#/consumers',
    async (page) => {
      await page.locator('tr[data-consumer="bob"]').getByRole('button', { name: 'Edit' }).click();
      await page.getByRole('form', { name: 'Consumer' }).waitFor();
    },
  ],
  ['#/stores', (page) => page.locator('tr[data-name="cache"]').waitFor()],
  ['#/sessions', (page) => page.getByRole('heading', { name: 'Sessions' }).waitFor()],
  ['#/certificates', (page) => page.getByRole('heading', { name: 'Certificates' }).waitFor()],
  [
    '#/traces',
    async (page) => {
      await page.locator('table[aria-label="Traces"] tbody tr').first().waitFor();
      await page.getByRole('region', { name: 'Sandbox' }).waitFor();
    },
  ],
  ['#/no-such-page', (page) => page.getByRole('heading', { name: 'Page not found' }).waitFor()],
];

async function setTheme(page: Page, theme: 'light' | 'dark'): Promise<void> {
  const toggle = page.getByRole('button', { name: 'Dark theme' });
  if ((await toggle.getAttribute('aria-pressed')) !== String(theme === 'dark')) await toggle.click();
  assert.equal(await page.locator('html').getAttribute('data-theme'), theme);
}

async function auditEveryPage(browser: Browser, width: number): Promise<void> {
  await withEditor(
    browser,
    '#/routes',
    { gatewayYaml: GATEWAY_YAML, system: SYSTEM, width },
    async (page, h) => {
      await dataPlane(h, '/hello'); // one trace for the Traces table
      const problems: string[] = [];
      for (const theme of ['light', 'dark'] as const) {
        for (const [hash, ready] of PAGES) {
          await page.goto(`${h.url}/${hash}`);
          await ready(page);
          await setTheme(page, theme);
          const at = `${hash} (${theme}, ${width} px)`;
          for (const low of await lowContrastTexts(page))
            problems.push(
              `${at}: "${low.text}" ${low.ratio}:1 (${low.color} on ${low.background}) at ${low.where}`,
            );
          for (const line of await unnamedControls(page)) problems.push(`${at}: unnamed ${line.trim()}`);
          for (const line of await horizontalOverflow(page)) problems.push(`${at}: overflow ${line}`);
          const rows = await navRows(page);
          if (rows !== 1) problems.push(`${at}: the top nav wraps onto ${rows} lines`);
        }
      }
      assert.deepEqual(problems, []);
    },
  );
}

describe('page audit: contrast, names and overflow on every page', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  before(async () => {
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
  });

  test('F10 F13: every text ≥ 4.5:1, every control named, nothing wider than the window at 1024 px, both themes', () =>
    auditEveryPage(browser, 1024));

  test('F10: every text ≥ 4.5:1 and every control named at 1400 px, both themes', () =>
    auditEveryPage(browser, 1400));
});
