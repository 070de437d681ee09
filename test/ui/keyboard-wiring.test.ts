import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkipReason } from '../support/chromium.js';
import { buildUiAndLaunch, dataPlane, expectCount, nodesOf, storedPolicy, withEditor } from './harness.js';

const GATEWAY_YAML = `consumers:
  - { name: alice, credentials: { key-auth: { key: alice-key } } }
routes:
  - { name: hello, match: { path: /hello }, policy: hello-policy }
policies:
  - name: hello-policy
    nodes:
      - { id: in, type: listener }
      - { id: auth, type: key-auth, config: { use_consumers: true } }
      - { id: m, type: mocking, config: { response_example: hello, content_type: text/plain } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: m.in }
      - { from: auth.denied, to: out.in }
      - { from: m.success, to: out.in }
`;

/** Focuses a node the way Tab does and selects it with Enter, as a keyboard user picks a node. */
async function pickNode(page: Page, id: string): Promise<void> {
  await page.locator(`.react-flow__node[data-id="${id}"]`).focus();
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: `Node ${id}` }).waitFor();
}

/** Focuses a wiring select and types the start of the target, as a keyboard user picks an option. */
async function wireByKeyboard(page: Page, port: string, target: string): Promise<void> {
  const select = page.getByRole('combobox', { name: `${port} →` });
  await select.focus();
  await page.keyboard.type(target);
  await expectCount(
    `${port} wired to ${target}`,
    async () => ((await select.inputValue()) === target ? 1 : 0),
    1,
  );
}

