import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { mockPolicyYaml, type AdminHarness } from '../admin/harness.js';
import { chromiumSkipReason } from '../support/chromium.js';
import { skipWithoutRedis, startRedis, type RedisServer } from '../support/redis.js';
import { admin, adminJson, buildUiAndLaunch, dataPlane, withEditor } from './harness.js';

const keyAuthPolicy = `
  - name: members-policy
    nodes:
      - { id: in, type: listener }
      - { id: auth, type: key-auth, config: { use_consumers: true } }
      - { id: m, type: mocking, config: { response_example: 'hi {{message.consumer.name}}', content_type: text/plain } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: m.in }
      - { from: auth.denied, to: out.in }
      - { from: m.success, to: out.in }
`;

const gatewayYaml = (redisUrl: string) => `routes:
  - name: wide
    match: { path: /api/* }
    policy: wide-policy
  - name: narrow
    match: { path: /api/one }
    policy: narrow-policy
  - name: members
    match: { path: /members }
    policy: members-policy
stores:
  - name: main
    type: redis
    url: ${redisUrl}
consumers:
  - name: bob
    credentials: { key-auth: { key: bobs-key } }
policies:${mockPolicyYaml('wide-policy', 'wide')}${mockPolicyYaml('narrow-policy', 'narrow')}${keyAuthPolicy}`;

