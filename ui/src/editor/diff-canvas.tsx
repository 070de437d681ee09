import {
  Background,
  Controls,
  Handle,
  MiniMap,
  Position,
  ReactFlow,
  ReactFlowProvider,
  type Edge,
  type Node,
  type NodeProps,
  type NodeTypes,
} from '@xyflow/react';
import { useMemo } from 'react';
import type { Change, GraphDiff, NodeDiff } from './graph-diff.js';
import { estimateSize, FIT_PADDING, wrappedLayout, type Area } from './layout.js';

type DiffNode = Node<NodeDiff & { hasInput: boolean } & Record<string, unknown>, 'diff'>;

const LABEL: Record<Change, string> = { added: 'added', removed: 'removed', changed: 'changed', same: '' };

/** A node of the diff: coloured by its change, which is also written out (colour is not the only cue). */
function DiffNodeView({ data }: NodeProps<DiffNode>) {
  return (
    <div className={`pnode diff-node diff-${data.change}`} data-node-id={data.id} data-change={data.change}>
      {data.hasInput && <Handle type="target" position={Position.Left} id="in" isConnectable={false} />}
      <div className="pnode-head">
        <span className="pnode-id">{data.id}</span>
        <span className="pnode-type">{data.type}</span>
        {data.change !== 'same' && <span className="diff-badge">{LABEL[data.change]}</span>}
      </div>
      <div className="pnode-ports">
        {data.ports.map((port) => (
          <div key={port} className="pnode-port">
            <span className="port-label">{port}</span>
            <Handle type="source" position={Position.Right} id={port} isConnectable={false} />
          </div>
        ))}
      </div>
      {data.fields.length > 0 && <div className="diff-fields">{data.fields.join(', ')}</div>}
    </div>
  );
}

const nodeTypes: NodeTypes = { diff: DiffNodeView };

const split = (endpoint: string): [string, string] => {
  const dot = endpoint.lastIndexOf('.');
  return dot === -1 ? [endpoint, ''] : [endpoint.slice(0, dot), endpoint.slice(dot + 1)];
};

/** Both versions in one graph, laid out like the editor's, added green, removed red, changed amber. */
function DiffFlow({ diff, area }: { diff: GraphDiff; area: Area }) {
  const { nodes, edges } = useMemo(() => {
    const boxes = diff.nodes.map((n) => ({
      id: n.id,
      ...estimateSize(n.id, n.type, Math.max(1, n.ports.length)),
      height: estimateSize(n.id, n.type, Math.max(1, n.ports.length)).height + (n.fields.length > 0 ? 30 : 0),
    }));
    const links = diff.edges.map((e) => [split(e.from)[0], split(e.to)[0]] as const);
    const positions = wrappedLayout(boxes, links, area);
    const nodes: DiffNode[] = diff.nodes.map((n) => ({
      id: n.id,
      type: 'diff',
      position: positions.get(n.id) ?? { x: 0, y: 0 },
      data: { ...n, hasInput: diff.edges.some((e) => split(e.to)[0] === n.id) },
      ariaLabel: `${n.id} (${n.type})${n.change === 'same' ? '' : `, ${n.change}`}`,
    }));
    const edges: Edge[] = diff.edges.map((e) => {
      const [source, port] = split(e.from);
      const target = split(e.to)[0];
      return {
        id: `${e.from}->${e.to}`,
        source,
        sourceHandle: port,
        target,
        targetHandle: 'in',
        className: `diff-${e.change}`,
        ariaLabel: `${e.from} → ${e.to}${e.change === 'same' ? '' : ` (${e.change})`}`,
      };
    });
    return { nodes, edges };
  }, [diff, area]);
  return (
    <ReactFlow
      nodes={nodes}
      edges={edges}
      nodeTypes={nodeTypes}
      nodesDraggable={false}
      nodesConnectable={false}
      elementsSelectable={false}
      minZoom={0.2}
      fitView
      fitViewOptions={{ padding: FIT_PADDING, maxZoom: 1 }}
    >
      <Background />
      <Controls showInteractive={false} />
      <MiniMap
        className="editor-minimap"
        ariaLabel="Minimap of the graph diff"
        nodeClassName={(n) => `mini-${String(n.data.change)}`}
      />
    </ReactFlow>
  );
}

/** The diff canvas, in its own React Flow (the editor's graph keeps its own state meanwhile). */
export function DiffCanvas({ diff, area, id }: { diff: GraphDiff | undefined; area: Area; id: string }) {
  return (
    <div className="canvas diff-canvas" aria-label="Graph diff">
      {diff === undefined ? (
        <p className="muted diff-empty">Choose two versions to compare.</p>
      ) : (
        // A new pair of versions is a new graph: mounted afresh, so it is fitted to the view again.
        <ReactFlowProvider key={id}>
          <DiffFlow diff={diff} area={area} />
        </ReactFlowProvider>
      )}
    </div>
  );
}
