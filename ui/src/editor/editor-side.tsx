import { TracePanel } from '../traces/trace-panel.js';
import type { Trace } from '../traces/trace-types.js';
import { RawEditor } from './forms/raw-editor.js';
import { withoutName } from './graph-kind.js';
import { NodePanel } from './node-panel.js';
import { PolicySettings } from './policy-settings.js';
import type { GraphEdits } from './use-graph-edits.js';
import type { PolicyGraph } from './use-policy-graph.js';

interface Props {
  g: PolicyGraph;
  edits: GraphEdits;
  noun: string;
  readOnly: boolean;
  raw: boolean;
  rawVersion: number;
  trace: Trace | undefined;
  onDelete: (id: string) => void;
}

/** The side panel: text view, trace, problems and warnings, then the selected node or the policy's settings. */
export function EditorSide({ g, edits, noun, readOnly, raw, rawVersion, trace, onDelete }: Props) {
  const loaded = g.loaded;
  if (loaded === undefined) return null;
  const selected = g.nodes.filter((n) => n.selected === true);
  const single = selected.length === 1 ? selected[0] : undefined;
  return (
    <aside className="side">
      {raw && (
        <div className="panel" aria-label={`${noun} as text`}>
          <h2>{noun} as YAML / JSON</h2>
          <RawEditor
            key={`${loaded.generation}:${rawVersion}`}
            label={`${noun} definition`}
            value={withoutName(g.current())}
            readOnly={readOnly}
            applyLabel="Apply to graph"
            onApply={edits.applyRawGraph}
          />
        </div>
      )}
      {trace !== undefined && <TracePanel trace={trace} onSelect={edits.selectNode} />}
      {g.issues.length > 0 && (
        <div className="problems" aria-label="Problems">
          <h2>Problems</h2>
          <ul>
            {g.issues.map((issue, i) => (
              <li key={i}>
                {issue.node !== undefined && (
                  <button type="button" className="link" onClick={() => edits.selectNode(issue.node ?? '')}>
                    {issue.port === undefined ? issue.node : `${issue.node}.${issue.port}`}
                  </button>
                )}{' '}
                {issue.message}
              </li>
            ))}
          </ul>
        </div>
      )}
      {g.warnings.length > 0 && (
        <div className="warnings">
          <h2>Warnings</h2>
          <ul>
            {g.warnings.map((w) => (
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
          takenIds={new Set(g.nodes.map((n) => n.id))}
          nodes={g.nodes}
          edges={g.edges}
          onApply={edits.applyEdit}
          onRename={edits.rename}
          onWire={edits.wire}
          onDelete={onDelete}
        />
      ) : (
        <PolicySettings
          key={loaded.generation}
          supernode={g.kind !== 'policies'}
          meta={g.meta}
          nodeIds={g.nodes.map((n) => n.id)}
          selectedCount={selected.length}
          onChange={(next) => {
            g.history.record('meta');
            g.setMeta(next);
            g.setDirty(true);
          }}
        />
      )}
    </aside>
  );
}
