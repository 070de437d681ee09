import dagre from '@dagrejs/dagre';
import type { Position } from '../types.js';

/** A node to place: its id and its size on the canvas (measured, or estimated before the first render). */
export interface LayoutNode {
  id: string;
  width: number;
  height: number;
}

/** The canvas the layout is for, in screen pixels. */
export interface Area {
  width: number;
  height: number;
}

/** Gaps between columns (layers), between nodes of one column, and between two bands of a wrapped layout. */
const GAP_X = 56;
const GAP_Y = 24;
const BAND_GAP = 64;
/** The share of the canvas fitView keeps free around the graph (fitViewOptions.padding). */
export const FIT_PADDING = 0.1;
/** Below this zoom a node's 12 px id reads smaller than 7 px: the editor does not open below it (docs/editor.md#policy-graph-editor). */
export const READABLE_ZOOM = 0.6;

/**
 * Size of a node before it is rendered, from what it shows: the widest of its
 * id, type and config_ref line (12 px and 11 px text, 170–240 px wide as the
 * CSS bounds it), one 19 px row per output port.
 */
export function estimateSize(id: string, type: string, ports: number, configRef?: string): Area {
  const text = Math.max(id.length * 7.6, type.length * 6.8, (configRef ?? '').length * 6.8 + 80);
  return {
    width: Math.min(240, Math.max(170, Math.ceil(text) + 24)),
    height: 54 + 19 * ports + (configRef === undefined ? 0 : 16),
  };
}

interface Placed extends LayoutNode {
  rank: number;
  /** Top edge in the unwrapped layout. */
  top: number;
}

/** Layers (columns, left to right) and the order within each, from dagre's network-simplex ranking. */
function rankNodes(nodes: readonly LayoutNode[], links: readonly (readonly [string, string])[]): Placed[] {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'LR', nodesep: GAP_Y, ranksep: GAP_X, marginx: 0, marginy: 0 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.id, { width: n.width, height: n.height });
  for (const [from, to] of links) if (from !== to && g.hasNode(from) && g.hasNode(to)) g.setEdge(from, to);
  dagre.layout(g);
  const placed = nodes.map((n) => {
    const label = g.node(n.id) as { x?: number; y?: number };
    return { ...n, centre: label.x ?? 0, top: (label.y ?? 0) - n.height / 2 };
  });
  // In a left-to-right layout the nodes of one layer share their centre's x.
  const columns = [...new Set(placed.map((p) => Math.round(p.centre)))].sort((a, b) => a - b);
  return placed.map(({ centre, ...p }) => ({ ...p, rank: columns.indexOf(Math.round(centre)) }));
}

interface Wrapped {
  positions: Map<string, Position>;
  width: number;
  height: number;
}

/**
 * The layers cut into bands of `perBand` columns, each band under the previous one, like lines of
 * text. Within a band each column is stacked from the band's top in dagre's order, so a chain
 * reads along one line instead of dagre's staircase around long edges.
 */
function wrap(placed: readonly Placed[], perBand: number): Wrapped {
  const ranks = Math.max(0, ...placed.map((p) => p.rank)) + 1;
  const column = (r: number) => placed.filter((p) => p.rank === r).sort((a, b) => a.top - b.top);
  const columns = Array.from({ length: ranks }, (_, r) => column(r));
  const columnWidth = columns.map((c) => Math.max(0, ...c.map((p) => p.width)));
  const positions = new Map<string, Position>();
  let y = 0;
  let width = 0;
  for (let first = 0; first < ranks; first += perBand) {
    let x = 0;
    let height = 0;
    for (let r = first; r < Math.min(ranks, first + perBand); r++) {
      let below = 0;
      for (const p of columns[r] ?? []) {
        positions.set(p.id, { x, y: y + below });
        below += p.height + GAP_Y;
      }
      height = Math.max(height, below - GAP_Y);
      x += (columnWidth[r] ?? 0) + GAP_X;
    }
    width = Math.max(width, x - GAP_X);
    y += height + BAND_GAP;
  }
  return { positions, width, height: Math.max(0, y - BAND_GAP) };
}

/** The zoom fitView would pick for a graph of this size on `area` (at most 1: small graphs are not blown up). */
export function fitZoom(width: number, height: number, area: Area): number {
  const scale = 1 + FIT_PADDING * 2;
  return Math.min(1, area.width / (width * scale), area.height / (height * scale));
}

/**
 * A layered layout that wraps: dagre assigns layers (longest chains read left
 * to right) and orders each layer to cut crossings; the layers are then cut
 * into bands stacked top to bottom, with as many columns per band as give the
 * largest zoom at which the whole graph fits `area`. A 12-node chain on an
 * 800 × 800 canvas becomes three bands of four columns instead of one row.
 * Positions are top-left corners, starting at (0, 0).
 */
export function wrappedLayout(
  nodes: readonly LayoutNode[],
  links: readonly (readonly [string, string])[],
  area: Area,
): Map<string, Position> {
  if (nodes.length === 0) return new Map();
  const placed = rankNodes(nodes, links);
  const ranks = Math.max(...placed.map((p) => p.rank)) + 1;
  let best: { zoom: number; layout: Wrapped } | undefined;
  for (let perBand = ranks; perBand >= 1; perBand--) {
    const layout = wrap(placed, perBand);
    const zoom = fitZoom(layout.width, layout.height, area);
    // Fewer bands win a tie: the graph then reads in one line as long as it fits.
    if (best === undefined || zoom > best.zoom + 1e-9) best = { zoom, layout };
  }
  return best?.layout.positions ?? new Map<string, Position>();
}
