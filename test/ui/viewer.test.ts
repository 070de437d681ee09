import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { mockPolicyYaml, type AdminHarness } from '../admin/harness.js';
import { chromiumSkipReason } from '../support/chromium.js';
import { request } from '../support/http.js';
import { adminJson, buildUiAndLaunch, expectCount, nodesOf, selectNode, withEditor } from './harness.js';

const GATEWAY_YAML = `routes:
  - name: hello
    match: { path: /hello }
    policy: hello-policy
consumers:
  - name: bob
    credentials: { key-auth: { key: bobs-secret-key } }
policies:${mockPolicyYaml('hello-policy', 'hello')}`;

const VIEWER = { username: 'auditor', password: 'read only please' };
const ADMIN_USERS = `users: [{ username: ${VIEWER.username}, password: "${VIEWER.password}", role: viewer }]`;

describe('editor for a viewer', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  before(async () => {
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
  });

  const asViewer = (hash: string, run: (page: Page, h: AdminHarness) => Promise<void>) =>
    withEditor(browser, hash, { gatewayYaml: GATEWAY_YAML, admin: ADMIN_USERS, login: VIEWER }, run);

  test('viewer: GET /api/whoami names the account and its role', () =>
    asViewer('', async (_page, h) => {
      const basic = `Basic ${Buffer.from(`${VIEWER.username}:${VIEWER.password}`).toString('base64')}`;
      const mine = await request(`${h.url}/api/whoami`, { headers: { authorization: basic } });
      assert.deepEqual(JSON.parse(mine.body), { username: 'auditor', role: 'viewer' });
      assert.deepEqual(await adminJson(h, '/api/whoami'), { username: 'admin', role: 'admin' });
    }));

  test('viewer: lists show a read-only badge and no create, edit, move or delete controls', () =>
    asViewer('#/routes', async (page) => {
      await page.locator('tr[data-route="hello"]').waitFor();
      await page.locator('header .badge.readonly', { hasText: 'read-only' }).waitFor();
      for (const name of ['New route', 'Delete', 'Edit', 'Move hello up', 'Move hello down']) {
        assert.equal(await page.getByRole('button', { name, exact: true }).count(), 0, name);
      }
      await page.getByRole('button', { name: 'View' }).click();
      const form = page.getByRole('form', { name: 'Route' });
      assert.equal(await form.getByLabel('Path').isDisabled(), true);
      assert.equal(await form.getByRole('button', { name: 'Save route' }).count(), 0);

      await page.getByRole('link', { name: 'Consumers' }).click();
      await page.locator('tr[data-consumer="bob"]').waitFor();
      assert.equal(await page.getByRole('button', { name: 'New consumer' }).count(), 0);
      await page.getByRole('button', { name: 'View' }).click();
      const key = page.getByRole('form', { name: 'Consumer' }).getByLabel('API key', { exact: true });
      assert.equal(await key.isDisabled(), true);
      assert.notEqual(await key.inputValue(), 'bobs-secret-key', 'the API masks the key for a viewer');

      await page.getByRole('link', { name: 'Policies' }).click();
      await page.locator('tr[data-policy="hello-policy"]').waitFor();
      assert.equal(await page.getByRole('button', { name: 'New policy' }).count(), 0);
      assert.equal(await page.getByRole('button', { name: 'Delete' }).count(), 0);
    }));

  test('viewer: the policy editor shows the graph and node forms disabled, with no palette, save or delete', () =>
    asViewer('#/policies/hello-policy', async (page) => {
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await page.locator('.toolbar .badge.readonly').waitFor();
      for (const name of ['Save', 'Validate', 'Undo', 'Redo', 'Auto layout']) {
        assert.equal(await page.getByRole('button', { name, exact: true }).count(), 0, name);
      }
      assert.equal(await page.getByRole('complementary', { name: 'Node palette' }).count(), 0);
      await selectNode(page, 'm');
      const form = page.getByRole('form', { name: 'Node config form' });
      assert.equal(await form.getByRole('textbox', { name: 'response_example' }).isDisabled(), true);
      assert.equal(await form.getByRole('spinbutton', { name: 'response_status' }).isDisabled(), true);
      assert.equal(await page.getByRole('button', { name: 'Delete node' }).count(), 0);
      assert.equal(await page.getByLabel('Node id').isDisabled(), true);
      // The Delete key does nothing either.
      await page.keyboard.press('Delete');
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      assert.equal(await page.getByText('Unsaved changes').count(), 0);
    }));

  test('viewer: an admin sees no read-only badge and every editing control', () =>
    withEditor(browser, '#/routes', { gatewayYaml: GATEWAY_YAML, admin: ADMIN_USERS }, async (page) => {
      await page.getByRole('button', { name: 'New route' }).waitFor();
      assert.equal(await page.locator('.badge.readonly').count(), 0);
    }));
});
