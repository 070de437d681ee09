import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { estimateSize, fitZoom, READABLE_ZOOM, wrappedLayout } from '../../ui/src/editor/layout.js';
import { freeSpot } from '../../ui/src/editor/placement.js';
import { chromiumSkipReason } from '../support/chromium.js';
import { waitFor } from '../support/wait.js';
import { USERS_POLICY_YAML } from './users-policy-fixture.js';
import { addFromPalette, buildUiAndLaunch, expectCount, nodesOf, selectNode, withEditor } from './harness.js';

const USERS_NODES: [string, string, number][] = [
  ['listener', 'listener', 1],
  ['cors', 'cors', 2],
  ['auth', 'key-auth', 2],
  ['quota', 'limit-count', 2],
  ['lookup', 'proxy-cache', 2],
  ['canary', 'traffic-split', 2],
  ['users-up', 'upstream', 2],
  ['store', 'proxy-cache', 2],
  ['cors-response', 'cors', 2],
  ['cors-canary', 'cors', 2],
  ['eh', 'error-handler', 1],
  ['client', 'client', 0],
];
const USERS_LINKS = [...USERS_POLICY_YAML.matchAll(/from: ([\w-]+)\.\w+, to: ([\w-]+)\.in/g)].map(
  (m) => [m[1] ?? '', m[2] ?? ''] as const,
);

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

const overlap = (a: Box, b: Box) =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

function assertNoOverlap(boxes: [string, Box][]): void {
  for (const [i, [a, ba]] of boxes.entries())
    for (const [b, bb] of boxes.slice(i + 1)) assert.ok(!overlap(ba, bb), `${a} and ${b} overlap`);
}

/** The canvas zoom, from the React Flow viewport's transform. */
async function zoomOf(page: Page): Promise<number> {
  const style = (await page.locator('.react-flow__viewport').getAttribute('style')) ?? '';
  return Number(/scale\(([0-9.]+)\)/.exec(style)?.[1] ?? 'NaN');
}

/** Every node's id label on screen, once the editor has applied its opening zoom. */
async function labelBoxes(page: Page): Promise<[string, Box][]> {
  const ids = await page.locator('.react-flow__node .pnode-id').allInnerTexts();
  const boxes: [string, Box][] = [];
  for (const id of ids) {
    const box = await page.locator(`[data-node-id="${id}"]`).boundingBox();
    assert.ok(box, `${id} is rendered`);
    boxes.push([id, box]);
  }
  return boxes;
}

describe('editor canvas layout (F11, F32)', () => {
  test('F11 layout: the 12-node users-policy wraps into bands that fit an 800 × 780 canvas at a readable zoom', () => {
    const boxes = USERS_NODES.map(([id, type, ports]) => ({ id, ...estimateSize(id, type, ports) }));
    const positions = wrappedLayout(boxes, USERS_LINKS, { width: 800, height: 780 });
    const placed: [string, Box][] = boxes.map((b) => [
      b.id,
      { ...b, ...(positions.get(b.id) ?? { x: 0, y: 0 }) },
    ]);
    assertNoOverlap(placed);
    const rows = new Set(placed.map(([, b]) => b.y));
    assert.ok(rows.size >= 3, `wrapped onto ${rows.size} rows, not one long row`);
    const width = Math.max(...placed.map(([, b]) => b.x + b.width));
    const height = Math.max(...placed.map(([, b]) => b.y + b.height));
    const zoom = fitZoom(width, height, { width: 800, height: 780 });
    assert.ok(zoom >= 0.75, `fits at zoom ${zoom.toFixed(2)} (the report saw 0.27)`);
    // Left to right along each edge within a band: the listener first, the client after the nodes it follows.
    const at = (id: string) => positions.get(id) ?? { x: NaN, y: NaN };
    assert.deepEqual(at('listener'), { x: 0, y: 0 });
    assert.ok(at('auth').x > at('cors').x && at('cors').y === at('auth').y, 'a chain reads along one line');
  });

  test('F11 layout: a short chain stays on one row', () => {
    const boxes = ['in', 'm', 'out'].map((id) => ({ id, ...estimateSize(id, 'mocking', 2) }));
    const positions = wrappedLayout(
      boxes,
      [
        ['in', 'm'],
        ['m', 'out'],
      ],
      { width: 800, height: 780 },
    );
    assert.deepEqual(new Set([...positions.values()].map((p) => p.y)), new Set([0]));
  });

  test('F32 placement: a new node goes to the free spot nearest its anchor, inside the view', () => {
    const taken = [{ x: 300, y: 0, width: 200, height: 100 }];
    const spot = freeSpot({ x: 300, y: 0 }, { width: 200, height: 100 }, taken, {
      x: 0,
      y: 0,
      width: 800,
      height: 600,
    });
    const box = { ...spot, width: 200, height: 100 };
    assert.ok(!overlap(box, taken[0] as Box), 'does not cover the node already there');
    assert.ok(box.y + box.height <= 600 && box.x >= 0 && box.x + box.width <= 800, 'inside the view');
    assert.ok(Math.hypot(spot.x - 300, spot.y) < 200, `near the anchor (${spot.x}, ${spot.y})`);
  });
});

