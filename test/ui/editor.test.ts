import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  basic,
  mockPolicy,
  mockPolicyYaml,
  PASSWORD,
  startAdmin,
  USER,
  type AdminHarness,
} from '../admin/harness.js';
import { chromiumSkipReason, launchChromium } from '../support/chromium.js';
import { request, type SimpleResponse } from '../support/http.js';
import { waitFor } from '../support/wait.js';

// The real editor (ui/dist, built by the same script as `npm start`) in headless Chromium.
const ROOT = join(import.meta.dirname, '..', '..');
const UI_DIR = join(ROOT, 'ui', 'dist');

const GATEWAY_YAML = `routes:
  - name: hello
    match: { path: /hello }
    policy: hello-policy
  - name: orders
    match: { path: /orders/*, methods: [GET, POST] }
    policy: orders-policy
    description: the order service
policies:${mockPolicyYaml('hello-policy', 'hello')}${mockPolicyYaml('orders-policy', 'orders')}`;

const nodesOf = (page: Page) => page.locator('.react-flow__node');
const edgesOf = (page: Page) => page.locator('.react-flow__edge');
const handle = (page: Page, node: string, port: string) =>
  page.locator(`.react-flow__handle[data-nodeid="${node}"][data-handleid="${port}"]`);

async function expectCount(what: string, count: () => Promise<number>, expected: number): Promise<void> {
  await waitFor(async () => (await count()) === expected, { what: `${expected} ${what}`, timeoutMs: 5000 });
}

async function centre(page: Page, selector: string): Promise<{ x: number; y: number }> {
  const box = await page.locator(selector).boundingBox();
  assert.ok(box, `${selector} is not on screen`);
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

/** Drags from an output port handle to a node's input handle, as a user wires two nodes. */
async function connect(page: Page, from: string, port: string, to: string): Promise<void> {
  const a = await centre(page, `.react-flow__handle[data-nodeid="${from}"][data-handleid="${port}"]`);
  const b = await centre(page, `.react-flow__handle[data-nodeid="${to}"][data-handleid="in"]`);
  await page.mouse.move(a.x, a.y);
  await page.mouse.down();
  await page.mouse.move(b.x, b.y, { steps: 8 });
  await page.mouse.up();
}

const selectNode = (page: Page, id: string) => page.locator(`[data-node-id="${id}"] .pnode-head`).click();

// Without keep-alive (node:http, agent: false), so stopping the gateway never waits on an idle socket.
function admin(h: AdminHarness, method: string, path: string, body?: unknown): Promise<SimpleResponse> {
  return request(h.url + path, {
    method,
    headers: { authorization: basic(), 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function storedPolicy(h: AdminHarness, name: string): Promise<Record<string, unknown>> {
  return JSON.parse((await admin(h, 'GET', `/api/policies/${name}`)).body) as Record<string, unknown>;
}

async function dataPlane(h: AdminHarness, path: string): Promise<string> {
  return (await request(h.data + path)).body;
}

describe('web editor', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;

  before(async () => {
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-ui.mjs')], { stdio: 'inherit' });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  /** A fresh gateway + admin serving the built editor, and a logged-in page at `hash`. */
  async function withEditor(hash: string, run: (page: Page, h: AdminHarness) => Promise<void>) {
    const h = await startAdmin({ gatewayYaml: GATEWAY_YAML, options: { uiDir: UI_DIR } });
    const context = await browser.newContext({
      httpCredentials: { username: USER, password: PASSWORD },
      viewport: { width: 1400, height: 900 },
    });
    try {
      const page = await context.newPage();
      await page.goto(`${h.url}/${hash}`);
      await run(page, h);
    } finally {
      await context.close();
      await h.stop();
    }
  }

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
      await form.getByLabel('Policy').fill('orders-policy');
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
      await page.getByLabel('Plugin type').selectOption('mocking');
      await page.getByRole('button', { name: 'Add node' }).click();
      await page.locator('[data-node-id="mocking-1"]').waitFor();
      // The new node is selected, so its panel is open.
      await page
        .getByLabel('Node config')
        .fill(JSON.stringify({ response_example: 'bye', content_type: 'text/plain' }));
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
      assert.ok(
        nodes.every((n) => n.position !== undefined),
        'positions are saved',
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
      await page.getByLabel('Node config').fill('{"response_status": "soon", "colour": 1}');
      await page.getByRole('button', { name: 'Apply config' }).click();
      const problems = page.getByRole('alert', { name: 'Config problems' });
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
      assert.match(await page.getByLabel('Node config').inputValue(), /"response_example": "theirs"/);
    }));
});
