import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { diffGraphs } from '../../ui/src/editor/graph-diff.js';
import { chromiumSkipReason } from '../support/chromium.js';
import { admin, adminJson, buildUiAndLaunch, expectCount, nodesOf, withEditor } from './harness.js';

const V1 = {
  name: 'hello-policy',
  nodes: [
    { id: 'in', type: 'listener' },
    { id: 'cors', type: 'cors', config: { allowed_origins: ['https://app.example.com'] } },
    { id: 'm', type: 'mocking', config: { response_example: 'hello', content_type: 'text/plain' } },
    { id: 'out', type: 'client' },
  ],
  edges: [
    { from: 'in.out', to: 'cors.in' },
    { from: 'cors.success', to: 'm.in' },
    { from: 'cors.preflight', to: 'out.in' },
    { from: 'm.success', to: 'out.in' },
  ],
};

/** cors removed, key-auth added in its place, m's answer changed, out unchanged. */
const V2 = {
  name: 'hello-policy',
  nodes: [
    { id: 'in', type: 'listener' },
    { id: 'auth', type: 'key-auth', config: { keys: ['k'] } },
    { id: 'm', type: 'mocking', config: { response_example: 'hi', content_type: 'text/plain' } },
    { id: 'out', type: 'client' },
  ],
  edges: [
    { from: 'in.out', to: 'auth.in' },
    { from: 'auth.success', to: 'm.in' },
    { from: 'auth.denied', to: 'out.in' },
    { from: 'm.success', to: 'out.in' },
  ],
};

const GATEWAY_YAML = `routes:
  - { name: hello, match: { path: /hello }, policy: hello-policy }
policies:
  - ${JSON.stringify(V1)}
`;

/** Computed background, top border colour and style of the first element matching `selector`. */
const colours = (page: Page, selector: string) =>
  page.evaluate<[string, string, string]>(`(() => {
    const s = getComputedStyle(document.querySelector(${JSON.stringify(selector)}));
    return [s.backgroundColor, s.borderTopColor, s.borderTopStyle];
  })()`);

const strokeOf = (page: Page, selector: string) =>
  page.evaluate<string>(`getComputedStyle(document.querySelector(${JSON.stringify(selector)})).stroke`);

describe('config history and graph diff (issue 34 item 2)', () => {
  test('graph diff: nodes added, removed and changed by id, edges by from → to, positions ignored', () => {
    const moved = { ...V1, nodes: V1.nodes.map((n) => ({ ...n, position: { x: 5, y: 5 } })) };
    const diff = diffGraphs(moved, V2);
    const byChange = (change: string) =>
      diff.nodes
        .filter((n) => n.change === change)
        .map((n) => n.id)
        .sort();
    assert.deepEqual(byChange('added'), ['auth']);
    assert.deepEqual(byChange('removed'), ['cors']);
    assert.deepEqual(byChange('changed'), ['m']);
    assert.deepEqual(byChange('same'), ['in', 'out']);
    assert.deepEqual(diff.nodes.find((n) => n.id === 'm')?.fields, ['config.response_example']);
    const edges = (change: string) =>
      diff.edges
        .filter((e) => e.change === change)
        .map((e) => `${e.from} ${e.to}`)
        .sort();
    assert.deepEqual(edges('added'), ['auth.denied out.in', 'auth.success m.in', 'in.out auth.in']);
    assert.deepEqual(edges('removed'), ['cors.preflight out.in', 'cors.success m.in', 'in.out cors.in']);
    assert.deepEqual(edges('same'), ['m.success out.in']);
    assert.deepEqual(
      diffGraphs(undefined, V2).nodes.map((n) => n.change),
      ['added', 'added', 'added', 'added'],
    );
  });
});

describe('config history in the policy editor (issue 34 item 2)', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  before(async () => {
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
  });

  test('history: the editor lists the versions and colours the graph diff of the policy between two of them', () =>
    withEditor(browser, '#/policies', { gatewayYaml: GATEWAY_YAML }, async (page, h) => {
      const put = await admin(h, 'PUT', '/api/policies/hello-policy', V2);
      assert.equal(put.status, 200, put.body);
      const { versions } = await adminJson<{ versions: { version: number; source: string }[] }>(
        h,
        '/api/config/history',
      );
      assert.deepEqual(
        versions.map((v) => v.source),
        ['admin', 'startup'],
      );
      const [newest, first] = versions.map((v) => v.version);

      await page.goto(`${h.url}/#/policies/hello-policy`);
      await expectCount('nodes', () => nodesOf(page).count(), 4);
      const toggle = page.getByRole('button', { name: 'History' });
      assert.equal(await toggle.getAttribute('aria-pressed'), 'false');
      await toggle.click();
      assert.equal(await toggle.getAttribute('aria-pressed'), 'true');
      const side = page.getByRole('complementary', { name: 'History' });
      await expectCount('versions', () => side.locator('table[aria-label="Versions"] tbody tr').count(), 2);
      // By default the newest version against the one before it.
      assert.equal(await side.getByRole('combobox', { name: 'From' }).inputValue(), String(first));
      assert.equal(await side.getByRole('combobox', { name: 'To' }).inputValue(), String(newest));

      const diff = page.getByLabel('Graph diff');
      await expectCount('diff nodes', () => diff.locator('.react-flow__node').count(), 5);
      const node = (id: string) => `.diff-canvas .pnode[data-node-id="${id}"]`;
      assert.equal(await page.locator(node('auth')).getAttribute('data-change'), 'added');
      assert.equal(await page.locator(node('cors')).getAttribute('data-change'), 'removed');
      assert.equal(await page.locator(node('m')).getAttribute('data-change'), 'changed');
      assert.equal(await page.locator(node('in')).getAttribute('data-change'), 'same');
      // Light theme colours of styles.css: --ok-bg/--ok, --error-bg/--danger dashed, --warn-bg/--warn.
      assert.deepEqual(await colours(page, node('auth')), [
        'rgb(238, 249, 241)',
        'rgb(27, 122, 61)',
        'solid',
      ]);
      assert.deepEqual(await colours(page, node('cors')), [
        'rgb(253, 240, 239)',
        'rgb(180, 35, 24)',
        'dashed',
      ]);
      assert.deepEqual(await colours(page, node('m')), ['rgb(255, 244, 214)', 'rgb(154, 103, 0)', 'solid']);
      assert.match(await page.locator(node('m')).innerText(), /config\.response_example/);
      assert.equal(await diff.locator('.react-flow__edge.diff-added').count(), 3);
      assert.equal(await diff.locator('.react-flow__edge.diff-removed').count(), 3);
      assert.equal(await diff.getByRole('group', { name: 'in.out → cors.in (removed)' }).count(), 1);
      const stroke = await strokeOf(
        page,
        '.diff-canvas .react-flow__edge.diff-added path.react-flow__edge-path',
      );
      assert.equal(stroke, 'rgb(27, 122, 61)');
      const summary = side.getByRole('region', { name: 'Changes' });
      assert.match(
        await summary.innerText(),
        /Nodes: 1 added, 1 removed, 1 changed\. Edges: 3 added, 3 removed\./,
      );

      // The same version on both sides: nothing changed.
      await side.getByRole('combobox', { name: 'From' }).selectOption(String(newest));
      await expectCount('changed diff nodes', () => diff.locator('.pnode:not(.diff-same)').count(), 0);
      assert.match(await summary.innerText(), /Nodes: no change\. Edges: no change\./);
      await toggle.click();
      await expectCount(
        'editor nodes',
        () => page.locator('.canvas:not(.diff-canvas) .react-flow__node').count(),
        4,
      );
    }));
});