describe('editor canvas in the browser (F11, F32)', { skip: chromiumSkipReason() }, () => {
  let browser: Browser;
  before(async () => {
    browser = await buildUiAndLaunch();
  });
  after(async () => {
    await browser?.close();
  });

  /** Waits until the opening zoom is applied (React Flow starts at 1 before it measures the nodes). */
  async function opened(page: Page, count: number): Promise<number> {
    await expectCount('nodes', () => nodesOf(page).count(), count);
    await page.locator('.canvas[data-view="ready"]').waitFor();
    return zoomOf(page);
  }

  test('F11 readable at open: at 1400 px every label of the 12-node users-policy is on the canvas, none overlaps, at zoom ≥ 0.75, with a minimap', () =>
    withEditor(browser, '#/policies/users-policy', { gatewayYaml: USERS_POLICY_YAML }, async (page) => {
      const zoom = await opened(page, 12);
      assert.ok(zoom >= 0.75, `opens at zoom ${zoom} (the report saw 0.27)`);
      const canvas = await page.locator('.canvas').boundingBox();
      assert.ok(canvas);
      const boxes = await labelBoxes(page);
      assert.equal(boxes.length, 12);
      for (const [id, b] of boxes) {
        assert.ok(
          b.x >= canvas.x &&
            b.y >= canvas.y &&
            b.x + b.width <= canvas.x + canvas.width &&
            b.y + b.height <= canvas.y + canvas.height,
          `${id} at ${JSON.stringify(b)} is inside the canvas ${JSON.stringify(canvas)}`,
        );
        const label = await page.locator(`[data-node-id="${id}"] .pnode-id`).boundingBox();
        assert.ok(label !== null && label.height >= 12 * 0.75, `${id}'s label is ${label?.height} px tall`);
      }
      assertNoOverlap(boxes);
      assert.ok(new Set(boxes.map(([, b]) => Math.round(b.y / 40))).size >= 3, 'wrapped, not one long row');
      await page.getByRole('img', { name: /^Minimap/ }).waitFor();
      assert.equal(await page.locator('.react-flow__minimap-node').count(), 12);
    }));

  test('F11 readable at open: at 1024 px the graph opens at a readable zoom from its listener, the minimap showing all of it', () =>
    withEditor(
      browser,
      '#/policies/users-policy',
      { gatewayYaml: USERS_POLICY_YAML, width: 1024 },
      async (page) => {
        const zoom = await opened(page, 12);
        assert.ok(zoom >= READABLE_ZOOM - 1e-9, `opens at zoom ${zoom}`);
        const canvas = await page.locator('.canvas').boundingBox();
        const listener = await page.locator('[data-node-id="listener"]').boundingBox();
        assert.ok(canvas && listener);
        assert.ok(
          listener.x >= canvas.x &&
            listener.y >= canvas.y &&
            listener.x + listener.width <= canvas.x + canvas.width,
          'the listener is in view',
        );
        assertNoOverlap(await labelBoxes(page));
        assert.equal(await page.locator('.react-flow__minimap-node').count(), 12);
      },
    ));

  test('F11 auto layout: a graph stored as one long row is laid out again in bands that fit the canvas', () =>
    withEditor(
      browser,
      '#/policies/users-policy',
      { gatewayYaml: rowPositions(USERS_POLICY_YAML) },
      async (page) => {
        const before = await opened(page, 12);
        await page.getByRole('button', { name: 'Auto layout' }).click();
        await waitFor(async () => (await zoomOf(page)) > before + 0.05, {
          timeoutMs: 20_000,
          what: 'the fit after auto layout',
        });
        const zoom = await zoomOf(page);
        assert.ok(zoom >= 0.75, `auto layout fits at zoom ${zoom} (one row: ${before})`);
        const boxes = await labelBoxes(page);
        assertNoOverlap(boxes);
        assert.ok(new Set(boxes.map(([, b]) => Math.round(b.y / 40))).size >= 3, 'wrapped into bands');
      },
    ));

  test('F32 palette: a node added from the palette lands next to the selected node, in view, covering none', () =>
    withEditor(browser, '#/policies/users-policy', { gatewayYaml: USERS_POLICY_YAML }, async (page) => {
      await opened(page, 12);
      await selectNode(page, 'auth');
      await addFromPalette(page, 'mocking');
      const added = page.locator('[data-node-id="mocking-1"]');
      await added.waitFor();
      const canvas = await page.locator('.canvas').boundingBox();
      const box = await added.boundingBox();
      const auth = await page.locator('[data-node-id="auth"]').boundingBox();
      assert.ok(canvas && box && auth);
      assert.ok(
        box.y + box.height <= canvas.y + canvas.height && box.y >= canvas.y,
        'not at the bottom edge',
      );
      assert.ok(box.x >= canvas.x && box.x + box.width <= canvas.x + canvas.width, 'inside the canvas');
      assert.ok(Math.hypot(box.x - auth.x, box.y - auth.y) < 500, 'near the selected node');
      assertNoOverlap(await labelBoxes(page));
    }));

  test('F32 validation markers: a node marked by Validate loses its marker as soon as it is edited', () =>
    withEditor(browser, '#/policies/hello-policy', { gatewayYaml: USERS_POLICY_YAML }, async (page) => {
      await opened(page, 3);
      await selectNode(page, 'm');
      // Unwired output ports are refused by the gateway: Validate marks the node.
      await page.getByRole('combobox', { name: 'm.success →' }).selectOption('');
      await page.getByRole('button', { name: 'Validate' }).click();
      await page.locator('.pnode.has-issues[data-node-id="m"]').waitFor();
      await page.getByRole('tab', { name: 'YAML / JSON' }).click();
      await page
        .getByLabel('Node config', { exact: true })
        .fill('{"response_example": "edited", "content_type": "text/plain"}');
      await page.getByRole('button', { name: 'Apply config' }).click();
      await expectCount('markers on m', () => page.locator('.pnode.has-issues[data-node-id="m"]').count(), 0);
      const left = await page.locator('.problems li').allInnerTexts();
      assert.ok(
        !left.some((p) => p.startsWith('m ') || p.startsWith('m.')),
        `m's problems left the list: ${left.join(' | ')}`,
      );
    }));
});

/** The same config with every users-policy node stored at one long row (what the old auto layout saved). */
function rowPositions(yaml: string): string {
  let column = 0;
  return yaml
    .replace(
      /- \{ id: ([\w-]+), type: ([\w-]+)(, config|(?= \}))/g,
      (all, id: string, type: string, rest: string) =>
        USERS_NODES.some(([n]) => n === id)
          ? `- { id: ${id}, type: ${type}, position: { x: ${column++ * 280}, y: 0 }${rest}`
          : all,
    )
    .replace(
      /- id: canary\n(\s+)type: traffic-split/,
      (_m, pad: string) =>
        `- id: canary\n${pad}type: traffic-split\n${pad}position: { x: ${column++ * 280}, y: 0 }`,
    );
}
