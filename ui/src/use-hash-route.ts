import { useEffect, useState } from 'react';
import { hasUnsaved, LEAVE } from './editing/unsaved.js';

/** The console's pages that list one kind of resource (`#/consumers`, `#/stores`, …). */
export const PAGES = [
  'routes',
  'policies',
  'consumers',
  'supernodes',
  'plugin-configs',
  'stores',
  'sessions',
  'certificates',
  'traces',
] as const;
export type Page = (typeof PAGES)[number];

/** Where the editor is: a page, or one policy's graph (`#/policies/<name>?trace=<id>`). */
export type View =
  | { kind: Page }
  | { kind: 'policy'; name: string; trace?: string }
  | { kind: 'supernode'; name: string }
  | { kind: 'not-found'; hash: string };

export function parseHash(hash: string): View {
  const [route = '', query = ''] = hash.replace(/^#\/?/, '').split('?');
  const parts = route.split('/');
  if (parts[0] === 'policies') {
    const name = parts.slice(1).join('/');
    if (name === '') return { kind: 'policies' };
    const trace = new URLSearchParams(query).get('trace');
    return { kind: 'policy', name: decodeURIComponent(name), ...(trace === null ? {} : { trace }) };
  }
  if (parts[0] === 'supernodes' && parts.length > 1 && parts.slice(1).join('/') !== '')
    return { kind: 'supernode', name: decodeURIComponent(parts.slice(1).join('/')) };
  // An empty hash opens Routes; anything else unknown says so instead of silently showing Routes (F32).
  if (route === '') return { kind: 'routes' };
  const page = parts.length === 1 ? PAGES.find((p) => p === parts[0]) : undefined;
  return page === undefined ? { kind: 'not-found', hash } : { kind: page };
}

export const supernodeHref = (name: string): string => `#/supernodes/${encodeURIComponent(name)}`;

export const policyHref = (name: string, trace?: string): string =>
  `#/policies/${encodeURIComponent(name)}${trace === undefined ? '' : `?trace=${encodeURIComponent(trace)}`}`;

/** The view named by the location hash, following back/forward and link clicks. */
export function useHashRoute(): View {
  const [view, setView] = useState(() => parseHash(window.location.hash));
  useEffect(() => {
    let current = window.location.hash;
    const onChange = () => {
      if (window.location.hash === current) return;
      if (hasUnsaved() && !window.confirm(LEAVE)) {
        window.location.hash = current; // Stay: the next hashchange matches `current` and is ignored.
        return;
      }
      current = window.location.hash;
      setView(parseHash(current));
    };
    const beforeUnload = (event: BeforeUnloadEvent) => {
      if (hasUnsaved()) event.preventDefault();
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
