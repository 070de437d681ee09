import {
  applyEdgeChanges,
  applyNodeChanges,
  Background,
  Controls,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
  type Connection,
  type Edge,
  type EdgeChange,
  type NodeChange,
  type NodeTypes,
} from '@xyflow/react';
import { useCallback, useEffect, useMemo, useRef, useState, type DragEvent } from 'react';
import { ApiError, describe, getJson, getText, itemPath, postJson, put } from '../api.js';
import { storedOrNew } from '../editing/stored-item.js';
import { useReadOnly } from '../session/role.js';
import { TracePanel } from '../traces/trace-panel.js';
import { outerNode, type Trace } from '../traces/trace-types.js';
import type { NodeConfig, PluginEntry, PolicyConfig, PolicyValidation } from '../types.js';
import { useEditorKeys, useHistory } from '../editing/history.js';
import { UndoBar } from '../editing/undo-bar.js';
import { useUnsavedGuard } from '../editing/unsaved.js';
import {
  edgeId,
  freeId,
  handleOf,
  layeredLayout,
  makeEdge,
  makeNode,
  supernodeEntry,
  toFlow,
  toPolicy,
  type PolicyEdge,
  type PolicyMeta,
  type PolicyNode,
} from './graph.js';
import { locate, type Located } from './issues.js';
import { figuresText, nodeFigures } from './metrics.js';
import { RawEditor } from './forms/raw-editor.js';
import { NodePanel, type NodeEdit } from './node-panel.js';
import { DRAG_TYPE, Palette, type PaletteItem, type SharedConfig } from './palette.js';
import { PluginNodeView } from './plugin-node.js';
import { PolicySettings } from './policy-settings.js';

const nodeTypes: NodeTypes = { plugin: PluginNodeView };

/** What a graph edits: a policy, or a supernode's definition (docs/editor.md#supernodes). */
export type GraphKind = 'policies' | 'supernodes';

/** What a new graph starts as: a policy's listener → client, a supernode's input → output. */
const starter = (name: string, kind: GraphKind): PolicyConfig =>
  kind === 'policies'
    ? {
        name,
        nodes: [
          { id: 'listener', type: 'listener' },
          { id: 'client', type: 'client' },
        ],
        edges: [{ from: 'listener.out', to: 'client.in' }],
      }
    : {
        name,
        nodes: [
          { id: 'input', type: 'input' },
          { id: 'output', type: 'output' },
        ],
        edges: [{ from: 'input.out', to: 'output.in' }],
      };

const boundary = (type: string, description: string, input: boolean, output: boolean): PluginEntry => ({
  type,
  description,
  category: 'boundaries',
  ports: {
    input: input ? 'The request context inside the supernode.' : null,
    outputs: output
      ? [{ name: 'success', kind: 'success', description: "Into the supernode: the instance's input." }]
      : [],
  },
  schema: { type: 'object', properties: {} },
  templated: [],
});

/** A supernode's ports inside its definition: not plugins, so not in /api/plugins. */
const BOUNDARIES: PluginEntry[] = [
  boundary('input', "Where a request enters the supernode (its instance's input).", false, true),
  boundary(
    'output',
    "Where it leaves: the node called 'output' is the instance's success port, any other output node a port named by its id.",
    true,
    false,
  ),
  boundary('error', "Leaves through the instance's error port.", true, false),
];

interface Snapshot {
  nodes: PolicyNode[];
  edges: PolicyEdge[];
  meta: PolicyMeta;
}

interface Banner {
  kind: 'ok' | 'error' | 'conflict';
  text: string;
}

type SupernodeDef = Omit<PolicyConfig, 'name'> & { name: string };

interface Loaded {
  catalog: ReadonlyMap<string, PluginEntry>;
  supernodes: ReadonlyMap<string, SupernodeDef>;
  shared: SharedConfig[];
  /** ETag of the stored version the edits started from; undefined for a new policy. */
  etag: string | undefined;
  /** Bumped at every (re)load so panels drop their local drafts. */
  generation: number;
}

export function PolicyEditor({
  name,
  trace,
  kind = 'policies',
}: {
  name: string;
  trace?: string;
  kind?: GraphKind;
}) {
  return (
    <ReactFlowProvider>
      <Editor name={name} traceId={trace} kind={kind} />
    </ReactFlowProvider>
  );
}

