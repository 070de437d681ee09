import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { mockPolicyYaml, type AdminHarness } from '../admin/harness.js';
import { chromiumSkipReason } from '../support/chromium.js';
import {
  addFromPalette,
  buildUiAndLaunch,
  dataPlane,
  expectCount,
  nodesOf,
  selectNode,
  storedPolicy,
  withEditor,
} from './harness.js';
import { waitFor } from '../support/wait.js';

const GATEWAY_YAML = `routes:
  - name: hello
    match: { path: /hello }
    policy: hello-policy
policies:${mockPolicyYaml('hello-policy', 'hello')}`;

const form = (page: Page) => page.getByRole('form', { name: 'Node config form' });

async function save(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await page.getByText("Saved 'hello-policy'").waitFor();
}

type Node = { id: string; config?: Record<string, unknown> };
const nodeConfig = async (h: AdminHarness, id: string) =>
  ((await storedPolicy(h, 'hello-policy')).nodes as Node[]).find((n) => n.id === id)?.config;

describe('editor config forms', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  before(async () => {
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
  });

  const open = (run: (page: Page, h: AdminHarness) => Promise<void>) =>
    withEditor(browser, '#/policies/hello-policy', { gatewayYaml: GATEWAY_YAML }, async (page, h) => {
      await expectCount('nodes', () => nodesOf(page).count(), 3);
      await run(page, h);
    });

  test('forms: number fields are saved as JSON numbers and switches as booleans', () =>
    open(async (page, h) => {
      await selectNode(page, 'm');
      await form(page).getByRole('spinbutton', { name: 'response_status' }).fill('201');
      await form(page).getByRole('switch', { name: 'with_mock_header' }).click();
      await save(page);
      const config = await nodeConfig(h, 'm');
      assert.equal(config?.response_status, 201);
      assert.equal(config?.with_mock_header, false);
      const res = await dataPlane(h, '/hello');
      assert.equal(res.status, 201);
      assert.equal(res.headers['x-mock-by'], undefined);
    }));

  test('forms: an inspector edit saved in the UI changes live traffic', () =>
    open(async (page, h) => {
      assert.equal((await dataPlane(h, '/hello')).body, 'hello');
      await selectNode(page, 'm');
      await form(page).getByRole('textbox', { name: 'response_example' }).fill('edited in the inspector');
      await page.getByText('Unsaved changes').waitFor();
      await save(page);
      assert.equal((await dataPlane(h, '/hello')).body, 'edited in the inspector');
    }));

  test('forms: schema problems show under their field; enums, arrays and nested objects get their own controls', () =>
    open(async (page) => {
      await addFromPalette(page, 'limit-count');
      const count = form(page).getByRole('spinbutton', { name: 'count' });
      assert.match(await form(page).getByRole('alert', { name: 'count problem' }).innerText(), /is required/);
      await count.fill('0');
      assert.match(
        await form(page).getByRole('alert', { name: 'count problem' }).innerText(),
        /must be >= 1/,
      );
      await count.fill('5');
      await form(page).getByRole('alert', { name: 'count problem' }).waitFor({ state: 'detached' });
      const keyType = form(page).getByRole('combobox', { name: 'key_type' });
      const options = await keyType.locator('option').allInnerTexts();
      assert.deepEqual(options, ['(default: "var")', 'var', 'var_combination', 'constant']);

      await addFromPalette(page, 'upstream');
      await form(page).getByRole('button', { name: 'Add targets item' }).click();
      const targets = form(page).locator('fieldset[data-field="config.targets"]');
      await targets.getByRole('textbox', { name: 'host' }).fill('127.0.0.1');
      await targets.getByRole('spinbutton', { name: 'port' }).fill('70000');
      assert.match(
        await targets.getByRole('alert', { name: 'port problem' }).innerText(),
        /must be <= 65535/,
      );
      await targets.getByRole('spinbutton', { name: 'port' }).fill('8080');
      await targets.getByRole('alert', { name: 'port problem' }).waitFor({ state: 'detached' });

      await addFromPalette(page, 'key-auth');
      await form(page).getByRole('button', { name: 'Add keys item' }).click();
      await form(page).getByRole('button', { name: 'Add keys item' }).click();
      await form(page).getByRole('textbox', { name: 'keys 2' }).fill('second');
      await form(page).getByRole('button', { name: 'Remove keys 1' }).click();
      await page.getByRole('tab', { name: 'YAML / JSON' }).click();
      await page.getByRole('radio', { name: 'JSON' }).check();
      assert.deepEqual(JSON.parse(await page.getByLabel('Node config', { exact: true }).inputValue()), {
        keys: ['second'],
      });
    }));

  test('forms: the raw YAML/JSON view shows the same config and applies edits back to the form', () =>
    open(async (page) => {
      await selectNode(page, 'm');
      await page.getByRole('tab', { name: 'YAML / JSON' }).click();
      const raw = page.getByLabel('Node config', { exact: true });
      assert.match(await raw.inputValue(), /^response_example: hello$/m);
      await page.getByRole('radio', { name: 'JSON' }).check();
      assert.deepEqual(JSON.parse(await raw.inputValue()), {
        response_example: 'hello',
        content_type: 'text/plain',
      });
      await raw.fill('{"response_example": "from raw", "response_status": 202}');
      await page.getByRole('button', { name: 'Apply config' }).click();
      await page.getByText('Applied to the graph').waitFor();
      await page.getByRole('tab', { name: 'Form' }).click();
      assert.equal(
        await form(page).getByRole('textbox', { name: 'response_example' }).inputValue(),
        'from raw',
      );
      assert.equal(await form(page).getByRole('spinbutton', { name: 'response_status' }).inputValue(), '202');
    }));

  test('forms: a template field previews what the gateway renders for a sample request, on one line of about 80 characters', () =>
    open(async (page) => {
      await selectNode(page, 'm');
      const asked: string[] = [];
      page.on('request', (r) => {
        if (r.url().endsWith('/api/templates/preview')) asked.push(r.postData() ?? '');
      });
      const example = form(page).getByRole('textbox', { name: 'response_example' });
      const preview = form(page).getByRole('status', { name: 'Preview of response_example' });
      const shows = (expected: (text: string) => boolean, what: string) =>
        waitFor(async () => expected(await preview.innerText()), { what, timeoutMs: 5000, intervalMs: 100 });
      await example.fill(
        'path {{request.path}} tenant {{request.headers.X-Tenant-Id}} ip $remote_addr {{request.nope}}',
      );
      await shows(
        (t) => t === 'path /orders/42 tenant acme ip 203.0.113.7 {{request.nope}}',
        'the rendered sample',
      );
      // The renderer's own warning about the unknown reference is listed under the preview.
      const warnings = form(page).getByRole('list', { name: 'Template warnings of response_example' });
      assert.match(await warnings.innerText(), /request\.nope/);
      // An environment variable's value never shows.
      await example.fill('home {{env.HOME}}');
      await shows((t) => t === 'home <env HOME>', 'the masked env reference');
      await example.fill(`${'{{request.method}} '.repeat(40)}`);
      await shows((t) => t.startsWith('GET GET'), 'the long preview');
      const long = await preview.innerText();
      assert.equal(long.length, 80);
      assert.ok(long.endsWith('…'));
      assert.ok(asked.length >= 3, `the gateway was asked (${asked.length} times)`);
      assert.match(asked.at(-1) ?? '', /"template":"\{\{request\.method\}\}/);
    }));

  test('forms: secret fields are masked until shown', () =>
    open(async (page) => {
      await addFromPalette(page, 'jwt-auth');
      const secret = form(page).getByLabel('secret', { exact: true });
      assert.equal(await secret.getAttribute('type'), 'password');
      await secret.fill('s3cret-value');
      await form(page).getByRole('button', { name: 'Show secret' }).click();
      assert.equal(await secret.getAttribute('type'), 'text');
      assert.equal(await secret.inputValue(), 's3cret-value');
    }));
});
