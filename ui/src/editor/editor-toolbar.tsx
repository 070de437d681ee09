import { UndoBar } from '../editing/undo-bar.js';
import type { Figures } from './use-overlays.js';
import type { GraphKind } from './graph-kind.js';
import { METRICS_WINDOW } from './metrics.js';
import type { PolicyGraph } from './use-policy-graph.js';
import type { Publish } from './use-publish.js';

interface Props {
  g: PolicyGraph;
  publish: Publish;
  readOnly: boolean;
  figures: Figures | undefined;
  raw: boolean;
  historyOpen: boolean;
  onAutoLayout: () => void;
  onToggleMetrics: () => void;
  onToggleRaw: () => void;
  onToggleHistory: () => void;
}

const back = (kind: GraphKind) => (kind === 'policies' ? '← Policies' : '← Supernodes');

/** The editor's title and actions; toggles show their state with aria-pressed. */
export function EditorToolbar(props: Props) {
  const { g, publish, readOnly, figures, raw, historyOpen } = props;
  const isPolicy = g.kind === 'policies';
  return (
    <>
      <div className="toolbar editor-toolbar">
        <a href={`#/${g.kind}`}>{back(g.kind)}</a>
        <h1>{g.name}</h1>
        {g.loaded?.etag === undefined && <span className="badge">new</span>}
        {readOnly && <span className="badge readonly">read-only</span>}
        <span className="spacer" />
        <UndoBar history={g.history} dirty={g.dirty} readOnly={readOnly} />
        {!readOnly && !historyOpen && (
          <button type="button" onClick={props.onAutoLayout}>
            Auto layout
          </button>
        )}
        {isPolicy && (
          <button
            type="button"
            className="toggle"
            aria-pressed={figures !== undefined}
            onClick={props.onToggleMetrics}
          >
            Metrics
          </button>
        )}
        <button type="button" className="toggle" aria-pressed={raw} onClick={props.onToggleRaw}>
          YAML / JSON
        </button>
        <button type="button" className="toggle" aria-pressed={historyOpen} onClick={props.onToggleHistory}>
          History
        </button>
        {!readOnly && (
          <>
            {isPolicy && (
              <button type="button" onClick={() => void publish.validate()} disabled={publish.busy}>
                Validate
              </button>
            )}
            <button
              type="button"
              className="primary"
              onClick={() => void publish.save()}
              disabled={publish.busy}
            >
              Save
            </button>
          </>
        )}
      </div>
      {figures !== undefined && (
        <div className="metrics-window" role="note" aria-label="Metrics window">
          Metrics: runs, errors, mean and p50/p99 {METRICS_WINDOW}; read at{' '}
          {figures.readAt.toLocaleTimeString()}. Press Metrics again to hide them.
        </div>
      )}
      {publish.banner !== undefined && (
        <div className={`banner ${publish.banner.kind}`} role="status">
          <span>{publish.banner.text}</span>
          {publish.banner.kind === 'conflict' && (
            <>
              <button type="button" onClick={publish.reload}>
                Load their version (discard mine)
              </button>
              <button type="button" className="danger" onClick={() => void publish.save(true)}>
                Overwrite with mine
              </button>
            </>
          )}
          <button
            type="button"
            className="close"
            aria-label="Dismiss"
            onClick={() => publish.setBanner(undefined)}
          >
            ×
          </button>
        </div>
      )}
    </>
  );
}
