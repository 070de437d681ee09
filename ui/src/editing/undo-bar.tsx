import type { History } from './history.js';

/** Undo / Redo buttons and the unsaved badge, as every editor shows them. */
export function UndoBar({
  history,
  dirty,
  readOnly,
}: {
  history: History;
  dirty: boolean;
  readOnly: boolean;
}) {
  if (readOnly) return null;
  return (
    <span className="undo-bar">
      {dirty && <span className="badge warn">Unsaved changes</span>}
      <button type="button" onClick={history.undo} disabled={!history.canUndo} title="Ctrl+Z">
        Undo
      </button>
      <button type="button" onClick={history.redo} disabled={!history.canRedo} title="Ctrl+Shift+Z">
        Redo
      </button>
    </span>
  );
}
