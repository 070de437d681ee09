import type { Position } from '../types.js';
import { estimatedSizes, type PolicyNode } from './graph.js';
import type { Area } from './layout.js';

/** A rectangle in flow coordinates (top-left corner and size). */
export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

const MARGIN = 16;
const STEP = 24;
/** How far (in steps) the search goes from the anchor before giving up on staying in view. */
const RINGS = 40;

const overlaps = (a: Box, b: Box): boolean =>
  a.x < b.x + b.width + MARGIN &&
  b.x < a.x + a.width + MARGIN &&
  a.y < b.y + b.height + MARGIN &&
  b.y < a.y + a.height + MARGIN;

const inside = (a: Box, view: Box): boolean =>
  a.x >= view.x &&
  a.y >= view.y &&
  a.x + a.width <= view.x + view.width &&
  a.y + a.height <= view.y + view.height;

/**
 * Where a node added from the palette goes: the free spot nearest `anchor`
 * (right of the selected node, or the middle of the view) that covers no other
 * node and lies wholly in `view`; when the view has no free spot, the nearest
 * free one outside it (the editor then pans to it). docs/editor.md#policy-graph-editor.
 */
export function freeSpot(anchor: Position, size: Area, taken: readonly Box[], view: Box): Position {
  const candidates: Position[] = [];
  for (let dy = -RINGS; dy <= RINGS; dy++)
    for (let dx = -RINGS; dx <= RINGS; dx++)
      candidates.push({ x: anchor.x + dx * STEP, y: anchor.y + dy * STEP });
  const distance = (p: Position) => Math.hypot(p.x - anchor.x, (p.y - anchor.y) * 1.5);
  candidates.sort((a, b) => distance(a) - distance(b));
  const free = (p: Position) => !taken.some((t) => overlaps({ ...p, ...size }, t));
  return (
    candidates.find((p) => free(p) && inside({ ...p, ...size }, view)) ??
    candidates.find(free) ?? { x: anchor.x, y: anchor.y }
  );
}

/**
 * A palette entry's place (F32): next to the selected node (the next step of its chain), else the
 * middle of the view, at the nearest free spot in view; `inView` false when it had to go outside.
 */
export function placeNew(
  nodes: readonly PolicyNode[],
  size: Area,
  visible: Box,
): { position: Position; inView: boolean; centre: Position } {
  const sizes = estimatedSizes(nodes);
  const chosen = nodes.find((n) => n.selected === true);
  const anchor =
    chosen === undefined
      ? { x: visible.x + (visible.width - size.width) / 2, y: visible.y + (visible.height - size.height) / 2 }
      : { x: chosen.position.x + (sizes.get(chosen.id)?.width ?? 200) + 56, y: chosen.position.y };
  const taken = nodes.map((n) => ({ ...n.position, ...(sizes.get(n.id) ?? { width: 200, height: 110 }) }));
  const inner = {
    x: visible.x + 8,
    y: visible.y + 8,
    width: visible.width - 16,
    height: visible.height - 16,
  };
  const position = freeSpot(anchor, size, taken, inner);
  return {
    position,
    inView: inside({ ...position, ...size }, visible),
    centre: { x: position.x + size.width / 2, y: position.y + size.height / 2 },
  };
}
