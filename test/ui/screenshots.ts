// Regenerates the screenshots in docs/editor/ from the real editor on a throwaway gateway:
//   node scripts/screenshots.mjs (or npx tsx test/ui/screenshots.ts)
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { mockPolicyYaml } from '../admin/harness.js';
import { request } from '../support/http.js';
import { admin, buildUiAndLaunch, withEditor } from './harness.js';
import { USERS_POLICY_ITEM } from './users-policy-fixture.js';

const OUT = join(import.meta.dirname, '..', '..', 'docs', 'editor');

const GATEWAY_YAML = `routes:
  - name: hello
    match: { path: /hello }
    policy: hello-policy
  - name: orders
    match: { path: /orders/*, methods: [GET, POST] }
    policy: orders-policy
    description: the order service
plugin_configs:
  - name: teapot
    type: mocking
    description: the shared 418 answer
    config: { response_status: 418, response_example: "I'm a teapot for {{request.headers.x-tenant-id}}" }
supernodes:
  - name: guard
    description: a tenant check, reusable in any policy
    nodes:
      - { id: input, type: input }
      - { id: tenant, type: mocking, config: { response_example: 'tenant {{request.headers.x-tenant-id}}' } }
      - { id: output, type: output }
    edges:
      - { from: input.out, to: tenant.in }
      - { from: tenant.success, to: output.in }
consumers:
  - name: alice
    group: gold
    credentials: { key-auth: { key: alices-key } }
policies:${mockPolicyYaml('hello-policy', 'hello')}${mockPolicyYaml('orders-policy', 'orders')}${USERS_POLICY_ITEM}`;

mkdirSync(OUT, { recursive: true });
const browser = await buildUiAndLaunch();
try {
  const opts = {
    gatewayYaml: GATEWAY_YAML,
    system: 'debug: { enabled: true, trace_all: true, sandbox: true }',
  };
  await withEditor(browser, '#/routes', opts, async (page, h) => {
    await request(`${h.data}/hello`);
    const shot = async (hash: string, file: string, ready: () => Promise<unknown>) => {
      await page.goto(`${h.url}/${hash}`);
      await ready();
      await page.screenshot({ path: join(OUT, file) });
    };
    await shot('#/routes', 'routes.png', () => page.locator('tr[data-route="orders"]').waitFor());
    await shot('#/policies/hello-policy', 'policy-editor.png', async () => {
      await page.locator('[data-node-id="m"] .pnode-head').click();
      await page.getByRole('button', { name: /auth \(\d+\)/ }).click();
    });
    await shot('#/policies/users-policy', 'policy-12-nodes.png', () =>
      page.locator('.canvas[data-view="ready"]').waitFor(),
    );
    const orders = await admin(h, 'GET', '/api/policies/orders-policy');
    const changed = JSON.parse(orders.body) as {
      nodes: { id: string; config?: unknown }[];
      edges: unknown[];
    };
    changed.nodes = changed.nodes.map((n) =>
      n.id === 'm' ? { ...n, config: { response_example: 'orders v2' } } : n,
    );
    changed.nodes.splice(1, 0, { id: 'auth', type: 'key-auth', config: { use_consumers: true } } as never);
    changed.edges = [
      { from: 'in.out', to: 'auth.in' },
      { from: 'auth.success', to: 'm.in' },
      { from: 'auth.denied', to: 'out.in' },
      { from: 'm.success', to: 'out.in' },
    ];
    await admin(h, 'PUT', '/api/policies/orders-policy', changed);
    await shot('#/policies/orders-policy', 'history-diff.png', async () => {
      await page.getByRole('button', { name: 'History' }).click();
      await page.locator('.diff-canvas .pnode[data-change="added"]').waitFor();
    });
    await shot('#/consumers', 'consumers.png', () => page.locator('tr[data-consumer="alice"]').waitFor());
    await shot('#/supernodes/guard', 'supernode.png', () =>
      page.locator('[data-node-id="tenant"] .pnode-head').click(),
    );
    await shot('#/plugin-configs', 'shared-config.png', async () => {
      await page.locator('tr[data-name="teapot"]').getByRole('button', { name: 'Edit' }).click();
      await page
        .getByRole('status', { name: 'Preview of response_example' })
        .filter({ hasText: 'acme' })
        .waitFor();
    });
    await shot('#/traces', 'traces.png', () =>
      page.locator('table[aria-label="Traces"] tbody tr').first().waitFor(),
    );
    const traces = await request(`${h.url}/api/debug/traces`, {
      headers: { authorization: `Basic ${Buffer.from('admin:correct horse').toString('base64')}` },
    });
    const id = (JSON.parse(traces.body) as { traces: { id: string }[] }).traces[0]?.id ?? '';
    await shot(`#/policies/hello-policy?trace=${id}`, 'trace-on-graph.png', () =>
      page.locator('.pnode.traced').first().waitFor(),
    );
  });
} finally {
  await browser.close();
}
console.log(`screenshots written to ${OUT}`);