function Editor({ name, traceId, kind }: { name: string; traceId: string | undefined; kind: GraphKind }) {
  const isPolicy = kind === 'policies';
  const noun = isPolicy ? 'Policy' : 'Supernode';
  const readOnly = useReadOnly();
  const flow = useReactFlow<PolicyNode, PolicyEdge>();
  const [loaded, setLoaded] = useState<Loaded | undefined>();
  const [loadError, setLoadError] = useState<string | undefined>();
  const [meta, setMeta] = useState<PolicyMeta>({ name });
  const [nodes, setNodes] = useState<PolicyNode[]>([]);
  const [edges, setEdges] = useState<PolicyEdge[]>([]);
  const [dirty, setDirty] = useState(false);
  const [issues, setIssues] = useState<Located[]>([]);
  const [warnings, setWarnings] = useState<string[]>([]);
  const [banner, setBanner] = useState<Banner | undefined>();
  const [busy, setBusy] = useState(false);
  const canvas = useRef<HTMLDivElement>(null);
  const [trace, setTrace] = useState<Trace | undefined>();
  const [figures, setFigures] = useState<Map<string, string> | undefined>();
  const [raw, setRaw] = useState(false);
  const [rawVersion, setRawVersion] = useState(0);

  const load = useCallback(async () => {
    const [{ plugins }, supers, shared, stored] = await Promise.all([
      getJson<{ plugins: PluginEntry[] }>('/api/plugins'),
      getJson<SupernodeDef[]>('/api/supernodes'),
      getJson<SharedConfig[]>('/api/plugin-configs'),
      storedOrNew<PolicyConfig>(kind, name),
    ]);
    const catalog = new Map([...plugins, ...(isPolicy ? [] : BOUNDARIES)].map((p) => [p.type, p]));
    // A supernode cannot hold an instance of itself.
    const supernodes = new Map(supers.filter((d) => isPolicy || d.name !== name).map((d) => [d.name, d]));
    const policy = stored?.value ?? starter(name, kind);
    const flowGraph = toFlow(policy, entryLookup(catalog, supernodes));
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
  const resetHistory = useRef<() => void>(() => undefined);

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

  const nodesRef = useRef(nodes);
  nodesRef.current = nodes;
  const isInputNode = (id: string) => nodesRef.current.find((n) => n.id === id)?.data.type === 'input';

  // An output port has at most one edge (no fan-out): a new connection replaces the old one.
  const onConnect = useCallback(
    (c: Connection) => {
      const port = c.sourceHandle;
      if (port === null || port === undefined) return;
      record();
      setEdges((es) => [
        ...es.filter((e) => !(e.source === c.source && e.sourceHandle === port)),
        // A supernode's input node is wired as `input.out` (docs/supernodes.md).
        makeEdge(c.source, port === 'success' && isInputNode(c.source) ? 'out' : port, c.target),
      ]);
      setDirty(true);
    },
    [record],
  );

  const isValidConnection = useCallback(
    (c: Connection | Edge) => c.source !== c.target && (c.targetHandle ?? 'in') === 'in',
    [],
  );

  // Problems from Validate or a refused Save, drawn on the nodes and ports they name.
  const shownNodes = useMemo(() => {
    const visits = new Map<string, { steps: number[]; us: number; error: boolean }>();
    for (const step of trace?.steps ?? []) {
      const id = outerNode(step.node_id);
      const v = visits.get(id) ?? { steps: [], us: 0, error: false };
      v.steps.push(step.index + 1); // shown counting from 1
      v.us += step.duration_us;
      v.error ||= step.outcome.kind === 'error';
      visits.set(id, v);
    }
    const withOverlays = nodes.map((n) => {
      const traced = visits.get(n.id);
      const line = figures?.get(n.id);
      if (traced === undefined && line === undefined) return n;
      return {
        ...n,
        data: {
          ...n.data,
          ...(traced === undefined ? {} : { traced }),
          ...(line === undefined ? {} : { figures: line }),
        },
      };
    });
    if (issues.length === 0) return withOverlays;
    return withOverlays.map((n) => {
      const mine = issues.filter((i) => i.node === n.id);
      if (mine.length === 0) return n;
      const portIssues: Record<string, string> = {};
      for (const i of mine) {
        const port = i.port === undefined ? undefined : handleOf(i.port);
        if (port !== undefined && n.data.outputs.some((p) => p.name === port)) portIssues[port] = i.message;
      }
      return { ...n, data: { ...n.data, issues: mine.map((i) => i.message), portIssues } };
    });
  }, [nodes, issues, trace, figures]);

  // The edges a trace took: from each step's node, through its port, to the next node that ran.
  const shownEdges = useMemo(() => {
    if (trace === undefined) return edges;
    const taken = new Set<string>();
    for (const step of trace.steps) {
      const from = outerNode(step.node_id);
      const to = step.next_node_id === undefined ? undefined : outerNode(step.next_node_id);
      if (to === undefined || to === from) continue;
      for (const e of edges) if (e.source === from && e.target === to) taken.add(e.id);
    }
    // The listener is not a step: its edge leads to the first step's node.
    const first = trace.steps[0];
    if (first !== undefined) {
      for (const e of edges) {
        const src = nodes.find((n) => n.id === e.source);
        if (src?.data.hasInput === false && e.target === outerNode(first.node_id)) taken.add(e.id);
      }
    }
    return edges.map((e) => (taken.has(e.id) ? { ...e, animated: true, className: 'traced' } : e));
  }, [edges, nodes, trace]);

  useEffect(() => {
    if (traceId === undefined) {
      setTrace(undefined);
      return;
    }
    getJson<Trace>(`/api/debug/traces/${encodeURIComponent(traceId)}`).then(setTrace, (err: unknown) =>
      setBanner({ kind: 'error', text: `Could not load trace ${traceId}: ${describe(err)}` }),
    );
  }, [traceId]);

  const toggleMetrics = async () => {
    if (figures !== undefined) {
      setFigures(undefined);
      return;
    }
    try {
      const text = await getText('/metrics');
      const byNode = nodeFigures(text, name);
      setFigures(new Map([...byNode].map(([id, f]) => [id, figuresText(f)])));
    } catch (err) {
      setBanner({ kind: 'error', text: `Metrics unavailable: ${describe(err)}` });
    }
  };

  const keyOrder = useRef<string[]>([]);
  const current = useCallback(() => toPolicy(meta, nodes, edges, keyOrder.current), [meta, nodes, edges]);

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
    const rect = canvas.current?.getBoundingClientRect();
    let position =
      at !== undefined
        ? flow.screenToFlowPosition(at)
        : rect === undefined
          ? { x: 0, y: 0 }
          : flow.screenToFlowPosition({ x: rect.left + rect.width / 2 - 90, y: rect.top + rect.height / 3 });
    // Step down until the new node does not cover another one.
    const covers = (p: { x: number; y: number }) =>
      nodes.some((n) => Math.abs(n.position.x - p.x) < 200 && Math.abs(n.position.y - p.y) < 110);
    if (at === undefined) while (covers(position)) position = { x: position.x, y: position.y + 120 };
    const base = item.kind === 'plugin' ? item.type : item.name;
    const id = freeId(base, new Set(nodes.map((n) => n.id)));
    const made = makeNode({ ...config, id }, entry, position);
    const node = { ...made, data: { ...made.data, placed: true }, selected: true };
    record();
    setNodes((ns) => [...ns.map((n) => (n.selected === true ? { ...n, selected: false } : n)), node]);
    setDirty(true);
  };

  const onDrop = (event: DragEvent) => {
    const raw = event.dataTransfer.getData(DRAG_TYPE);
    if (raw === '' || readOnly) return;
    event.preventDefault();
    addItem(JSON.parse(raw) as PaletteItem, { x: event.clientX, y: event.clientY });
  };

  const applyEdit = (id: string, edit: NodeEdit, field?: string) => {
    record(field === undefined ? undefined : `${id}:${field}`);
    setNodes((ns) =>
      ns.map((n) =>
        n.id === id ? { ...n, data: { ...n.data, config: edit.config, configRef: edit.configRef } } : n,
      ),
    );
    setDirty(true);
  };

  /** The whole graph replaced from text: one undo step. */
  const applyRawGraph = (value: unknown): string[] => {
    if (loaded === undefined) return [];
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      return ['Expected an object with nodes and edges.'];
    const graph = { ...(value as PolicyConfig), name };
    if (!Array.isArray(graph.nodes) || !Array.isArray(graph.edges)) return ['nodes and edges must be lists.'];
    const flowGraph = toFlow(graph, entryLookup(loaded.catalog, loaded.supernodes));
    const { nodes: _n, edges: _e, ...rest } = graph;
    record();
    setMeta(rest);
    setNodes(flowGraph.nodes);
    setEdges(flowGraph.edges);
    setIssues([]);
    setDirty(true);
    setRawVersion((v) => v + 1);
    return [];
  };

  const rename = (from: string, to: string) => {
    record();
    setNodes((ns) => ns.map((n) => (n.id === from ? { ...n, id: to } : n)));
    setEdges((es) =>
      es.map((e) => {
        const source = e.source === from ? to : e.source;
        const target = e.target === from ? to : e.target;
        return { ...e, source, target, id: edgeId(source, e.sourceHandle ?? '', target) };
      }),
    );
    setMeta((m) => (m.error_handler === from ? { ...m, error_handler: to } : m));
    setIssues([]);
    setDirty(true);
  };

  const autoLayout = () => {
    const policy = current();
    const positions = layeredLayout(policy.nodes, policy.edges);
    record();
    setNodes((ns) =>
      ns.map((n) => ({
        ...n,
        position: positions.get(n.id) ?? n.position,
        data: { ...n.data, placed: true },
      })),
    );
    setDirty(true);
    window.requestAnimationFrame(() => void flow.fitView({ padding: 0.2 }));
  };

  const validate = async () => {
    const policy = current();
    setBusy(true);
    try {
      const result = await postJson<PolicyValidation>('/api/policies/validate', policy);
      const problems =
        result.details.length > 0 ? result.details : result.errors.map((message) => ({ path: '', message }));
      setIssues(result.valid ? [] : locate(problems, policy.nodes));
      setWarnings(result.warnings);
      setBanner(
        result.valid
          ? { kind: 'ok', text: 'Valid: the gateway would accept this policy.' }
          : { kind: 'error', text: `Not valid: ${problems.length} problem(s), listed on the right.` },
      );
    } catch (err) {
      setBanner({ kind: 'error', text: `Validation failed: ${describe(err)}` });
    } finally {
      setBusy(false);
    }
  };

  const save = async (overwrite = false) => {
    if (loaded === undefined) return;
    const policy = current();
    setBusy(true);
    try {
      const etag = await put(itemPath(kind, name), policy, overwrite ? undefined : loaded.etag);
      setLoaded({ ...loaded, etag });
      setDirty(false);
      setIssues([]);
      setBanner({ kind: 'ok', text: `Saved '${name}'. It is live for the next request.` });
    } catch (err) {
      if (err instanceof ApiError && err.conflict) {
        setBanner({
          kind: 'conflict',
          text: `${noun} '${name}' was changed by someone else since you opened it, so your version was not saved.`,
        });
      } else if (err instanceof ApiError && err.status === 400) {
        const problems = err.details.length > 0 ? err.details : [{ path: '', message: err.message }];
        setIssues(locate(problems, policy.nodes));
        setBanner({
          kind: 'error',
          text: `Not saved: the gateway refused the ${noun.toLowerCase()} (${problems.length} problem(s), listed on the right). The running configuration is unchanged.`,
        });
      } else {
        setBanner({ kind: 'error', text: `Not saved: ${describe(err)}` });
      }
    } finally {
      setBusy(false);
    }
  };

  useEditorKeys({ save: () => void save(), undo: history.undo, redo: history.redo, enabled: !readOnly });

  const reload = () => {
    setBanner(undefined);
    load().catch((err: unknown) => setBanner({ kind: 'error', text: describe(err) }));
  };

  const selectNode = (id: string) => setNodes((ns) => ns.map((n) => ({ ...n, selected: n.id === id })));

  if (loadError !== undefined) {
    return (
      <section className="page">
        <div className="error-box" role="alert">
          Could not open {noun.toLowerCase()} '{name}': {loadError}
        </div>
      </section>
    );
  }
  if (loaded === undefined) return <p className="page muted">Loading…</p>;

  const selected = nodes.filter((n) => n.selected === true);
  const single = selected.length === 1 ? selected[0] : undefined;

  return (
    <section className="editor">
      <div className="toolbar">
        <a href={`#/${kind}`}>{isPolicy ? '← Policies' : '← Supernodes'}</a>
        <h1>{name}</h1>
        {loaded.etag === undefined && <span className="badge">new</span>}
        {readOnly && <span className="badge readonly">read-only</span>}
        <span className="spacer" />
        <UndoBar history={history} dirty={dirty} readOnly={readOnly} />
        {!readOnly && (
          <>
            <button type="button" onClick={autoLayout}>
              Auto layout
            </button>
          </>
        )}
        {isPolicy && (
          <button type="button" aria-pressed={figures !== undefined} onClick={() => void toggleMetrics()}>
            Metrics
          </button>
        )}
        <button
          type="button"
          aria-pressed={raw}
          onClick={() => {
            setRawVersion((v) => v + 1);
            setRaw(!raw);
          }}
        >
          YAML / JSON
        </button>
        {!readOnly && (
          <>
            {isPolicy && (
              <button type="button" onClick={() => void validate()} disabled={busy}>
                Validate
              </button>
            )}
            <button type="button" className="primary" onClick={() => void save()} disabled={busy}>
              Save
            </button>
          </>
        )}
      </div>
      {banner !== undefined && (
        <div className={`banner ${banner.kind}`} role="status">
          <span>{banner.text}</span>
          {banner.kind === 'conflict' && (
            <>
              <button type="button" onClick={reload}>
                Load their version (discard mine)
              </button>
              <button type="button" className="danger" onClick={() => void save(true)}>
                Overwrite with mine
              </button>
            </>
          )}
          <button type="button" className="close" aria-label="Dismiss" onClick={() => setBanner(undefined)}>
            ×
          </button>
        </div>
      )}
      <div className="editor-body">
        {!readOnly && (
          <Palette
            catalog={loaded.catalog}
            supernodes={[...loaded.supernodes.values()]}
            shared={loaded.shared}
            onAdd={(item) => addItem(item)}
          />
        )}
        <div
          className="canvas"
          ref={canvas}
          onDragOver={(e) => {
            if (e.dataTransfer.types.includes(DRAG_TYPE)) {
              e.preventDefault();
              e.dataTransfer.dropEffect = 'copy';
            }
          }}
          onDrop={onDrop}
        >
          <ReactFlow<PolicyNode, PolicyEdge>
            nodes={shownNodes}
            edges={shownEdges}
            nodeTypes={nodeTypes}
            onNodesChange={onNodesChange}
            onEdgesChange={onEdgesChange}
            onConnect={onConnect}
            isValidConnection={isValidConnection}
            nodesDraggable={!readOnly}
            nodesConnectable={!readOnly}
            deleteKeyCode={readOnly ? null : ['Backspace', 'Delete']}
            minZoom={0.2}
            fitView
            fitViewOptions={{ padding: 0.2 }}
          >
            <Background />
            <Controls />
          </ReactFlow>
        </div>
        <aside className="side">
          {raw && (
            <div className="panel" aria-label={`${noun} as text`}>
              <h2>{noun} as YAML / JSON</h2>
              <RawEditor
                key={`${loaded.generation}:${rawVersion}`}
                label={`${noun} definition`}
                value={withoutName(current())}
                readOnly={readOnly}
                applyLabel="Apply to graph"
                onApply={applyRawGraph}
              />
            </div>
          )}
          {trace !== undefined && <TracePanel trace={trace} onSelect={selectNode} />}
          {issues.length > 0 && (
            <div className="problems" aria-label="Problems">
              <h2>Problems</h2>
              <ul>
                {issues.map((issue, i) => (
                  <li key={i}>
                    {issue.node !== undefined && (
                      <button type="button" className="link" onClick={() => selectNode(issue.node ?? '')}>
                        {issue.port === undefined ? issue.node : `${issue.node}.${issue.port}`}
                      </button>
                    )}{' '}
                    {issue.message}
                  </li>
                ))}
              </ul>
            </div>
          )}
          {warnings.length > 0 && (
            <div className="warnings">
              <h2>Warnings</h2>
              <ul>
                {warnings.map((w) => (
                  <li key={w}>{w}</li>
                ))}
              </ul>
            </div>
          )}
          {single !== undefined ? (
            <NodePanel
              key={`${single.id}#${loaded.generation}`}
              node={single}
              plugin={loaded.catalog.get(single.data.type)}
              supernodes={loaded.supernodes}
              takenIds={new Set(nodes.map((n) => n.id))}
              onApply={applyEdit}
              onRename={rename}
              onDelete={(id) => void flow.deleteElements({ nodes: [{ id }] })}
            />
          ) : (
            <PolicySettings
              key={loaded.generation}
              supernode={!isPolicy}
              meta={meta}
              nodeIds={nodes.map((n) => n.id)}
              selectedCount={selected.length}
              onChange={(next) => {
                record('meta');
                setMeta(next);
                setDirty(true);
              }}
            />
          )}
        </aside>
      </div>
    </section>
  );
}

function withoutName(graph: PolicyConfig): Omit<PolicyConfig, 'name'> {
  const { name: _name, ...rest } = graph;
  return rest;
}

/** The catalog entry of a stored node; a supernode instance gets the ports of its definition. */
function entryLookup(
  catalog: ReadonlyMap<string, PluginEntry>,
  supernodes: ReadonlyMap<string, SupernodeDef>,
): (node: NodeConfig) => PluginEntry | undefined {
  return (node) => {
    if (node.type !== 'supernode') return catalog.get(node.type);
    const ref = node.config?.name;
    return typeof ref === 'string' ? supernodeEntry(ref, supernodes.get(ref)) : undefined;
  };
}
