import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { parse } from 'yaml';
import { mockPolicyYaml, type AdminHarness } from '../admin/harness.js';
import { createAuthority } from '../support/certs.js';
import { chromiumSkipReason } from '../support/chromium.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import {
  admin,
  adminJson,
  buildUiAndLaunch,
  dataPlane,
  expectCount,
  nodesOf,
  selectNode,
  storedPolicy,
  withEditor,
} from './harness.js';

// The console's pages and forms of operator-review F14, F29–F32 (docs/editor.md), each driven
// as a user would, with the effect checked where a user would see it: live traffic, the stored
// config, the page itself.

const GATEWAY_YAML = `stores:
  - { name: sessions, type: redis, url: 'redis://127.0.0.1:1' }
  - { name: counters, type: redis, url: 'redis://127.0.0.1:1' }
routes:
  - name: hello
    match: { path: /hello }
    policy: hello-policy
  - name: orders
    match: { path: /orders }
    policy: orders-policy
  - name: branch
    match: { path: /branch }
    policy: branch-policy
policies:${mockPolicyYaml('hello-policy', 'hello')}
  - name: orders-policy
    nodes:
      - { id: listener, type: listener }
      - id: backend
        type: upstream
        config: { targets: [{ host: 127.0.0.1, port: 1 }] }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: backend.in }
      - { from: backend.success, to: client.in }
  - name: store-policy
    nodes:
      - { id: listener, type: listener }
      - { id: put, type: store-set, config: { store: sessions, key: k, value: v } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: put.in }
      - { from: put.success, to: client.in }
  - name: branch-policy
    nodes:
      - { id: listener, type: listener }
      - { id: cond, type: condition, config: { conditions: [["http_x_tenant", "==", "beta"]] } }
      - { id: yes, type: mocking, config: { response_example: 'tenant matched', content_type: text/plain } }
      - { id: no, type: mocking, config: { response_example: 'other tenant', content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: cond.in }
      - { from: cond.true, to: yes.in }
      - { from: cond.false, to: no.in }
      - { from: yes.success, to: client.in }
      - { from: no.success, to: client.in }
`;

const SYSTEM = 'debug: { enabled: true, sandbox: true }';

