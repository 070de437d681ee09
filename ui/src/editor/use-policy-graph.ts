import { applyEdgeChanges, applyNodeChanges, type EdgeChange, type NodeChange } from '@xyflow/react';
import { useCallback, useEffect, useRef, useState, type Dispatch, type SetStateAction } from 'react';
import { describe, getJson } from '../api.js';
import { useHistory, type History } from '../editing/history.js';
import { storedOrNew } from '../editing/stored-item.js';
import { useUnsavedGuard } from '../editing/unsaved.js';
import type { PluginEntry, PolicyConfig } from '../types.js';
import { toFlow, toPolicy, type PolicyEdge, type PolicyMeta, type PolicyNode } from './graph.js';
import { BOUNDARIES, entryLookup, starter, type GraphKind, type SupernodeDef } from './graph-kind.js';
import type { Located } from './issues.js';
import type { Area } from './layout.js';
import type { SharedConfig } from './palette.js';

export interface Loaded {
  catalog: ReadonlyMap<string, PluginEntry>;
  supernodes: ReadonlyMap<string, SupernodeDef>;
  shared: SharedConfig[];
  /** ETag of the stored version the edits started from; undefined for a new policy. */
  etag: string | undefined;
  /** Bumped at every (re)load so panels drop their local drafts and the canvas fits the view again. */
  generation: number;
}

interface Snapshot {
  nodes: PolicyNode[];
  edges: PolicyEdge[];
  meta: PolicyMeta;
}

/** The graph being edited, its undo history, and what the gateway last said about it. */
export interface PolicyGraph {
  name: string;
  kind: GraphKind;
  loaded: Loaded | undefined;
  setLoaded: Dispatch<SetStateAction<Loaded | undefined>>;
  loadError: string | undefined;
  load: () => Promise<void>;
  meta: PolicyMeta;
  setMeta: Dispatch<SetStateAction<PolicyMeta>>;
  nodes: PolicyNode[];
  setNodes: Dispatch<SetStateAction<PolicyNode[]>>;
  edges: PolicyEdge[];
  setEdges: Dispatch<SetStateAction<PolicyEdge[]>>;
  dirty: boolean;
  setDirty: Dispatch<SetStateAction<boolean>>;
  issues: Located[];
  setIssues: Dispatch<SetStateAction<Located[]>>;
  warnings: string[];
  setWarnings: Dispatch<SetStateAction<string[]>>;
  history: History;
  /** The graph as the Admin API stores it, in the loaded key order. */
  current: () => PolicyConfig;
  onNodesChange: (changes: NodeChange<PolicyNode>[]) => void;
  onEdgesChange: (changes: EdgeChange<PolicyEdge>[]) => void;
}

/** Loads a policy (or supernode) with the catalog it needs, and keeps the edited graph with undo. */
export function usePolicyGraph(name: string, kind: GraphKind, area: () => Area): PolicyGraph {
  const isPolicy = kind === 'policies';
  const [loaded, setLoaded] = useState<Loaded | undefined>();
  const [loadError, setLoadError] = useState<string | undefined>();
  const [meta, setMeta] = useState<PolicyMeta>({ name });
  const [nodes, setNodes] = useState<PolicyNode[]>([]);
  const [edges, setEdges] = useState<PolicyEdge[]>([]);
  const [dirty, setDirty] = useState(false);
  const [issues, setIssues] = useState<Located[]>([]);
  const [warnings, setWarnings] = useState<string[]>([]);
  const keyOrder = useRef<string[]>([]);
  const resetHistory = useRef<() => void>(() => undefined);
  const areaRef = useRef(area);
  areaRef.current = area;

  const load = useCallback(async () => {
    const [{ plugins }, supers, shared, stored] = await Promise.all([
      getJson<{ plugins: PluginEntry[] }>('/api/plugins'),
      getJson<SupernodeDef[]>('/api/supernodes'),
      getJson<SharedConfig[]>('/api/plugin-configs'),
      storedOrNew<PolicyConfig>(kind, name), // no 404 for an unsaved New policy (F31)
    ]);
    const catalog = new Map([...plugins, ...(isPolicy ? [] : BOUNDARIES)].map((p) => [p.type, p]));
    // A supernode cannot hold an instance of itself.
    const supernodes = new Map(supers.filter((d) => isPolicy || d.name !== name).map((d) => [d.name, d]));
    const policy = stored?.value ?? starter(name, kind);
    const flowGraph = toFlow(policy, entryLookup(catalog, supernodes), areaRef.current());
    const { nodes: _nodes, edges: _edges, ...rest } = policy;
    keyOrder.current = Object.keys(policy);
    setMeta(rest);
    setNodes(flowGraph.nodes);
    setEdges(flowGraph.edges);
    setDirty(stored === undefined);
    setIssues([]);
    setWarnings([]);
    setLoaded((prev) => ({
      catalog,
      supernodes,
      shared,
      etag: stored?.etag,
      generation: (prev?.generation ?? 0) + 1,
    }));
    resetHistory.current();
  }, [name, kind, isPolicy]);

  useEffect(() => {
    load().catch((err: unknown) => setLoadError(describe(err)));
  }, [load]);

  useUnsavedGuard(dirty);

  const state = useRef<Snapshot>({ nodes, edges, meta });
  state.current = { nodes, edges, meta };
  const snapshot = useCallback((): Snapshot => state.current, []);
  const restore = useCallback((s: Snapshot) => {
    // Selection is not an edit: what is selected now stays selected.
    const selected = new Set(state.current.nodes.filter((n) => n.selected === true).map((n) => n.id));
    setNodes(s.nodes.map((n) => ({ ...n, selected: selected.has(n.id) })));
    setEdges(s.edges);
    setMeta(s.meta);
    setIssues([]);
    setDirty(true);
  }, []);
  const history = useHistory<Snapshot>(snapshot, restore);
  resetHistory.current = history.reset;
  const { record } = history;
  const dragging = useRef(false);

  const onNodesChange = useCallback(
    (changes: NodeChange<PolicyNode>[]) => {
      // One undo step per drag: record when it starts.
      const drag = changes.some((c) => c.type === 'position' && c.dragging === true);
      if ((drag && !dragging.current) || changes.some((c) => c.type === 'remove')) record();
      dragging.current = drag;
      setNodes((ns) => applyNodeChanges(changes, ns));
      if (changes.some((c) => c.type === 'position' || c.type === 'remove' || c.type === 'add'))
        setDirty(true);
    },
    [record],
  );

  const onEdgesChange = useCallback(
    (changes: EdgeChange<PolicyEdge>[]) => {
      // Removing a node removes its edges in the same step: already recorded by onNodesChange.
      if (changes.some((c) => c.type === 'remove')) record('edges-removed');
      setEdges((es) => applyEdgeChanges(changes, es));
      if (changes.some((c) => c.type === 'remove' || c.type === 'add')) setDirty(true);
    },
    [record],
  );

  const current = useCallback(() => toPolicy(meta, nodes, edges, keyOrder.current), [meta, nodes, edges]);

  return {
    name,
    kind,
    loaded,
    setLoaded,
    loadError,
    load,
    meta,
    setMeta,
    nodes,
    setNodes,
    edges,
    setEdges,
    dirty,
    setDirty,
    issues,
    setIssues,
    warnings,
    setWarnings,
    history,
    current,
    onNodesChange,
    onEdgesChange,
  };
}
