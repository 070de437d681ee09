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
    description: a route with a fairly long description to see that the table still fits at 1024 pixels
consumers:
  - name: bob
    credentials: { key-auth: { key: k } }
plugin_configs:
  - name: teapot
    type: mocking
    config: { response_status: 418 }
supernodes:
  - name: guard
    nodes:
      - { id: input, type: input }
      - { id: output, type: output }
    edges:
      - { from: input.out, to: output.in }
policies:${mockPolicyYaml('hello-policy', 'hello')}`;

/** Every main view, and what shows it is ready (an open editor where the view has one). */
const VIEWS: [string, (page: Page) => Promise<void>][] = [
  ['#/routes', (p) => p.locator('tr[data-route="hello"]').waitFor()],
  ['#/policies', (p) => p.locator('tr[data-policy="hello-policy"]').waitFor()],
  [
    '#/policies/hello-policy',
    async (p) => {
      await expectCount('nodes', () => nodesOf(p).count(), 3);
      await selectNode(p, 'm');
    },
  ],
  ['#/supernodes', (p) => p.locator('tr[data-name="guard"]').waitFor()],
  ['#/supernodes/guard', (p) => expectCount('nodes', () => nodesOf(p).count(), 2)],
  [
    '#/plugin-configs',
    async (p) => {
      await p.locator('tr[data-name="teapot"]').getByRole('button', { name: 'Edit' }).click();
      await p.getByRole('form', { name: 'Node config form' }).waitFor();
    },
  ],
  [
    '#/consumers',
    async (p) => {
      await p.locator('tr[data-consumer="bob"]').getByRole('button', { name: 'Edit' }).click();
      await p.getByRole('form', { name: 'Consumer' }).waitFor();
    },
  ],
  ['#/stores', (p) => p.getByRole('heading', { name: 'Stores' }).waitFor()],
  ['#/sessions', (p) => p.getByRole('heading', { name: 'Sessions' }).waitFor()],
  ['#/certificates', (p) => p.getByRole('heading', { name: 'Certificates' }).waitFor()],
  ['#/traces', (p) => p.getByRole('heading', { name: 'Traces' }).waitFor()],
];

const CONTROLS =
  'button, a[href], input:not([type=hidden]), select, textarea, [role=button], [role=tab], [role=switch], [role=checkbox], [role=combobox]';

/**
 * Visible controls that are cut off at the right edge, or that have no
 * accessible name (aria-label, aria-labelledby, a label, text or title):
 * a small axe-like check of the rules the tests rely on.
 */
interface Audit {
  clipped: string[];
  unnamed: string[];
  overflow: number;
}

// Runs in the page (plain JavaScript: the tests are compiled without the DOM types).
const AUDIT_SOURCE = `function audit(selector) {
  const describeEl = (el) =>
    \`\${el.tagName.toLowerCase()}\${el.id === '' ? '' : \`#\${el.id}\`}.\${[...el.classList].join('.')} "\${(el.textContent ?? '').trim().slice(0, 30)}"\`;
  const nameOf = (el) => {
    const aria = el.getAttribute('aria-label');
    if (aria !== null && aria.trim() !== '') return aria;
    const by = el.getAttribute('aria-labelledby');
    if (by !== null) return by.split(/\\s+/).map((id) => document.getElementById(id)?.textContent ?? '').join(' ').trim();
    if (el instanceof HTMLInputElement || el instanceof HTMLSelectElement || el instanceof HTMLTextAreaElement) {
      const labels = [...(el.labels ?? [])].map((l) => l.textContent ?? '').join(' ').trim();
      if (labels !== '') return labels;
    } else {
      const text = (el.textContent ?? '').trim();
      if (text !== '') return text;
    }
    return el.getAttribute('title') ?? '';
  };
  const width = document.documentElement.clientWidth;
  const clipped = [];
  const unnamed = [];
  for (const el of document.querySelectorAll(selector)) {
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    if (box.width === 0 || box.height === 0 || style.visibility === 'hidden') continue;
    // Inside the canvas, nodes may sit outside the viewport: panning shows them.
    if (el.closest('.react-flow__viewport') === null && (box.left < 0 || box.right > width + 0.5))
      clipped.push(\`\${describeEl(el)} at \${Math.round(box.left)}–\${Math.round(box.right)}\`);
    if (nameOf(el) === '') unnamed.push(describeEl(el));
  }
  return { clipped, unnamed, overflow: document.documentElement.scrollWidth - width };
}`;

const audit = (page: Page): Promise<Audit> =>
  page.evaluate<Audit>(`(${AUDIT_SOURCE})(${JSON.stringify(CONTROLS)})`);

describe('editor layout and accessible names on every main view', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  before(async () => {
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
  });

  test('layout: at 1024 px every main view fits without horizontal scrolling, no control is clipped and every control has a name', () =>
    withEditor(browser, '#/routes', { gatewayYaml: GATEWAY_YAML, width: 1024 }, async (page, h) => {
      for (const [hash, ready] of VIEWS) {
        await page.goto(`${h.url}/${hash}`);
        await ready(page);
        const found = await audit(page);
        assert.ok(found.overflow <= 0, `${hash} scrolls sideways by ${found.overflow} px`);
        assert.deepEqual(found.clipped, [], `clipped controls on ${hash}`);
        assert.deepEqual(found.unnamed, [], `controls without an accessible name on ${hash}`);
      }
    }));

  test('accessibility: the audit finds an unnamed control and a clipped one when there is one', () =>
    withEditor(browser, '#/routes', { gatewayYaml: GATEWAY_YAML, width: 1024 }, async (page) => {
      await page.locator('tr[data-route="hello"]').waitFor();
      await page.evaluate(`{
        const b = document.createElement('button');
        b.className = 'probe';
        b.style.cssText = 'position:absolute;left:1000px;width:80px;height:20px';
        document.body.append(b);
      }`);
      const found = await audit(page);
      assert.equal(found.unnamed.filter((u) => u.includes('probe')).length, 1);
      assert.equal(found.clipped.filter((u) => u.includes('probe')).length, 1);
    }));
});
