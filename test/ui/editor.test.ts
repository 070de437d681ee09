import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { mockPolicy, mockPolicyYaml, type AdminHarness } from '../admin/harness.js';
import { chromiumSkipReason } from '../support/chromium.js';
import {
  addFromPalette,
  admin,
  buildUiAndLaunch,
  centre,
  connect,
  dataPlane as dataPlaneResponse,
  edgesOf,
  expectCount,
  nodesOf,
  selectNode,
  storedPolicy,
  TWO_ROUTES,
  withEditor as withEditorAt,
} from './harness.js';

const GATEWAY_YAML = TWO_ROUTES(mockPolicyYaml);

const handle = (page: Page, node: string, port: string) =>
  page.locator(`.react-flow__handle[data-nodeid="${node}"][data-handleid="${port}"]`);

async function dataPlane(h: AdminHarness, path: string): Promise<string> {
  return (await dataPlaneResponse(h, path)).body;
}

/** Opens the node's raw YAML/JSON config editor. */
async function rawConfig(page: Page) {
  await page.getByRole('tab', { name: 'YAML / JSON' }).click();
  return page.getByLabel('Node config', { exact: true });
}

describe('web editor', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;

  before(async () => {
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
  });

  const withEditor = (hash: string, run: (page: Page, h: AdminHarness) => Promise<void>) =>
    withEditorAt(browser, hash, { gatewayYaml: GATEWAY_YAML }, run);

  test('editor: the routes list shows every configured route with its match and policy', () =>
    withEditor('', async (page) => {
      const hello = page.locator('tr[data-route="hello"]');
      const orders = page.locator('tr[data-route="orders"]');
      await orders.waitFor();
      assert.equal(await page.locator('table[aria-label="Routes"] tbody tr').count(), 2);
      assert.match(await hello.innerText(), /\/hello\s+hello-policy/);
      assert.match(await orders.innerText(), /GET,POST \/orders\/\*\s+orders-policy\s+the order service/);
      await page.locator('header').getByText(/^v\d/).waitFor(); // /api/status answered through Basic auth
    }));

  test('editor: a route created, edited and deleted in the form is live on the data plane', () =>
    withEditor('#/routes', async (page, h) => {
      await page.getByRole('button', { name: 'New route' }).click();
      const form = page.getByRole('form', { name: 'Route' });
      await form.getByLabel('Name').fill('bye');
      await form.getByLabel('Path').fill('/bye');
      await form.getByLabel('Policy').selectOption('orders-policy');
      await form.getByRole('button', { name: 'Create route' }).click();
      await page.locator('tr[data-route="bye"]').waitFor();
      assert.equal(await dataPlane(h, '/bye'), 'orders');

      await page.locator('tr[data-route="bye"]').getByRole('button', { name: 'Edit' }).click();
      await form.getByLabel('Path').fill('/farewell');
      await form.getByLabel('Methods').fill('get');
      await form.getByRole('button', { name: 'Save route' }).click();
      await page.getByText("Route 'bye' updated.").waitFor();
      const route = JSON.parse((await admin(h, 'GET', '/api/routes/bye')).body) as Record<string, unknown>;
      assert.deepEqual(route.match, { path: '/farewell', methods: ['GET'] });
      assert.equal(await dataPlane(h, '/farewell'), 'orders');

      page.once('dialog', (dialog) => void dialog.accept());
      await page.locator('tr[data-route="bye"]').getByRole('button', { name: 'Delete' }).click();
      await page.locator('tr[data-route="bye"]').waitFor({ state: 'detached' });
      assert.equal((await admin(h, 'GET', '/api/routes/bye')).status, 404);
    }));

  test('editor: opening a policy from the list renders its nodes, edges and port handles', () =>
    withEditor('#/policies', async (page) => {
      const row = page.locator('tr[data-policy="hello-policy"]');
      assert.match(await row.innerText(), /hello-policy\s+3\s+2\s+hello/);
      await row.getByRole('link', { name: 'hello-policy' }).click();
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await expectCount('edges', () => edgesOf(page).count(), 2);
      const m = page.locator('[data-node-id="m"]');
      assert.match(await m.locator('.pnode-head').innerText(), /m\s+mocking/);
      assert.deepEqual(await m.locator('.port-label').allInnerTexts(), ['success', 'error']);
      assert.equal(await handle(page, 'm', 'success').count(), 1);
      assert.equal(await handle(page, 'm', 'in').count(), 1);
      assert.equal(await handle(page, 'in', 'in').count(), 0, 'a listener has no input');
      await page.locator('.react-flow__edge[data-id="in.success->m"]').waitFor();
    }));

  test('editor: a node added, configured, wired and saved changes the live policy', () =>
    withEditor('#/policies/hello-policy', async (page, h) => {
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await addFromPalette(page, 'mocking');
      await page.locator('[data-node-id="mocking-1"]').waitFor();
      // The new node is selected, so its panel is open.
      await (
        await rawConfig(page)
      ).fill(JSON.stringify({ response_example: 'bye', content_type: 'text/plain' }));
      await page.getByRole('button', { name: 'Apply config' }).click();
      await page.getByText('Applied to the graph').waitFor();

      await selectNode(page, 'm');
      await page.getByRole('button', { name: 'Delete node' }).click();
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await expectCount('edges', () => edgesOf(page).count(), 0);

      await connect(page, 'in', 'success', 'mocking-1');
      await connect(page, 'mocking-1', 'success', 'out');
      await expectCount('edges', () => edgesOf(page).count(), 2);
      await page.getByText('Unsaved changes').waitFor();
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText("Saved 'hello-policy'").waitFor();
      await page.getByText('Unsaved changes').waitFor({ state: 'detached' });

      const stored = await storedPolicy(h, 'hello-policy');
      const nodes = stored.nodes as { id: string; type: string; config?: unknown; position?: unknown }[];
      assert.deepEqual(
        nodes.map((n) => n.id),
        ['in', 'out', 'mocking-1'],
      );
      assert.deepEqual(nodes[2]?.config, { response_example: 'bye', content_type: 'text/plain' });
      assert.ok(nodes[2]?.position !== undefined, 'an added node has its position saved');
      assert.equal(
        nodes[0]?.position,
        undefined,
        'a node stored without a position and never moved keeps none',
      );
      assert.deepEqual(stored.edges, [
        { from: 'in.success', to: 'mocking-1.in' },
        { from: 'mocking-1.success', to: 'out.in' },
      ]);
      assert.equal(await dataPlane(h, '/hello'), 'bye');
    }));

  test('editor: an invalid config or graph shows the error on the node and leaves the server unchanged', () =>
    withEditor('#/policies/hello-policy', async (page, h) => {
      const before = await storedPolicy(h, 'hello-policy');
      await expectCount('edges', () => edgesOf(page).count(), 2);

      // The plugin's JSON Schema refuses the config in the browser.
      await selectNode(page, 'm');
      await (await rawConfig(page)).fill('{"response_status": "soon", "colour": 1}');
      await page.getByRole('button', { name: 'Apply config' }).click();
      const problems = page.getByRole('alert', { name: 'Node config problems' });
      await problems.waitFor();
      assert.match(await problems.innerText(), /config\.response_status: must be integer/);
      assert.match(await problems.innerText(), /config\.colour: unknown key/);

      // A graph the compiler refuses: m.success left unwired.
      await page.locator('.react-flow__edge[data-id="m.success->out"]').click();
      await page.keyboard.press('Delete');
      await expectCount('edges', () => edgesOf(page).count(), 1);
      await page.getByRole('button', { name: 'Validate' }).click();
      const listed = page.getByLabel('Problems');
      await listed.waitFor();
      assert.match(await listed.innerText(), /output port 'success' of node 'm'.*must be wired/);
      await page.locator('[data-node-id="m"].has-issues .port-issue', { hasText: 'success' }).waitFor();

      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText('Not saved: the gateway refused the policy').waitFor();
      assert.deepEqual(await storedPolicy(h, 'hello-policy'), before);
      assert.equal(await dataPlane(h, '/hello'), 'hello');
    }));

  test('editor: saving over a concurrent change reports the conflict (412) instead of overwriting', () =>
    withEditor('#/policies/hello-policy', async (page, h) => {
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      const elsewhere = await admin(
        h,
        'PUT',
        '/api/policies/hello-policy',
        mockPolicy('hello-policy', 'theirs'),
      );
      assert.equal(elsewhere.status, 200);

      // Move a node: a change worth saving.
      const from = await centre(page, '[data-node-id="m"] .pnode-head');
      await page.mouse.move(from.x, from.y);
      await page.mouse.down();
      await page.mouse.move(from.x + 40, from.y + 120, { steps: 5 });
      await page.mouse.up();
      await page.getByText('Unsaved changes').waitFor();
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText('was changed by someone else since you opened it').waitFor();
      assert.equal(await dataPlane(h, '/hello'), 'theirs');

      await page.getByRole('button', { name: 'Load their version' }).click();
      await page.getByText('Unsaved changes').waitFor({ state: 'detached' });
      await selectNode(page, 'm');
      assert.equal(await page.getByRole('textbox', { name: 'response_example' }).inputValue(), 'theirs');
    }));
});