describe('editor resources', { skip: chromiumSkipReason() || skipWithoutRedis() }, () => {
  let browser: Browser;
  let redis: RedisServer;
  before(async () => {
    redis = await startRedis();
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
    await redis?.stop();
  });

  const open = (hash: string, run: (page: Page, h: AdminHarness) => Promise<void>) =>
    withEditor(browser, hash, { gatewayYaml: gatewayYaml(redis.url) }, run);

  test('consumers: a consumer added through the form authenticates real traffic; keys are never shown in the list', () =>
    open('#/consumers', async (page, h) => {
      assert.equal((await dataPlane(h, '/members', { 'x-api-key': 'alices-key' })).status, 401);
      const bob = page.locator('tr[data-consumer="bob"]');
      assert.match(await bob.innerText(), /key-auth ••••/);
      assert.ok(!(await page.locator('main').innerText()).includes('bobs-key'), 'no key in the list');

      await page.getByRole('button', { name: 'New consumer' }).click();
      const form = page.getByRole('form', { name: 'Consumer' });
      await form.getByLabel('Name', { exact: true }).fill('alice');
      await form.getByLabel('Group').fill('gold');
      const key = form.getByLabel('API key', { exact: true });
      assert.equal(await key.getAttribute('type'), 'password');
      await key.fill('alices-key');
      await form.getByRole('button', { name: 'Create consumer' }).click();
      await page.locator('tr[data-consumer="alice"]').waitFor();
      const res = await dataPlane(h, '/members', { 'x-api-key': 'alices-key' });
      assert.equal(res.status, 200);
      assert.equal(res.body, 'hi alice');
      const stored = await adminJson(h, '/api/consumers/alice');
      assert.deepEqual(stored, {
        name: 'alice',
        group: 'gold',
        credentials: { 'key-auth': { key: 'alices-key' } },
      });

      page.once('dialog', (d) => void d.accept());
      await page.locator('tr[data-consumer="alice"]').getByRole('button', { name: 'Delete' }).click();
      await page.locator('tr[data-consumer="alice"]').waitFor({ state: 'detached' });
      assert.equal((await dataPlane(h, '/members', { 'x-api-key': 'alices-key' })).status, 401);
    }));

  test('routes: moving a route up changes which route matches first, on the data plane too', () =>
    open('#/routes', async (page, h) => {
      assert.equal((await dataPlane(h, '/api/one')).body, 'wide');
      await page.getByRole('button', { name: 'Move narrow up' }).click();
      await page.getByText("Route 'narrow' moved to position 1.").waitFor();
      const names: (string | null)[] = [];
      for (const row of await page.locator('table[aria-label="Routes"] tbody tr').all()) {
        names.push(await row.getAttribute('data-route'));
      }
      assert.deepEqual(names, ['narrow', 'wide', 'members']);
      const stored = await adminJson<{ name: string }[]>(h, '/api/routes');
      assert.deepEqual(
        stored.map((r) => r.name),
        ['narrow', 'wide', 'members'],
      );
      assert.equal((await dataPlane(h, '/api/one')).body, 'narrow');
      assert.equal((await dataPlane(h, '/api/two')).body, 'wide');
      // A reorder that would drop a route is refused, naming the key.
      const refused = await admin(h, 'PUT', '/api/route-order', { names: ['wide', 'narrow'] });
      assert.equal(refused.status, 400);
      assert.match(refused.body, /"path":"names".*missing: members/);
    }));

  test('routes: dragging a route row onto another reorders the table', () =>
    open('#/routes', async (page, h) => {
      await page.locator('tr[data-route="members"]').dragTo(page.locator('tr[data-route="wide"]'));
      await page.getByText("Route 'members' moved to position 1.").waitFor();
      const stored = await adminJson<{ name: string }[]>(h, '/api/routes');
      assert.deepEqual(
        stored.map((r) => r.name),
        ['members', 'wide', 'narrow'],
      );
    }));

  test('stores: the list pings a real Redis and shows its answer', () =>
    open('#/stores', async (page) => {
      const row = page.locator('tr[data-name="main"]');
      assert.match(await row.innerText(), /redis redis:\/\/127\.0\.0\.1:\d+/);
      await row.getByRole('button', { name: 'Ping' }).click();
      const answer = row.getByRole('status', { name: 'Ping main' });
      await answer.filter({ hasText: /ok · [\d.]+ ms/ }).waitFor();
    }));

  test('shared configs and supernodes: a shared config is created in its schema form, a supernode in the graph editor, both stored and listed', () =>
    open('#/plugin-configs', async (page, h) => {
      await page.getByLabel('New shared config name').fill('teapot');
      await page.getByRole('button', { name: 'New shared config' }).click();
      const editor = page.getByRole('region', { name: 'Edit shared config' });
      assert.equal(await editor.getByRole('combobox', { name: 'Node type' }).inputValue(), 'mocking');
      await editor
        .getByRole('form', { name: 'Node config form' })
        .getByRole('spinbutton', { name: 'response_status' })
        .fill('418');
      await editor.getByRole('button', { name: 'Save', exact: true }).click();
      await page.locator('tr[data-name="teapot"]').waitFor();
      assert.deepEqual(await adminJson(h, '/api/plugin-configs/teapot'), {
        name: 'teapot',
        type: 'mocking',
        config: { response_status: 418 },
      });

      await page.getByRole('link', { name: 'Supernodes' }).click();
      await page.getByLabel('New supernode name').fill('pass');
      await page.getByRole('button', { name: 'New supernode' }).click();
      await page.waitForFunction("window.location.hash === '#/supernodes/pass'");
      await page.locator('[data-node-id="output"]').waitFor();
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText("Saved 'pass'").waitFor();
      await page.getByRole('link', { name: '← Supernodes' }).click();
      await page.locator('tr[data-name="pass"]').waitFor();
      assert.match(await page.locator('tr[data-name="pass"]').innerText(), /2 nodes/);
      const stored = await adminJson<{ nodes: unknown[] }>(h, '/api/supernodes/pass');
      assert.equal(stored.nodes.length, 2);
    }));

  test('sessions and certificates: a store lists its sessions; with ACME off the page says so', () =>
    open('#/sessions', async (page) => {
      await page.getByRole('button', { name: 'List sessions' }).click();
      await page.getByText('No sessions.').waitFor();
      await page.getByRole('link', { name: 'Certificates' }).click();
      await page.getByText('ACME is off').waitFor();
    }));
});