describe('editor keyboard wiring and port names (F12)', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  before(async () => {
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
  });

  test('F12 names: every edge and handle is named port to port, so denied and success differ', () =>
    withEditor(browser, '#/policies/hello-policy', { gatewayYaml: GATEWAY_YAML }, async (page) => {
      await expectCount('nodes', () => nodesOf(page).count(), 4);
      for (const name of [
        'in.out → auth.in',
        'auth.success → m.in',
        'auth.denied → out.in',
        'm.success → out.in',
      ])
        assert.equal(await page.getByRole('group', { name, exact: true }).count(), 1, `edge named "${name}"`);
      assert.equal(
        await page.getByRole('group', { name: /^Edge from/ }).count(),
        0,
        'no edge keeps the portless name',
      );
      for (const name of ['auth.in', 'auth.success', 'auth.denied', 'out.in'])
        assert.equal(await page.getByRole('img', { name, exact: true }).count(), 1, `handle named "${name}"`);
      assert.equal(
        await page.getByRole('group', { name: 'auth (key-auth)' }).count(),
        1,
        'nodes are named id and type',
      );
    }));

  test('F12 keyboard wiring: a node added, wired and saved without the mouse is live on the data plane', () =>
    withEditor(browser, '#/policies/hello-policy', { gatewayYaml: GATEWAY_YAML }, async (page, h) => {
      await expectCount('nodes', () => nodesOf(page).count(), 4);
      // "/" focuses the palette search; Tab reaches the first match; Enter adds it (selected, panel open).
      await page.locator('body').press('/');
      await page.keyboard.type('mocking');
      const add = page.getByRole('button', { name: 'Add mocking', exact: true });
      await add.focus();
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Node mocking-1' }).waitFor();
      await page.getByRole('tab', { name: 'YAML / JSON' }).focus();
      await page.keyboard.press('Enter');
      await page.getByLabel('Node config', { exact: true }).focus();
      await page.keyboard.press('Control+a');
      await page.keyboard.type('{"response_example": "bye", "content_type": "text/plain"}');
      await page.getByRole('button', { name: 'Apply config' }).focus();
      await page.keyboard.press('Enter');
      await page.getByText('Applied to the graph').waitFor();
      await wireByKeyboard(page, 'mocking-1.success', 'out');

      await pickNode(page, 'auth');
      await wireByKeyboard(page, 'auth.success', 'mocking-1');
      await page.getByRole('group', { name: 'auth.success → mocking-1.in', exact: true }).waitFor();
      assert.equal(
        await page.getByRole('group', { name: 'auth.success → m.in' }).count(),
        0,
        'the port had one edge: replaced',
      );
      await page.getByRole('group', { name: 'mocking-1.success → out.in', exact: true }).waitFor();
      // m no longer has an input: unwire its output too, so the gateway accepts the graph.
      await pickNode(page, 'm');
      const mSuccess = page.getByRole('combobox', { name: 'm.success →' });
      await mSuccess.focus();
      await page.keyboard.press('Home');
      await expectCount('m.success unwired', async () => ((await mSuccess.inputValue()) === '' ? 1 : 0), 1);
      await page.getByRole('group', { name: 'm.success → out.in' }).waitFor({ state: 'detached' });
      await page.getByRole('button', { name: 'Delete node' }).focus();
      await page.keyboard.press('Enter');
      await expectCount('nodes', () => nodesOf(page).count(), 4);
      await page.keyboard.press('Control+s');
      const banner = page.getByRole('status').filter({ hasText: /Saved|Not saved/ });
      await banner.waitFor();
      const problems = (await page.locator('.problems li').allInnerTexts()).join(' | ');
      assert.match(await banner.innerText(), /^Saved 'hello-policy'/, problems);

      const stored = (await storedPolicy(h, 'hello-policy')) as { edges: { from: string; to: string }[] };
      assert.deepEqual(stored.edges.map((e) => `${e.from} ${e.to}`).sort(), [
        'auth.denied out.in',
        'auth.success mocking-1.in',
        'in.out auth.in',
        'mocking-1.success out.in',
      ]);
      const answer = await dataPlane(h, '/hello', { 'x-api-key': 'alice-key' });
      assert.equal(answer.status, 200);
      assert.equal(answer.body, 'bye', 'the request now leaves through mocking-1');
    }));
  test('F4 fan-in: one response-side node wired from two branches and saved serves both', () =>
    withEditor(browser, '#/policies/hello-policy', { gatewayYaml: GATEWAY_YAML }, async (page, h) => {
      await expectCount('nodes', () => nodesOf(page).count(), 4);
      await page.locator('body').press('/');
      await page.keyboard.type('response-rewrite');
      const add = page.getByRole('button', { name: 'Add response-rewrite', exact: true });
      await add.focus();
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Node response-rewrite-1' }).waitFor();
      await page.getByRole('tab', { name: 'YAML / JSON' }).focus();
      await page.keyboard.press('Enter');
      await page.getByLabel('Node config', { exact: true }).focus();
      await page.keyboard.press('Control+a');
      await page.keyboard.type('{"headers": {"set": {"x-shared": "yes"}}}');
      await page.getByRole('button', { name: 'Apply config' }).focus();
      await page.keyboard.press('Enter');
      await page.getByText('Applied to the graph').waitFor();
      await wireByKeyboard(page, 'response-rewrite-1.success', 'out');

      // Both branches into the one node: m.success and auth.denied.
      await pickNode(page, 'm');
      await wireByKeyboard(page, 'm.success', 'response-rewrite-1');
      await pickNode(page, 'auth');
      await wireByKeyboard(page, 'auth.denied', 'response-rewrite-1');
      for (const name of ['m.success → response-rewrite-1.in', 'auth.denied → response-rewrite-1.in'])
        await page.getByRole('group', { name, exact: true }).waitFor();

      await page.keyboard.press('Control+s');
      const banner = page.getByRole('status').filter({ hasText: /Saved|Not saved/ });
      await banner.waitFor();
      const problems = (await page.locator('.problems li').allInnerTexts()).join(' | ');
      assert.match(await banner.innerText(), /^Saved 'hello-policy'/, problems);
      const stored = (await storedPolicy(h, 'hello-policy')) as { edges: { from: string; to: string }[] };
      assert.deepEqual(
        stored.edges
          .filter((e) => e.to === 'response-rewrite-1.in')
          .map((e) => e.from)
          .sort(),
        ['auth.denied', 'm.success'],
      );
      const allowed = await dataPlane(h, '/hello', { 'x-api-key': 'alice-key' });
      assert.equal(allowed.status, 200);
      assert.equal(allowed.headers['x-shared'], 'yes', 'the success branch passes the shared node');
      const denied = await dataPlane(h, '/hello', {});
      assert.equal(denied.status, 401);
      assert.equal(denied.headers['x-shared'], 'yes', 'the denied branch passes it too');
    }));
});
