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
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { ApiError, describe, getJson, getVersioned, itemPath, postJson, put } from '../api.js';
import type { PluginEntry, PolicyConfig, PolicyValidation } from '../types.js';
import { setUnsavedCheck } from '../use-hash-route.js';
import {
  edgeId,
  freeId,
  handleOf,
  layeredLayout,
  makeEdge,
  makeNode,
  toFlow,
  toPolicy,
  type PolicyEdge,
  type PolicyMeta,
  type PolicyNode,
} from './graph.js';
import { locate, type Located } from './issues.js';
import { NodePanel, type NodeEdit } from './node-panel.js';
import { Palette } from './palette.js';
import { PluginNodeView } from './plugin-node.js';
import { PolicySettings } from './policy-settings.js';

const nodeTypes: NodeTypes = { plugin: PluginNodeView };

/** What a new policy starts as: the two nodes every policy needs. */
const starter = (name: string): PolicyConfig => ({
  name,
  nodes: [
    { id: 'listener', type: 'listener' },
    { id: 'client', type: 'client' },
  ],
  edges: [{ from: 'listener.out', to: 'client.in' }],
});

interface Banner {
  kind: 'ok' | 'error' | 'conflict';
  text: string;
}

interface Loaded {
  catalog: ReadonlyMap<string, PluginEntry>;
  /** ETag of the stored version the edits started from; undefined for a new policy. */
  etag: string | undefined;
  /** Bumped at every (re)load so panels drop their local drafts. */
  generation: number;
}

export function PolicyEditor({ name }: { name: string }) {
  return (
    <ReactFlowProvider>
      <Editor name={name} />
    </ReactFlowProvider>
  );
}

