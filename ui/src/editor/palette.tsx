import { useState } from 'react';
import type { PluginEntry } from '../types.js';

/** Pick a plugin type (grouped by category) and add a node of it to the canvas. */
export function Palette({
  catalog,
  onAdd,
}: {
  catalog: ReadonlyMap<string, PluginEntry>;
  onAdd: (plugin: PluginEntry) => void;
}) {
  const [type, setType] = useState('');
  const groups = new Map<string, PluginEntry[]>();
  for (const p of [...catalog.values()].sort((a, b) => a.type.localeCompare(b.type))) {
    groups.set(p.category, [...(groups.get(p.category) ?? []), p]);
  }
  const chosen = catalog.get(type);
  return (
    <div className="palette">
      <select aria-label="Plugin type" value={type} onChange={(e) => setType(e.target.value)}>
        <option value="">Plugin type…</option>
        {[...groups.entries()]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([category, plugins]) => (
            <optgroup key={category} label={category}>
              {plugins.map((p) => (
                <option key={p.type} value={p.type} title={p.description}>
                  {p.type}
                </option>
              ))}
            </optgroup>
          ))}
      </select>
      <button
        type="button"
        disabled={chosen === undefined}
        title={chosen?.description ?? 'Choose a plugin type first'}
        onClick={() => chosen !== undefined && onAdd(chosen)}
      >
        Add node
      </button>
    </div>
  );
}
