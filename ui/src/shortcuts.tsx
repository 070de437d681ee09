import { useEffect, useState } from 'react';

/** Every keyboard shortcut of the console, shown by `?`. */
export const SHORTCUTS: readonly (readonly [string, string])[] = [
  ['?', 'Show or hide this list'],
  ['Ctrl+S / ⌘S', 'Save the policy'],
  ['Ctrl+Z / ⌘Z', 'Undo the last graph or form edit'],
  ['Ctrl+Shift+Z / ⌘⇧Z, Ctrl+Y', 'Redo'],
  ['Delete / Backspace', 'Delete the selected nodes or edges (not while typing)'],
  ['/', 'Search the node palette'],
  ['Escape', 'Close this list or a dialog'],
];

const typing = (target: EventTarget | null): boolean =>
  target instanceof HTMLElement &&
  (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName));

/** The `?` overlay listing the shortcuts. */
export function ShortcutsHelp() {
  const [open, setOpen] = useState(false);
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key === '?' && !typing(event.target)) {
        event.preventDefault();
        setOpen((o) => !o);
      } else if (event.key === 'Escape') setOpen(false);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  if (!open) return null;
  return (
    <div className="overlay" role="dialog" aria-label="Keyboard shortcuts" aria-modal="true">
      <div className="dialog">
        <h2>Keyboard shortcuts</h2>
        <table className="list">
          <tbody>
            {SHORTCUTS.map(([keys, what]) => (
              <tr key={keys}>
                <td>
                  <kbd>{keys}</kbd>
                </td>
                <td>{what}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <button type="button" onClick={() => setOpen(false)}>
          Close
        </button>
      </div>
    </div>
  );
}

export { typing as isTyping };
