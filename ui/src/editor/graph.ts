import type { Edge, Node } from '@xyflow/react';
import type { CatalogPort, EdgeConfig, NodeConfig, PluginEntry, PolicyConfig, Position } from '../types.js';
import { estimateSize, wrappedLayout, type Area } from './layout.js';

/** What a canvas node carries: the stored node (minus id and position) and its ports. */
export interface PluginNodeData extends Record<string, unknown> {
  type: string;
  config: Record<string, unknown> | null | undefined;
  configRef: string | undefined;
  /** Output ports: the catalog's, plus any an existing edge uses (e.g. a supernode's). */
  outputs: CatalogPort[];
  hasInput: boolean;
  /** Validation problems attached to this node, and to its ports by port name. */
  issues: string[];
  portIssues: Record<string, string>;
  /** Overlays: the trace step numbers that ran here, and a metrics line. */
  traced?: { steps: number[]; us: number; error: boolean };
  figures?: string;
  /** Whether the position is saved: it was stored, or the node was added, moved or laid out here. */
  placed: boolean;
  /** The node as loaded, so a save keeps its keys in their order (and any key the editor does not know). */
  original?: NodeConfig;
}

export type PolicyNode = Node<PluginNodeData, 'plugin'>;

export interface PolicyEdgeData extends Record<string, unknown> {
  /** The port as written in the stored edge (`out` stays `out`, not `success`). */
  fromPort: string;
}

export type PolicyEdge = Edge<PolicyEdgeData>;

/** Policy-level fields the canvas does not show as nodes. */
export type PolicyMeta = Omit<PolicyConfig, 'nodes' | 'edges'>;

/** `node.port` → [node, port], splitting at the last dot. */
export function splitEndpoint(endpoint: string): [string, string] {
  const dot = endpoint.lastIndexOf('.');
  return dot === -1 ? [endpoint, ''] : [endpoint.slice(0, dot), endpoint.slice(dot + 1)];
}

/** The compiler treats `out` as another name of `success` (the listener's port). */
export const handleOf = (port: string): string => (port === 'out' ? 'success' : port);

export const edgeId = (source: string, port: string, target: string): string =>
  `${source}.${port}->${target}`;

/** A supernode instance's ports: its `output` node is `success`, every other output node a port of its id. */
export function supernodePorts(def: { nodes: NodeConfig[] } | undefined): CatalogPort[] {
  const outs = (def?.nodes ?? []).filter((n) => n.type === 'output');
  return [
    ...outs.map((n): CatalogPort => ({
      name: n.id === 'output' ? 'success' : n.id,
      kind: n.id === 'output' ? 'success' : 'outcome',
      description: `Leaves the supernode through its '${n.id}' output.`,
    })),
    { name: 'error', kind: 'error', description: 'A node inside failed without its own error edge.' },
  ];
}

export function outputsOf(plugin: PluginEntry | undefined, used: Iterable<string> = []): CatalogPort[] {
  const ports: CatalogPort[] = [...(plugin?.ports.outputs ?? [])];
  for (const name of used) {
    if (!ports.some((p) => p.name === name)) ports.push({ name, kind: 'outcome', description: '' });
  }
  return ports;
}

export function makeNode(
  config: NodeConfig,
  plugin: PluginEntry | undefined,
  position: Position,
  usedPorts: Iterable<string> = [],
): PolicyNode {
  return {
    id: config.id,
    type: 'plugin',
    position,
    ariaLabel: `${config.id} (${config.type})`,
    data: {
      type: config.type,
      config: config.config,
      configRef: config.config_ref,
      outputs: outputsOf(plugin, usedPorts),
      hasInput: plugin === undefined || plugin.ports.input !== null,
      issues: [],
      portIssues: {},
      placed: config.position !== undefined,
      original: config,
    },
  };
}

/** What an edge is called to a screen reader: port to port, as gateway.yaml writes it. */
export const edgeName = (source: string, port: string, target: string): string =>
  `${source}.${port} → ${target}.in`;

export function makeEdge(source: string, port: string, target: string): PolicyEdge {
  const handle = handleOf(port);
  return {
    id: edgeId(source, handle, target),
    ariaLabel: edgeName(source, port, target),
    source,
    sourceHandle: handle,
    target,
    targetHandle: 'in',
    data: { fromPort: port },
  };
}

/** The canvas a graph is laid out for before the editor has measured it: the window less the palette and side panel. */
export const DEFAULT_AREA: Area = { width: 800, height: 780 };

/**
 * Positions for nodes stored without one: the wrapped layered layout of the
 * whole graph (layout.ts), with sizes estimated from what each node shows.
 */
