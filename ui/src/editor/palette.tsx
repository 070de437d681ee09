import { useEffect, useMemo, useRef, useState, type DragEvent, type ReactNode } from 'react';
import { isTyping } from '../shortcuts.js';
import type { PluginEntry } from '../types.js';

/** What the palette adds: a plugin node, a supernode instance, or a node using a shared config. */
export type PaletteItem =
  | { kind: 'plugin'; type: string }
  | { kind: 'supernode'; name: string }
  | { kind: 'shared'; name: string; type: string };

export const DRAG_TYPE = 'application/x-switchyard-node';

export interface SharedConfig {
  name: string;
  type: string;
  description?: string;
}

interface Props {
  catalog: ReadonlyMap<string, PluginEntry>;
  supernodes: readonly { name: string; description?: string }[];
  shared: readonly SharedConfig[];
  onAdd: (item: PaletteItem) => void;
}

const matches = (q: string, ...texts: (string | undefined)[]): boolean =>
  q === '' || texts.some((t) => t !== undefined && t.toLowerCase().includes(q));

/**
 * Every node type by family (the registry's categories), searchable by name
 * and description; click an entry to add it to the view, or drag it onto the
 * canvas. Supernodes and shared configs are families of their own.
 */
export function Palette({ catalog, supernodes, shared, onAdd }: Props) {
  const [query, setQuery] = useState('');
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const search = useRef<HTMLInputElement>(null);
  const q = query.trim().toLowerCase();

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key === '/' && !isTyping(event.target)) {
        event.preventDefault();
        search.current?.focus();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const families = useMemo(() => {
    const groups = new Map<string, PluginEntry[]>();
    for (const p of [...catalog.values()].sort((a, b) => a.type.localeCompare(b.type))) {
      if (!matches(q, p.type, p.description, p.category)) continue;
      groups.set(p.category, [...(groups.get(p.category) ?? []), p]);
    }
    return [...groups.entries()].sort(([a], [b]) => a.localeCompare(b));
  }, [catalog, q]);
  const supers = supernodes.filter((s) => matches(q, s.name, s.description, 'supernode'));
  const shares = shared.filter((s) => matches(q, s.name, s.type, s.description));
  const all = [...families.map(([f]) => f), 'supernodes', 'shared configs'];

  const toggle = (family: string) =>
    setOpen((prev) => {
      const next = new Set(prev);
      if (next.has(family)) next.delete(family);
      else next.add(family);
      return next;
    });
  // While searching, every family with a match is open.
  const isOpen = (family: string) => q !== '' || open.has(family);

  const entry = (key: string, label: string, detail: string, item: PaletteItem) => (
    <li key={key}>
      <button
        type="button"
        className="palette-item"
        draggable
        aria-label={`Add ${label}`}
        title={detail}
        data-palette-item={key}
        onClick={() => onAdd(item)}
        onDragStart={(e: DragEvent) => {
          e.dataTransfer.setData(DRAG_TYPE, JSON.stringify(item));
          e.dataTransfer.effectAllowed = 'copy';
        }}
      >
        <span className="palette-name">{label}</span>
        <span className="palette-desc">{detail}</span>
      </button>
    </li>
  );

  const family = (name: string, count: number, items: ReactNode) => (
    <div key={name} className="palette-family" data-family={name}>
      <button
        type="button"
        className="palette-head"
        aria-expanded={isOpen(name)}
        onClick={() => toggle(name)}
      >
        {isOpen(name) ? '▾' : '▸'} {name} <span className="muted">({count})</span>
      </button>
      {isOpen(name) && <ul aria-label={name}>{items}</ul>}
    </div>
  );

  return (
    <aside className="palette" aria-label="Node palette">
      <input
        ref={search}
        type="search"
        aria-label="Search nodes"
        placeholder="Search nodes (/)"
        value={query}
        onChange={(e) => setQuery(e.target.value)}
      />
      <div className="palette-tools">
        <button type="button" className="small" onClick={() => setOpen(new Set(all))}>
          Expand all
        </button>
        <button type="button" className="small" onClick={() => setOpen(new Set())}>
          Collapse all
        </button>
      </div>
      <div className="palette-list">
        {families.map(([name, plugins]) =>
          family(
            name,
            plugins.length,
            plugins.map((p) => entry(p.type, p.type, p.description, { kind: 'plugin', type: p.type })),
          ),
        )}
        {(q === '' || supers.length > 0) &&
          family(
            'supernodes',
            supers.length,
            supers.map((s) =>
              entry(`supernode:${s.name}`, s.name, s.description ?? 'supernode instance', {
                kind: 'supernode',
                name: s.name,
              }),
            ),
          )}
        {(q === '' || shares.length > 0) &&
          family(
            'shared configs',
            shares.length,
            shares.map((s) =>
              entry(`shared:${s.name}`, s.name, `${s.type} with config_ref ${s.name}`, {
                kind: 'shared',
                name: s.name,
                type: s.type,
              }),
            ),
          )}
        {families.length === 0 && supers.length === 0 && shares.length === 0 && (
          <p className="muted">No node matches “{query}”.</p>
        )}
      </div>
    </aside>
  );
}