function Editor({ name }: { name: string }) {
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

  const load = useCallback(async () => {
    const [{ plugins }, stored] = await Promise.all([
      getJson<{ plugins: PluginEntry[] }>('/api/plugins'),
      getVersioned<PolicyConfig>(itemPath('policies', name)).catch((err: unknown) => {
        if (err instanceof ApiError && err.status === 404) return undefined;
        throw err;
      }),
    ]);
    const catalog = new Map(plugins.map((p) => [p.type, p]));
    const policy = stored?.value ?? starter(name);
    const flowGraph = toFlow(policy, catalog);
    const { nodes: _nodes, edges: _edges, ...rest } = policy;
    setMeta(rest);
    setNodes(flowGraph.nodes);
    setEdges(flowGraph.edges);
    setDirty(stored === undefined);
    setIssues([]);
    setWarnings([]);
    setLoaded((prev) => ({ catalog, etag: stored?.etag, generation: (prev?.generation ?? 0) + 1 }));
  }, [name]);

  useEffect(() => {
    load().catch((err: unknown) => setLoadError(describe(err)));
  }, [load]);

  const dirtyRef = useRef(dirty);
  dirtyRef.current = dirty;
  useEffect(() => {
    setUnsavedCheck(() => dirtyRef.current);
    return () => setUnsavedCheck(undefined);
  }, []);

  const onNodesChange = useCallback((changes: NodeChange<PolicyNode>[]) => {
    setNodes((ns) => applyNodeChanges(changes, ns));
    if (changes.some((c) => c.type === 'position' || c.type === 'remove' || c.type === 'add')) setDirty(true);
  }, []);

  const onEdgesChange = useCallback((changes: EdgeChange<PolicyEdge>[]) => {
    setEdges((es) => applyEdgeChanges(changes, es));
    if (changes.some((c) => c.type === 'remove' || c.type === 'add')) setDirty(true);
  }, []);

  // An output port has at most one edge (no fan-out): a new connection replaces the old one.
  const onConnect = useCallback((c: Connection) => {
    const port = c.sourceHandle;
    if (port === null || port === undefined) return;
    setEdges((es) => [
      ...es.filter((e) => !(e.source === c.source && e.sourceHandle === port)),
      makeEdge(c.source, port, c.target),
    ]);
    setDirty(true);
  }, []);

  const isValidConnection = useCallback(
    (c: Connection | Edge) => c.source !== c.target && (c.targetHandle ?? 'in') === 'in',
    [],
  );

  // Problems from Validate or a refused Save, drawn on the nodes and ports they name.
  const shownNodes = useMemo(() => {
    if (issues.length === 0) return nodes;
    return nodes.map((n) => {
      const mine = issues.filter((i) => i.node === n.id);
      if (mine.length === 0) return n;
      const portIssues: Record<string, string> = {};
      for (const i of mine) {
        const port = i.port === undefined ? undefined : handleOf(i.port);
        if (port !== undefined && n.data.outputs.some((p) => p.name === port)) portIssues[port] = i.message;
      }
      return { ...n, data: { ...n.data, issues: mine.map((i) => i.message), portIssues } };
    });
  }, [nodes, issues]);

  const current = useCallback(() => toPolicy(meta, nodes, edges), [meta, nodes, edges]);

  const addNode = (plugin: PluginEntry) => {
    const rect = canvas.current?.getBoundingClientRect();
    let position =
      rect === undefined
        ? { x: 0, y: 0 }
        : flow.screenToFlowPosition({ x: rect.left + rect.width / 2 - 90, y: rect.top + rect.height / 3 });
    // Step down until the new node does not cover another one.
    const covers = (p: { x: number; y: number }) =>
      nodes.some((n) => Math.abs(n.position.x - p.x) < 200 && Math.abs(n.position.y - p.y) < 110);
    while (covers(position)) position = { x: position.x, y: position.y + 120 };
    const id = freeId(plugin.type, new Set(nodes.map((n) => n.id)));
    const node = { ...makeNode({ id, type: plugin.type }, plugin, position), selected: true };
    setNodes((ns) => [...ns.map((n) => (n.selected === true ? { ...n, selected: false } : n)), node]);
    setDirty(true);
  };

  const applyEdit = (id: string, edit: NodeEdit) => {
    setNodes((ns) =>
      ns.map((n) =>
        n.id === id ? { ...n, data: { ...n.data, config: edit.config, configRef: edit.configRef } } : n,
      ),
    );
    setDirty(true);
  };

  const rename = (from: string, to: string) => {
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
    setNodes((ns) => ns.map((n) => ({ ...n, position: positions.get(n.id) ?? n.position })));
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
      const etag = await put(itemPath('policies', name), policy, overwrite ? undefined : loaded.etag);
      setLoaded({ ...loaded, etag });
      setDirty(false);
      setIssues([]);
      setBanner({ kind: 'ok', text: `Saved '${name}'. It is live for the next request.` });
    } catch (err) {
      if (err instanceof ApiError && err.conflict) {
        setBanner({
          kind: 'conflict',
          text: `Policy '${name}' was changed by someone else since you opened it, so your version was not saved.`,
        });
      } else if (err instanceof ApiError && err.status === 400) {
        const problems = err.details.length > 0 ? err.details : [{ path: '', message: err.message }];
        setIssues(locate(problems, policy.nodes));
        setBanner({
          kind: 'error',
          text: `Not saved: the gateway refused the policy (${problems.length} problem(s), listed on the right). The running configuration is unchanged.`,
        });
      } else {
        setBanner({ kind: 'error', text: `Not saved: ${describe(err)}` });
      }
    } finally {
      setBusy(false);
    }
  };

  const saveRef = useRef(save);
  saveRef.current = save;
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === 's') {
        event.preventDefault();
        void saveRef.current();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const reload = () => {
    setBanner(undefined);
    load().catch((err: unknown) => setBanner({ kind: 'error', text: describe(err) }));
  };

  const selectNode = (id: string) => setNodes((ns) => ns.map((n) => ({ ...n, selected: n.id === id })));

  if (loadError !== undefined) {
    return (
      <section className="page">
        <div className="error-box" role="alert">
          Could not open policy '{name}': {loadError}
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
        <a href="#/policies">← Policies</a>
        <h1>{name}</h1>
        {loaded.etag === undefined && <span className="badge">new</span>}
        {dirty && <span className="badge warn">Unsaved changes</span>}
        <span className="spacer" />
        <Palette catalog={loaded.catalog} onAdd={addNode} />
        <button type="button" onClick={autoLayout}>
          Auto layout
        </button>
        <button type="button" onClick={() => void validate()} disabled={busy}>
          Validate
        </button>
        <button type="button" className="primary" onClick={() => void save()} disabled={busy}>
          Save
        </button>
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
        <div className="canvas" ref={canvas}>
          <ReactFlow<PolicyNode, PolicyEdge>
            nodes={shownNodes}
            edges={edges}
            nodeTypes={nodeTypes}
            onNodesChange={onNodesChange}
            onEdgesChange={onEdgesChange}
            onConnect={onConnect}
            isValidConnection={isValidConnection}
            deleteKeyCode={['Backspace', 'Delete']}
            minZoom={0.2}
            fitView
            fitViewOptions={{ padding: 0.2 }}
          >
            <Background />
            <Controls />
          </ReactFlow>
        </div>
        <aside className="side">
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
              takenIds={new Set(nodes.map((n) => n.id))}
              onApply={applyEdit}
              onRename={rename}
              onDelete={(id) => void flow.deleteElements({ nodes: [{ id }] })}
            />
          ) : (
            <PolicySettings
              key={loaded.generation}
              meta={meta}
              nodeIds={nodes.map((n) => n.id)}
              selectedCount={selected.length}
              onChange={(next) => {
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
