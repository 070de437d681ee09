import { useReactFlow, type Connection, type Edge } from '@xyflow/react';
import { useCallback, useRef, type RefObject } from 'react';
import type { NodeConfig, PolicyConfig } from '../types.js';
import {
  edgeId,
  edgeName,
  estimatedSizes,
  freeId,
  layeredLayout,
  makeEdge,
  makeNode,
  toFlow,
  type PolicyEdge,
  type PolicyNode,
} from './graph.js';
import { entryLookup } from './graph-kind.js';
import { estimateSize, FIT_PADDING, type Area } from './layout.js';
import type { NodeEdit } from './node-panel.js';
import type { PaletteItem } from './palette.js';
import { placeNew, type Box } from './placement.js';
import type { PolicyGraph } from './use-policy-graph.js';

/** Every change the canvas, the palette and the side panel make to the graph, each one undo step. */
export interface GraphEdits {
  /** Wires `source.port` to `target`'s input, replacing the port's edge; `undefined` unwires it. */
  wire: (source: string, port: string, target: string | undefined) => void;
  onConnect: (c: Connection) => void;
  isValidConnection: (c: Connection | Edge) => boolean;
  addItem: (item: PaletteItem, at?: { x: number; y: number }) => void;
  applyEdit: (id: string, edit: NodeEdit, field?: string) => void;
  applyRawGraph: (value: unknown) => string[];
  rename: (from: string, to: string) => void;
  autoLayout: () => void;
  selectNode: (id: string) => void;
}

