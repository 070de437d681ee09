import { useReadOnly } from '../session/role.js';
import type { PolicyMeta } from './graph.js';

interface Props {
  meta: PolicyMeta;
  nodeIds: string[];
  selectedCount: number;
  onChange: (meta: PolicyMeta) => void;
  /** A supernode has a description, no error handler of its own. */
  supernode?: boolean;
}

/** Shown when no single node is selected: the policy's own fields and how to use the canvas. */
export function PolicySettings({ meta, nodeIds, selectedCount, onChange, supernode = false }: Props) {
  const readOnly = useReadOnly();
  return (
    <div className="policy-settings">
      <h2>{supernode ? 'Supernode' : 'Policy'}</h2>
      <fieldset className="plain" disabled={readOnly}>
        <label>
          Description
          <input
            aria-label={supernode ? 'Supernode description' : 'Policy description'}
            value={meta.description ?? ''}
            onChange={(e) => {
              const { description: _old, ...rest } = meta;
              onChange(e.target.value === '' ? rest : { ...rest, description: e.target.value });
            }}
          />
        </label>
        {!supernode && (
          <label>
            Error handler
            <select
              aria-label="Error handler"
              value={meta.error_handler ?? ''}
              onChange={(e) => {
                const { error_handler: _old, ...rest } = meta;
                onChange(e.target.value === '' ? rest : { ...rest, error_handler: e.target.value });
              }}
            >
              <option value="">none (generic 500)</option>
              {nodeIds.map((id) => (
                <option key={id} value={id}>
                  {id}
                </option>
              ))}
            </select>
          </label>
        )}
      </fieldset>
      {selectedCount > 1 && <p className="muted">{selectedCount} nodes selected.</p>}
      <h2>How to edit</h2>
      <ul className="help">
        <li>Click a node to edit its id and config; drag it to move it.</li>
        <li>Drag from an output port (right) to a node&apos;s input (left) to connect them.</li>
        <li>Click an edge or node, then press Delete or Backspace to remove it.</li>
        <li>Shift-drag selects several; scroll zooms; drag the background to pan.</li>
        <li>Validate asks the gateway without changing anything; Save (Ctrl+S) makes it live.</li>
        <li>Ctrl+Z undoes, Ctrl+Shift+Z redoes; press ? for every shortcut.</li>
      </ul>
    </div>
  );
}
