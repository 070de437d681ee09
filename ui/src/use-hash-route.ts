import { useEffect, useState } from 'react';

/** Where the editor is: `#/routes`, `#/policies` or `#/policies/<name>`. */
export type View = { kind: 'routes' } | { kind: 'policies' } | { kind: 'policy'; name: string };

export function parseHash(hash: string): View {
  const parts = hash.replace(/^#\/?/, '').split('/');
  if (parts[0] === 'policies') {
    const name = parts.slice(1).join('/');
    return name === '' ? { kind: 'policies' } : { kind: 'policy', name: decodeURIComponent(name) };
  }
  return { kind: 'routes' };
}

export const policyHref = (name: string): string => `#/policies/${encodeURIComponent(name)}`;

let unsaved: (() => boolean) | undefined;

/** While `check` answers true, leaving the view (link, back button, tab close) asks first. */
export function setUnsavedCheck(check: (() => boolean) | undefined): void {
  unsaved = check;
}

const LEAVE = 'The policy has unsaved changes. Leave and discard them?';

/** The view named by the location hash, following back/forward and link clicks. */
export function useHashRoute(): View {
  const [view, setView] = useState(() => parseHash(window.location.hash));
  useEffect(() => {
    let current = window.location.hash;
    const onChange = () => {
      if (window.location.hash === current) return;
      if (unsaved?.() === true && !window.confirm(LEAVE)) {
        window.location.hash = current; // Stay: the next hashchange matches `current` and is ignored.
        return;
      }
      current = window.location.hash;
      setView(parseHash(current));
    };
    const beforeUnload = (event: BeforeUnloadEvent) => {
      if (unsaved?.() === true) event.preventDefault();
    };
    window.addEventListener('hashchange', onChange);
    window.addEventListener('beforeunload', beforeUnload);
    return () => {
      window.removeEventListener('hashchange', onChange);
      window.removeEventListener('beforeunload', beforeUnload);
    };
  }, []);
  return view;
}