export function useGraphEdits(
  g: PolicyGraph,
  canvas: RefObject<HTMLDivElement | null>,
  onRawApplied: () => void,
): GraphEdits {
  const flow = useReactFlow<PolicyNode, PolicyEdge>();
  const { record } = g.history;
  const { setNodes, setEdges, setIssues, setDirty, setMeta, nodes, loaded } = g;

  /** Problems the gateway reported on a node are stale once the node is edited (F32). */
  const clearIssuesOf = useCallback(
    (...ids: string[]) => setIssues((is) => is.filter((i) => i.node === undefined || !ids.includes(i.node))),
    [setIssues],
  );

  const nodesRef = useRef(nodes);
  nodesRef.current = nodes;

  const wire = useCallback(
    (source: string, port: string, target: string | undefined) => {
      // A supernode's input node is wired as `input.out` (docs/supernodes.md).
      const isInput = nodesRef.current.find((n) => n.id === source)?.data.type === 'input';
      const fromPort = port === 'success' && isInput ? 'out' : port;
      record();
      // An output port has at most one edge (no fan-out): a new connection replaces the old one.
      setEdges((es) => [
        ...es.filter((e) => !(e.source === source && e.sourceHandle === port)),
        ...(target === undefined ? [] : [makeEdge(source, fromPort, target)]),
      ]);
      clearIssuesOf(source);
      setDirty(true);
    },
    [record, setEdges, clearIssuesOf, setDirty],
  );

  const onConnect = useCallback(
    (c: Connection) => {
      if (c.sourceHandle === null || c.sourceHandle === undefined) return;
      wire(c.source, c.sourceHandle, c.target);
    },
    [wire],
  );

  const isValidConnection = useCallback(
    (c: Connection | Edge) => c.source !== c.target && (c.targetHandle ?? 'in') === 'in',
    [],
  );

  /** The visible part of the canvas in flow coordinates. */
  const view = (): Box | undefined => {
    const rect = canvas.current?.getBoundingClientRect();
    if (rect === undefined) return undefined;
    const a = flow.screenToFlowPosition({ x: rect.left, y: rect.top });
    const b = flow.screenToFlowPosition({ x: rect.right, y: rect.bottom });
    return { x: a.x, y: a.y, width: b.x - a.x, height: b.y - a.y };
  };

  const addItem = (item: PaletteItem, at?: { x: number; y: number }) => {
    if (loaded === undefined) return;
    const type = item.kind === 'plugin' ? item.type : item.kind === 'shared' ? item.type : 'supernode';
    const config: NodeConfig =
      item.kind === 'plugin'
        ? { id: '', type }
        : item.kind === 'shared'
          ? { id: '', type, config_ref: item.name }
          : { id: '', type, config: { name: item.name } };
    const entry = entryLookup(loaded.catalog, loaded.supernodes)(config);
    const base = item.kind === 'plugin' ? item.type : item.name;
    const id = freeId(base, new Set(nodes.map((n) => n.id)));
    const size = estimateSize(id, type, entry?.ports.outputs.length ?? 1, config.config_ref);
    const visible = view();
    let position = { x: 0, y: 0 };
    if (at !== undefined) position = flow.screenToFlowPosition(at);
    else if (visible !== undefined) {
      const placed = placeNew(nodes, size, visible);
      position = placed.position;
      if (!placed.inView) void flow.setCenter(placed.centre.x, placed.centre.y, { zoom: flow.getZoom() });
    }
    const made = makeNode({ ...config, id }, entry, position);
    const node = { ...made, data: { ...made.data, placed: true }, selected: true };
    record();
    setNodes((ns) => [...ns.map((n) => (n.selected === true ? { ...n, selected: false } : n)), node]);
    setDirty(true);
  };

  const applyEdit = (id: string, edit: NodeEdit, field?: string) => {
    record(field === undefined ? undefined : `${id}:${field}`);
    setNodes((ns) =>
      ns.map((n) =>
        n.id === id ? { ...n, data: { ...n.data, config: edit.config, configRef: edit.configRef } } : n,
      ),
    );
    clearIssuesOf(id);
    setDirty(true);
  };

  /** The whole graph replaced from text: one undo step. */
  const applyRawGraph = (value: unknown): string[] => {
    if (loaded === undefined) return [];
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      return ['Expected an object with nodes and edges.'];
    const graph = { ...(value as PolicyConfig), name: g.name };
    if (!Array.isArray(graph.nodes) || !Array.isArray(graph.edges)) return ['nodes and edges must be lists.'];
    const flowGraph = toFlow(graph, entryLookup(loaded.catalog, loaded.supernodes), areaOf(canvas.current));
    const { nodes: _n, edges: _e, ...rest } = graph;
    record();
    setMeta(rest);
    setNodes(flowGraph.nodes);
    setEdges(flowGraph.edges);
    setIssues([]);
    setDirty(true);
    onRawApplied();
    return [];
  };

  const rename = (from: string, to: string) => {
    record();
    setNodes((ns) =>
      ns.map((n) => (n.id === from ? { ...n, id: to, ariaLabel: `${to} (${n.data.type})` } : n)),
    );
    setEdges((es) =>
      es.map((e) => {
        const source = e.source === from ? to : e.source;
        const target = e.target === from ? to : e.target;
        const port = e.data?.fromPort ?? e.sourceHandle ?? '';
        return {
          ...e,
          source,
          target,
          id: edgeId(source, e.sourceHandle ?? '', target),
          ariaLabel: edgeName(source, port, target),
        };
      }),
    );
    setMeta((m) => (m.error_handler === from ? { ...m, error_handler: to } : m));
    clearIssuesOf(from);
    setDirty(true);
  };

  const autoLayout = () => {
    const policy = g.current();
    const positions = layeredLayout(
      policy.nodes,
      policy.edges,
      areaOf(canvas.current),
      estimatedSizes(nodes),
    );
    record();
    setNodes((ns) =>
      ns.map((n) => ({
        ...n,
        position: positions.get(n.id) ?? n.position,
        data: { ...n.data, placed: true },
      })),
    );
    setDirty(true);
    window.requestAnimationFrame(() => void flow.fitView({ padding: FIT_PADDING, maxZoom: 1 }));
  };

  const selectNode = (id: string) => setNodes((ns) => ns.map((n) => ({ ...n, selected: n.id === id })));

  return {
    wire,
    onConnect,
    isValidConnection,
    addItem,
    applyEdit,
    applyRawGraph,
    rename,
    autoLayout,
    selectNode,
  };
}

/** The canvas size, or (before it is on screen) the window less the palette, side panel and bars. */
export function areaOf(canvas: HTMLElement | null): Area {
  const rect = canvas?.getBoundingClientRect();
  if (rect !== undefined && rect.width > 0 && rect.height > 0)
    return { width: rect.width, height: rect.height };
  const wide = window.innerWidth > 1100;
  return {
    width: Math.max(320, window.innerWidth - (wide ? 240 : 200) - 360),
    height: Math.max(320, window.innerHeight - 110),
  };
}
