import {
  Background,
  Controls,
  MiniMap,
  ReactFlow,
  useNodesInitialized,
  useReactFlow,
  type NodeTypes,
} from '@xyflow/react';
import { useEffect, useRef, useState, type DragEvent, type RefObject } from 'react';
import type { PolicyEdge, PolicyNode } from './graph.js';
import { FIT_PADDING, fitZoom, READABLE_ZOOM } from './layout.js';
import { DRAG_TYPE, type PaletteItem } from './palette.js';
import { PluginNodeView } from './plugin-node.js';
import type { GraphEdits } from './use-graph-edits.js';
import type { PolicyGraph } from './use-policy-graph.js';

const nodeTypes: NodeTypes = { plugin: PluginNodeView };

/**
 * Opens the graph at a readable zoom: the whole graph when it fits at
 * READABLE_ZOOM or more (never above 1), else its top-left corner (where the
 * listener is) at READABLE_ZOOM, the minimap showing the rest (F11).
 */
function useReadableOpen(generation: number, canvas: RefObject<HTMLDivElement | null>): boolean {
  const flow = useReactFlow<PolicyNode, PolicyEdge>();
  const initialized = useNodesInitialized();
  const opened = useRef<number | undefined>(undefined);
  const [ready, setReady] = useState(false);
  useEffect(() => {
    if (!initialized || opened.current === generation) return;
    const rect = canvas.current?.getBoundingClientRect();
    if (rect === undefined || rect.width === 0) return;
    opened.current = generation;
    const bounds = flow.getNodesBounds(flow.getNodes());
    const margin = 24;
    const shown =
      fitZoom(bounds.width, bounds.height, rect) >= READABLE_ZOOM
        ? flow.fitView({ padding: FIT_PADDING, maxZoom: 1 })
        : flow.setViewport({
            x: margin - bounds.x * READABLE_ZOOM,
            y: margin - bounds.y * READABLE_ZOOM,
            zoom: READABLE_ZOOM,
          });
    void Promise.resolve(shown).then(() => setReady(true));
  }, [initialized, generation, canvas, flow]);
  return ready;
}

interface Props {
  g: PolicyGraph;
  edits: GraphEdits;
  nodes: PolicyNode[];
  edges: PolicyEdge[];
  readOnly: boolean;
  canvas: RefObject<HTMLDivElement | null>;
}

/** The editable graph: React Flow with the plugin nodes, a minimap, zoom controls and palette drops. */
export function EditorCanvas({ g, edits, nodes, edges, readOnly, canvas }: Props) {
  const ready = useReadableOpen(g.loaded?.generation ?? 0, canvas);

  const onDrop = (event: DragEvent) => {
    const raw = event.dataTransfer.getData(DRAG_TYPE);
    if (raw === '' || readOnly) return;
    event.preventDefault();
    edits.addItem(JSON.parse(raw) as PaletteItem, { x: event.clientX, y: event.clientY });
  };

  return (
    <div
      className="canvas"
      ref={canvas}
      data-view={ready ? 'ready' : 'opening'}
      onDragOver={(e) => {
        if (e.dataTransfer.types.includes(DRAG_TYPE)) {
          e.preventDefault();
          e.dataTransfer.dropEffect = 'copy';
        }
      }}
      onDrop={onDrop}
    >
      <ReactFlow<PolicyNode, PolicyEdge>
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        onNodesChange={g.onNodesChange}
        onEdgesChange={g.onEdgesChange}
        onConnect={edits.onConnect}
        isValidConnection={edits.isValidConnection}
        nodesDraggable={!readOnly}
        nodesConnectable={!readOnly}
        deleteKeyCode={readOnly ? null : ['Backspace', 'Delete']}
        minZoom={0.2}
      >
        <Background />
        <Controls />
        <MiniMap
          className="editor-minimap"
          ariaLabel="Minimap: the whole graph, the visible part framed"
          pannable
          zoomable
          nodeStrokeWidth={3}
          nodeClassName={(n) => {
            const data = (n as PolicyNode).data;
            return data.issues.length > 0 ? 'mini-issue' : data.traced !== undefined ? 'mini-traced' : '';
          }}
        />
      </ReactFlow>
    </div>
  );
}