export function layeredLayout(
  nodes: NodeConfig[],
  edges: EdgeConfig[],
  area: Area = DEFAULT_AREA,
  sizes: ReadonlyMap<string, Area> = new Map(),
): Map<string, Position> {
  const ports = new Map<string, Set<string>>();
  for (const e of edges) {
    const [node, port] = splitEndpoint(e.from);
    ports.set(node, (ports.get(node) ?? new Set()).add(port));
  }
  const boxes = nodes.map((n) => ({
    id: n.id,
    ...(sizes.get(n.id) ?? estimateSize(n.id, n.type, Math.max(1, ports.get(n.id)?.size ?? 0), n.config_ref)),
  }));
  const links = edges.map((e) => [splitEndpoint(e.from)[0], splitEndpoint(e.to)[0]] as const);
  return wrappedLayout(boxes, links, area);
}

export function toFlow(
  policy: PolicyConfig,
  entryFor: (node: NodeConfig) => PluginEntry | undefined,
  area: Area = DEFAULT_AREA,
): { nodes: PolicyNode[]; edges: PolicyEdge[] } {
  const used = new Map<string, string[]>();
  for (const e of policy.edges) {
    const [node, port] = splitEndpoint(e.from);
    used.set(node, [...(used.get(node) ?? []), handleOf(port)]);
  }
  const made = policy.nodes.map((n) =>
    makeNode(n, entryFor(n), n.position ?? { x: 0, y: 0 }, used.get(n.id) ?? []),
  );
  // Laid out only when some node has no stored position (the others keep theirs).
  const layout = policy.nodes.every((n) => n.position !== undefined)
    ? new Map<string, Position>()
    : layeredLayout(policy.nodes, policy.edges, area, estimatedSizes(made));
  const nodes = made.map((n) => (n.data.placed ? n : { ...n, position: layout.get(n.id) ?? n.position }));
  const edges = policy.edges.map((e) => {
    const [source, port] = splitEndpoint(e.from);
    return makeEdge(source, port, splitEndpoint(e.to)[0]);
  });
  return { nodes, edges };
}

/** Each node's size: as rendered when React Flow has measured it, else estimated from its ports and labels. */
export function estimatedSizes(nodes: readonly PolicyNode[]): Map<string, Area> {
  return new Map(
    nodes.map((n) => [
      n.id,
      n.measured?.width !== undefined && n.measured.height !== undefined
        ? { width: n.measured.width, height: n.measured.height }
        : estimateSize(n.id, n.data.type, n.data.outputs.length, n.data.configRef),
    ]),
  );
}

/**
 * The policy as the Admin API stores it, positions rounded to whole pixels.
 * A node stored without a position and never moved stays without one, so
 * saving an unchanged graph gives back exactly what was loaded.
 */
export function toPolicy(
  meta: PolicyMeta,
  nodes: PolicyNode[],
  edges: PolicyEdge[],
  keyOrder: readonly string[] = [],
): PolicyConfig {
  const policy: PolicyConfig = {
    ...meta,
    nodes: nodes.map((n) => {
      const out: NodeConfig = {
        ...(n.data.original ?? { id: n.id, type: n.data.type }),
        id: n.id,
        type: n.data.type,
      };
      if (n.data.config === undefined) delete out.config;
      else out.config = n.data.config;
      if (n.data.configRef === undefined) delete out.config_ref;
      else out.config_ref = n.data.configRef;
      if (n.data.placed) out.position = { x: Math.round(n.position.x), y: Math.round(n.position.y) };
      else delete out.position;
      return out;
    }),
    edges: edges.map((e) => ({
      from: `${e.source}.${e.data?.fromPort ?? e.sourceHandle ?? 'success'}`,
      to: `${e.target}.in`,
    })),
  };
  // The loaded key order first (the ETag is computed over the JSON text), then any new key.
  const keys = [
    ...keyOrder.filter((k) => k in policy),
    ...Object.keys(policy).filter((k) => !keyOrder.includes(k)),
  ];
  return Object.fromEntries(
    keys.map((k) => [k, (policy as unknown as Record<string, unknown>)[k]]),
  ) as unknown as PolicyConfig;
}

/** `mocking-2` style ids: the type, then the first free number (`listener` and `client` stay bare). */
export function freeId(type: string, taken: ReadonlySet<string>): string {
  if (!taken.has(type) && (type === 'listener' || type === 'client')) return type;
  for (let i = 1; ; i++) {
    const id = `${type}-${i}`;
    if (!taken.has(id)) return id;
  }
}

/** A catalog-like entry for a supernode instance, so it gets the ports of its definition. */
export function supernodeEntry(name: string, def: { nodes: NodeConfig[] } | undefined): PluginEntry {
  return {
    type: 'supernode',
    description: `Instance of supernode '${name}'.`,
    category: 'supernodes',
    ports: { input: 'Request context from the previous node.', outputs: supernodePorts(def) },
    schema: {},
    templated: [],
  };
}
