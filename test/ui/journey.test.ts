import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkipReason } from '../support/chromium.js';
import {
  addFromPalette,
  buildUiAndLaunch,
  connect,
  dataPlane,
  edgesOf,
  expectCount,
  nodesOf,
  withEditor,
} from './harness.js';

const DEBUG = 'debug: { enabled: true, trace_all: true }';

const form = (page: Page) => page.getByRole('form', { name: 'Node config form' });

describe('editor journey', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  let origin: Server;
  let originPort = 0;
  before(async () => {
    origin = createServer((_req, res) => res.end('from the origin'));
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    originPort = (origin.address() as AddressInfo).port;
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
    origin?.closeAllConnections();
    await new Promise((resolve) => origin?.close(resolve));
  });

  test('journey: a consumer, a key-auth → limit-count → upstream policy and a route built in the UI serve traffic, and the trace shows on the graph', () =>
    withEditor(
      browser,
      '#/consumers',
      { gatewayYaml: 'routes: []\npolicies: []\n', system: DEBUG },
      async (page, h) => {
        // A consumer with an API key.
        await page.getByRole('button', { name: 'New consumer' }).click();
        const consumer = page.getByRole('form', { name: 'Consumer' });
        await consumer.getByLabel('Name', { exact: true }).fill('alice');
        await consumer.getByLabel('API key', { exact: true }).fill('alices-key');
        await consumer.getByRole('button', { name: 'Create consumer' }).click();
        await page.locator('tr[data-consumer="alice"]').waitFor();

        // A new policy starts as listener → client.
        await page.getByRole('link', { name: 'Policies' }).click();
        await page.getByLabel('New policy name').fill('shop');
        await page.getByRole('button', { name: 'New policy' }).click();
        await expectCount('nodes', () => nodesOf(page).count(), 2);

        await addFromPalette(page, 'key-auth');
        await form(page).getByRole('switch', { name: 'use_consumers' }).click();
        await addFromPalette(page, 'limit-count');
        await form(page).getByRole('spinbutton', { name: 'count' }).fill('2');
        await form(page).getByRole('spinbutton', { name: 'time_window' }).fill('60');
        await addFromPalette(page, 'upstream');
        await form(page).getByRole('button', { name: 'Add targets item' }).click();
        // The upstream form also has discovery's host and port: fill the target's.
        const targets = form(page).locator('fieldset[data-field="config.targets"]');
        await targets.getByRole('textbox', { name: 'host', exact: true }).fill('127.0.0.1');
        await targets.getByRole('spinbutton', { name: 'port' }).fill(String(originPort));

        // A mistake, undone.
        await addFromPalette(page, 'redirect');
        await expectCount('nodes', () => nodesOf(page).count(), 6);
        await page.locator('.react-flow__pane').click({ position: { x: 5, y: 5 } });
        await page.keyboard.press('Control+z');
        await expectCount('nodes', () => nodesOf(page).count(), 5);

        // Wire it: the starter edge goes, every outcome is wired.
        await page.getByRole('button', { name: 'Auto layout' }).click();
        await page.locator('.react-flow__edge[data-id="listener.success->client"]').click();
        await page.keyboard.press('Delete');
        await expectCount('edges', () => edgesOf(page).count(), 0);
        await connect(page, 'listener', 'success', 'key-auth-1');
        await connect(page, 'key-auth-1', 'success', 'limit-count-1');
        await connect(page, 'key-auth-1', 'denied', 'client');
        await connect(page, 'limit-count-1', 'success', 'upstream-1');
        await connect(page, 'limit-count-1', 'limited', 'client');
        await connect(page, 'upstream-1', 'success', 'client');
        await expectCount('edges', () => edgesOf(page).count(), 6);
        await page.getByRole('button', { name: 'Save', exact: true }).click();
        await page.getByText("Saved 'shop'").waitFor();

        // A route to it.
        await page.getByRole('link', { name: 'Routes' }).click();
        await page.getByRole('button', { name: 'New route' }).click();
        const route = page.getByRole('form', { name: 'Route' });
        await route.getByLabel('Name').fill('shop');
        await route.getByLabel('Path').fill('/shop');
        await route.getByLabel('Policy').selectOption('shop');
        await route.getByRole('button', { name: 'Create route' }).click();
        await page.locator('tr[data-route="shop"]').waitFor();

        // Real traffic: no key is denied; two keyed requests pass; the third is limited (limit-count's default rejected_code, 503).
        assert.equal((await dataPlane(h, '/shop')).status, 401);
        const key = { 'x-api-key': 'alices-key' };
        const first = await dataPlane(h, '/shop', key);
        assert.equal(first.status, 200);
        assert.equal(first.body, 'from the origin');
        assert.equal((await dataPlane(h, '/shop', key)).status, 200);
        assert.equal((await dataPlane(h, '/shop', key)).status, 503);

        // The newest trace (the limited one) drawn on the graph.
        await page.getByRole('link', { name: 'Traces' }).click();
        await page.locator('table[aria-label="Traces"] tbody tr').first().getByRole('link').click();
        await page.locator('[data-node-id="limit-count-1"].traced').waitFor();
        await page.locator('[data-node-id="key-auth-1"].traced').waitFor();
        assert.equal(await page.locator('[data-node-id="upstream-1"].traced').count(), 0);
        assert.match(await page.getByRole('region', { name: 'Trace' }).innerText(), /→ 503/);
      },
    ));
});
