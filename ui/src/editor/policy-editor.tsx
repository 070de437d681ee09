import { ReactFlowProvider, useReactFlow } from '@xyflow/react';
import { useCallback, useRef, useState } from 'react';
import { useEditorKeys } from '../editing/history.js';
import { useReadOnly } from '../session/role.js';
import { ConfigHistory } from './config-history.js';
import { EditorCanvas } from './editor-canvas.js';
import { EditorSide } from './editor-side.js';
import { EditorToolbar } from './editor-toolbar.js';
import type { PolicyEdge, PolicyNode } from './graph.js';
import type { GraphKind } from './graph-kind.js';
import { Palette } from './palette.js';
import { areaOf, useGraphEdits } from './use-graph-edits.js';
import { useOverlays } from './use-overlays.js';
import { usePolicyGraph } from './use-policy-graph.js';
import { usePublish } from './use-publish.js';
import './editor.css';

export type { GraphKind } from './graph-kind.js';

/**
 * The graph editor of a policy or a supernode's definition (docs/editor.md):
 * palette, canvas and side panel, with the History view in place of the
 * canvas while it is open.
 */
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
  const noun = kind === 'policies' ? 'Policy' : 'Supernode';
  const readOnly = useReadOnly();
  const flow = useReactFlow<PolicyNode, PolicyEdge>();
  const canvas = useRef<HTMLDivElement>(null);
  const area = useCallback(() => areaOf(canvas.current), []);
  const g = usePolicyGraph(name, kind, area);
  const publish = usePublish(g, noun);
  const [raw, setRaw] = useState(false);
  const [rawVersion, setRawVersion] = useState(0);
  const [historyOpen, setHistoryOpen] = useState(false);
  const edits = useGraphEdits(g, canvas, () => setRawVersion((v) => v + 1));
  const overlays = useOverlays(name, traceId, g.nodes, g.edges, g.issues, (text) =>
    publish.setBanner({ kind: 'error', text }),
  );
  // The diff gets the canvas's size, read as History opens (the canvas then makes way for it).
  const [historyArea, setHistoryArea] = useState(() => areaOf(null));

  useEditorKeys({
    save: () => void publish.save(),
    undo: g.history.undo,
    redo: g.history.redo,
    enabled: !readOnly,
  });

  if (g.loadError !== undefined) {
    return (
      <section className="page">
        <div className="error-box" role="alert">
          Could not open {noun.toLowerCase()} '{name}': {g.loadError}
        </div>
      </section>
    );
  }
  const loaded = g.loaded;
  if (loaded === undefined) return <p className="page muted">Loading…</p>;

  return (
    <section className="editor">
      <EditorToolbar
        g={g}
        publish={publish}
        readOnly={readOnly}
        figures={overlays.figures}
        raw={raw}
        historyOpen={historyOpen}
        onAutoLayout={edits.autoLayout}
        onToggleMetrics={() => void overlays.toggleMetrics()}
        onToggleRaw={() => {
          setRawVersion((v) => v + 1);
          setRaw(!raw);
        }}
        onToggleHistory={() => {
          if (!historyOpen) setHistoryArea(areaOf(canvas.current));
          setHistoryOpen(!historyOpen);
        }}
      />
      <div className="editor-body">
        {!readOnly && !historyOpen && (
          <Palette
            catalog={loaded.catalog}
            supernodes={[...loaded.supernodes.values()]}
            shared={loaded.shared}
            onAdd={(item) => edits.addItem(item)}
          />
        )}
        {historyOpen ? (
          <ConfigHistory name={name} kind={kind} current={g.current} area={historyArea} />
        ) : (
          <>
            <EditorCanvas
              g={g}
              edits={edits}
              nodes={overlays.shownNodes}
              edges={overlays.shownEdges}
              readOnly={readOnly}
              canvas={canvas}
            />
            <EditorSide
              g={g}
              edits={edits}
              noun={noun}
              readOnly={readOnly}
              raw={raw}
              rawVersion={rawVersion}
              trace={overlays.trace}
              onDelete={(id) => void flow.deleteElements({ nodes: [{ id }] })}
            />
          </>
        )}
      </div>
    </section>
  );
}