describe('console pages and forms', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  before(async () => {
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
  });

  const open = (hash: string, run: (page: Page, h: AdminHarness) => Promise<void>, system = SYSTEM) =>
    withEditor(browser, hash, { gatewayYaml: GATEWAY_YAML, system }, run);

  test('F32: an unknown #/… location shows a not-found page with links to the real pages, not Routes', () =>
    open('#/shared-configs', async (page) => {
      await page.getByRole('heading', { name: 'Page not found' }).waitFor();
      assert.match(await page.locator('main').innerText(), /There is no page #\/shared-configs/);
      assert.equal(await page.getByRole('table', { name: 'Routes' }).count(), 0);
      await page.locator('main').getByRole('link', { name: 'Shared configs' }).click();
      await page.getByRole('heading', { name: 'Shared configs' }).waitFor();
    }));

  test('F31: a New policy opens without any 404 request', () =>
    open('#/policies', async (page) => {
      const missing: string[] = [];
      page.on('response', (res) => {
        if (res.status() === 404) missing.push(res.url());
      });
      await page.getByRole('textbox', { name: 'New policy name' }).fill('ui-demo');
      await page.getByRole('button', { name: 'New policy' }).click();
      await expectCount('nodes', () => nodesOf(page).count(), 2);
      await page.locator('.badge', { hasText: /^new$/ }).waitFor();
      assert.deepEqual(missing, []);
    }));

  test('F30: the route form names no policy for the user, offers the existing ones, and keeps Undo/Redo by its title', () =>
    open('#/routes', async (page, h) => {
      await page.getByRole('button', { name: 'New route' }).click();
      const form = page.getByRole('form', { name: 'Route' });
      const policy = form.getByLabel('Policy');
      assert.equal(await policy.inputValue(), '', 'no policy is pre-filled');
      const options = await policy.locator('option').allInnerTexts();
      assert.equal(options[0], '— choose a policy —');
      assert.deepEqual(options.slice(1).sort(), [
        'branch-policy',
        'hello-policy',
        'orders-policy',
        'store-policy',
      ]);
      const title = await form.getByRole('heading', { name: 'New route' }).boundingBox();
      const undo = await form.getByRole('button', { name: 'Undo' }).boundingBox();
      assert.ok(title !== null && undo !== null);
      assert.ok(
        Math.abs(title.y + title.height / 2 - (undo.y + undo.height / 2)) < title.height,
        'Undo sits on the title row',
      );
      await form.getByLabel('Name').fill('hi');
      await form.getByLabel('Path').fill('/hi');
      await form.getByRole('button', { name: 'Create route' }).click();
      // The browser refuses the form while no policy is chosen: nothing is created.
      assert.equal((await admin(h, 'GET', '/api/routes/hi')).status, 404);
      await policy.selectOption('hello-policy');
      await form.getByRole('button', { name: 'Create route' }).click();
      await waitFor(async () => (await dataPlane(h, '/hi')).body === 'hello', {
        what: 'the new route serves',
        timeoutMs: 20_000,
      });
    }));

  test('F30: the consumer form edits every credential type; the saved credentials are what was typed', () =>
    open('#/consumers', async (page, h) => {
      await page.getByRole('button', { name: 'New consumer' }).click();
      const form = page.getByRole('form', { name: 'Consumer' });
      for (const type of ['key-auth', 'basic-auth', 'jwt-auth', 'hmac-auth', 'jwe-decrypt'])
        await form.locator(`fieldset[data-credential="${type}"]`).waitFor();
      await form.getByLabel('Name', { exact: true }).fill('carol');
      await form.getByLabel('JWT key (iss / key claim)').fill('carol-iss');
      await form.getByLabel('JWT secret (HS*)', { exact: true }).fill('jwt-secret-value');
      await form.getByLabel('JWT algorithm').selectOption('HS512');
      await form.getByLabel('HMAC access key').fill('carol-ak');
      await form.getByLabel('HMAC secret key', { exact: true }).fill('hmac-secret-value');
      await form.getByRole('button', { name: 'Create consumer' }).click();
      await page.locator('tr[data-consumer="carol"]').waitFor();
      const config = parse((await admin(h, 'GET', '/api/config')).body) as {
        consumers: { name: string; credentials: Record<string, unknown> }[];
      };
      assert.deepEqual(config.consumers.find((c) => c.name === 'carol')?.credentials, {
        'jwt-auth': { key: 'carol-iss', secret: 'jwt-secret-value', algorithm: 'HS512' },
        'hmac-auth': { access_key: 'carol-ak', secret_key: 'hmac-secret-value' },
      });
    }));

  test('F30: a condition node is edited with the rule builder (raw JSON one toggle away), and traffic follows it', () =>
    open('#/policies/branch-policy', async (page, h) => {
      assert.equal((await dataPlane(h, '/branch', { 'x-tenant': 'acme' })).body, 'other tenant');
      await expectCount('nodes', () => nodesOf(page).count(), 5);
      await selectNode(page, 'cond');
      const builder = page.getByRole('group', { name: 'conditions builder' });
      assert.equal(await builder.getByLabel('conditions 1 subject').inputValue(), 'http_x_tenant');
      assert.equal(await builder.getByLabel('conditions 1 operator').inputValue(), '==');
      await builder.getByLabel('conditions 1 value').fill('acme');
      await builder.getByRole('button', { name: 'Add rule to conditions' }).click();
      await builder.getByLabel('conditions 2 subject').fill('uri');
      await builder.getByLabel('conditions 2 operator').selectOption('present');
      await builder.getByRole('tab', { name: 'Raw JSON' }).click();
      assert.deepEqual(JSON.parse(await builder.getByRole('textbox', { name: 'conditions' }).inputValue()), [
        ['http_x_tenant', '==', 'acme'],
        ['uri', 'present'],
      ]);
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText("Saved 'branch-policy'").waitFor();
      const stored = (await storedPolicy(h, 'branch-policy')).nodes as { id: string; config?: unknown }[];
      assert.deepEqual(stored.find((n) => n.id === 'cond')?.config, {
        conditions: [
          ['http_x_tenant', '==', 'acme'],
          ['uri', 'present'],
        ],
      });
      assert.equal((await dataPlane(h, '/branch', { 'x-tenant': 'acme' })).body, 'tenant matched');
    }));

  test('F30: a store key is a select of the stores: entries, and the choice is saved', () =>
    open('#/policies/store-policy', async (page, h) => {
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await selectNode(page, 'put');
      const store = page
        .getByRole('form', { name: 'Node config form' })
        .getByRole('combobox', { name: 'store' });
      assert.equal(await store.inputValue(), 'sessions');
      assert.deepEqual(await store.locator('option').allInnerTexts(), ['(none)', 'sessions', 'counters']);
      await store.selectOption('counters');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText("Saved 'store-policy'").waitFor();
      const stored = (await storedPolicy(h, 'store-policy')).nodes as { id: string; config?: unknown }[];
      assert.deepEqual(stored.find((n) => n.id === 'put')?.config, {
        store: 'counters',
        key: 'k',
        value: 'v',
      });
    }));

  test('F14: the sandbox says it runs for real, mocks the upstream by default, sends method and body, and saves the run as a test', () =>
    open('#/traces', async (page, h) => {
      const sandbox = page.getByRole('region', { name: 'Sandbox' });
      await sandbox.getByLabel('Policy').selectOption('orders-policy');
      await sandbox.locator('[data-mock="backend"]').waitFor();
      assert.match(await sandbox.getByRole('note').innerText(), /Runs for real/);
      assert.match(await sandbox.getByRole('note').innerText(), /Every upstream of this policy is mocked/);
      await sandbox.getByLabel('Method').selectOption('POST');
      await sandbox.getByLabel('Path').fill('/orders');
      await sandbox.getByLabel('Header 1 name').fill('x-tenant');
      await sandbox.getByLabel('Header 1 value').fill('acme');
      await sandbox.getByLabel('Body', { exact: true }).fill('{"item": 7}');
      await sandbox.getByLabel('Mock status of backend').fill('201');
      await sandbox.getByLabel('Mock body of backend').fill('created');
      await sandbox.getByRole('button', { name: 'Run' }).click();
      const result = sandbox.getByRole('status', { name: 'Sandbox result' });
      await result.waitFor();
      assert.match(await result.innerText(), /POST \/orders → 201/);
      const { traces } = await adminJson<{ traces: { id: string }[] }>(h, '/api/debug/traces?source=sandbox');
      const trace = await adminJson<{
        initial: { request: { method: string; headers: Record<string, string[]>; body: { len: number } } };
      }>(h, `/api/debug/traces/${traces[0]?.id ?? ''}`);
      assert.equal(trace.initial.request.method, 'POST');
      assert.deepEqual(trace.initial.request.headers['x-tenant'], ['acme']);
      assert.equal(trace.initial.request.body.len, '{"item": 7}'.length);

      const save = sandbox.getByRole('region', { name: 'Save as test' });
      const entry = parse(await save.getByLabel('Test entry').innerText()) as { tests: unknown[] };
      assert.deepEqual(entry.tests, [
        {
          name: 'POST /orders answers 201 (mocked)',
          request: { method: 'POST', path: '/orders', headers: { 'x-tenant': 'acme' }, body: '{"item": 7}' },
          upstreams: { backend: { status: 201, body: 'created' } },
          expect: { status: 201, ports: ['backend.success'] },
        },
      ]);
      await save.getByRole('button', { name: 'Add to gateway.yaml tests' }).click();
      await save.getByText("Added 'POST /orders answers 201 (mocked)'").waitFor();
      const config = parse((await admin(h, 'GET', '/api/config')).body) as { tests?: unknown[] };
      assert.deepEqual(config.tests, entry.tests);

      // Unmocked, the note names the upstream that will be called for real.
      await sandbox.getByRole('checkbox', { name: 'Mock backend (upstream)' }).uncheck();
      assert.match(await sandbox.getByRole('note').innerText(), /Not mocked: backend/);
    }));

  test('F29: the Certificates page lists the certificate files of system.yaml with subject, names and expiry', async () => {
    const dir = tempDir();
    const ca = createAuthority(dir.path);
    const shop = ca.issue('shop', { dns: ['shop.example', 'www.shop.example'] });
    try {
      await open(
        '#/certificates',
        async (page) => {
          const row = page.locator('tr[data-cert-file="tls.cert_path"]');
          await row.waitFor();
          assert.equal(await row.locator('[data-field="subject"]').innerText(), 'CN=shop');
          assert.equal(
            await row.locator('[data-field="sans"]').innerText(),
            'DNS:shop.example, DNS:www.shop.example',
          );
          // The test CA issues for two days: a warning colour and the days left.
          assert.match(
            await row.locator('[data-field="expires"]').innerText(),
            /^\d{4}-\d{2}-\d{2} \([12] days? left\)$/,
          );
          assert.match(await row.innerText(), new RegExp(shop.cert.replaceAll('/', '\\/')));
        },
        `${SYSTEM}\ntls: { cert_path: "${shop.cert}", key_path: "${shop.key}" }`,
      );
    } finally {
      dir.remove();
    }
  });
});
