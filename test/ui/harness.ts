import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Browser, Page } from 'playwright-core';
import {
  basic,
  PASSWORD,
  startAdmin,
  USER,
  type AdminHarness,
  type HarnessOptions,
} from '../admin/harness.js';
import { launchChromium } from '../support/chromium.js';
import { request, type SimpleResponse } from '../support/http.js';

// The real editor (ui/dist, built by the same script as `npm start`) in headless Chromium.
const ROOT = join(import.meta.dirname, '..', '..');
export const UI_DIR = join(ROOT, 'ui', 'dist');

/** Builds ui/dist when its sources are newer (a no-op when another test file just built it), then starts Chromium. */
export function buildUiAndLaunch(): Promise<Browser> {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-ui.mjs')], { stdio: 'inherit' });
  return launchChromium();
}

export interface EditorOptions extends HarnessOptions {
  /** Log in as this account instead of the main admin. */
  login?: { username: string; password: string };
  width?: number;
}

/**
 * A fresh gateway + admin serving the built editor, and a logged-in page at
 * `hash`. Fails the test on any uncaught page error or console error other
 * than a failed resource load (an API answer the test itself provokes).
 */
export async function withEditor(
  browser: Browser,
  hash: string,
  opts: EditorOptions,
  run: (page: Page, h: AdminHarness) => Promise<void>,
): Promise<void> {
  const h = await startAdmin({ options: { uiDir: UI_DIR }, ...opts });
  const login = opts.login ?? { username: USER, password: PASSWORD };
  const context = await browser.newContext({
    httpCredentials: login,
    viewport: { width: opts.width ?? 1400, height: 900 },
  });
  const errors: string[] = [];
  try {
    const page = await context.newPage();
    page.on('pageerror', (err) => errors.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource'))
        errors.push(msg.text());
    });
    await page.goto(`${h.url}/${hash}`);
    await run(page, h);
    assert.deepEqual(errors, [], 'no console errors');
  } finally {
    await context.close();
    await h.stop();
  }
}

// Without keep-alive (node:http, agent: false), so stopping the gateway never waits on an idle socket.
export function admin(
  h: AdminHarness,
  method: string,
  path: string,
  body?: unknown,
): Promise<SimpleResponse> {
  return request(h.url + path, {
    method,
    headers: { authorization: basic(), 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

export async function adminJson<T = Record<string, unknown>>(h: AdminHarness, path: string): Promise<T> {
  const res = await admin(h, 'GET', path);
  assert.equal(res.status, 200, `GET ${path}: ${res.body}`);
  return JSON.parse(res.body) as T;
}

export const storedPolicy = (h: AdminHarness, name: string) => adminJson(h, `/api/policies/${name}`);

export function dataPlane(
  h: AdminHarness,
  path: string,
  headers: Record<string, string> = {},
): Promise<SimpleResponse> {
  return request(h.data + path, { headers });
}

export const nodesOf = (page: Page) => page.locator('.react-flow__node');
export const edgesOf = (page: Page) => page.locator('.react-flow__edge');
export const selectNode = (page: Page, id: string) =>
  page.locator(`[data-node-id="${id}"] .pnode-head`).click();

/**
 * Waits until `count()` (a locator's count: one round trip to Chromium, ≈ 10 ms of CPU across the
 * test, the browser and the page) returns `expected`. The interval starts at 20 ms and doubles up
 * to 250 ms, so a page that takes seconds to render under load is asked a few dozen times rather
 * than hundreds.
 */
export async function expectCount(
  what: string,
  count: () => Promise<number>,
  expected: number,
): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (let interval = 20; ; interval = Math.min(250, interval * 2)) {
    const last = await count();
    if (last === expected) return;
    if (Date.now() > deadline)
      throw new Error(`timed out after 20000 ms waiting for ${expected} ${what} (last saw ${last})`);
    await sleep(interval);
  }
}

export async function centre(page: Page, selector: string): Promise<{ x: number; y: number }> {
  const box = await page.locator(selector).boundingBox();
  assert.ok(box, `${selector} is not on screen`);
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

/** Drags from an output port handle to a node's input handle, as a user wires two nodes. */
export async function connect(page: Page, from: string, port: string, to: string): Promise<void> {
  const a = await centre(page, `.react-flow__handle[data-nodeid="${from}"][data-handleid="${port}"]`);
  const b = await centre(page, `.react-flow__handle[data-nodeid="${to}"][data-handleid="in"]`);
  await page.mouse.move(a.x, a.y);
  await page.mouse.down();
  await page.mouse.move(b.x, b.y, { steps: 8 });
  await page.mouse.up();
}

/** Adds a node from the palette by searching for its type and clicking it. */
export async function addFromPalette(page: Page, type: string): Promise<void> {
  const palette = page.getByRole('complementary', { name: 'Node palette' });
  await palette.getByRole('searchbox', { name: 'Search nodes' }).fill(type);
  await palette.getByRole('button', { name: `Add ${type}`, exact: true }).click();
  await palette.getByRole('searchbox', { name: 'Search nodes' }).fill('');
}

/** Two routes on two mocking policies: the common starting point of the UI tests. */
export const TWO_ROUTES = (mockPolicyYaml: (n: string, b: string) => string) => `routes:
  - name: hello
    match: { path: /hello }
    policy: hello-policy
  - name: orders
    match: { path: /orders/*, methods: [GET, POST] }
    policy: orders-policy
    description: the order service
policies:${mockPolicyYaml('hello-policy', 'hello')}${mockPolicyYaml('orders-policy', 'orders')}`;
