import { useEffect, useState } from 'react';
import { describe, getJson } from './api.js';
import { PolicyEditor } from './editor/policy-editor.js';
import { PoliciesView } from './policies-view.js';
import { CertificatesView } from './resources/certificates-view.js';
import { ConsumersView } from './resources/consumers-view.js';
import { NamedResourceView } from './resources/named-resource-view.js';
import { SessionsView } from './resources/sessions-view.js';
import { RoutesView } from './routes-view.js';
import { RoleContext, type Whoami } from './session/role.js';
import { useTheme } from './session/theme.js';
import { ShortcutsHelp } from './shortcuts.js';
import { TracesView } from './traces/traces-view.js';
import type { Status } from './types.js';
import { useHashRoute, type Page } from './use-hash-route.js';

const NAV: readonly (readonly [Page, string])[] = [
  ['routes', 'Routes'],
  ['policies', 'Policies'],
  ['supernodes', 'Supernodes'],
  ['plugin-configs', 'Shared configs'],
  ['consumers', 'Consumers'],
  ['stores', 'Stores'],
  ['sessions', 'Sessions'],
  ['certificates', 'Certificates'],
  ['traces', 'Traces'],
];

/** An unknown `#/…` location: says so and links to the pages that exist. */
function NotFound({ hash }: { hash: string }) {
  const wanted = hash.replace(/^#\/?/, '');
  return (
    <section className="page" aria-labelledby="not-found-title">
      <h1 id="not-found-title">Page not found</h1>
      <p>
        There is no page <code>#/{wanted}</code>. The console has these pages:
      </p>
      <ul>
        {NAV.map(([page, label]) => (
          <li key={page}>
            <a href={`#/${page}`}>{label}</a>
          </li>
        ))}
      </ul>
    </section>
  );
}

export function App() {
  const view = useHashRoute();
  const [status, setStatus] = useState<Status | undefined>();
  const [who, setWho] = useState<Whoami | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [theme, setTheme] = useTheme();

  useEffect(() => {
    getJson<Status>('/api/status').then(setStatus, (err: unknown) => setError(describe(err)));
    getJson<Whoami>('/api/whoami').then(setWho, (err: unknown) => setError(describe(err)));
  }, []);

  const active = view.kind === 'policy' ? 'policies' : view.kind === 'supernode' ? 'supernodes' : view.kind;
  return (
    <RoleContext.Provider value={who}>
      <div className="app">
        <header className="topbar">
          <strong className="brand">Switchyard</strong>
          <nav aria-label="Sections">
            {NAV.map(([page, label]) => (
              <a
                key={page}
                href={`#/${page}`}
                className={active === page ? 'active' : ''}
                aria-current={active === page ? 'page' : undefined}
              >
                {label}
              </a>
            ))}
          </nav>
          <span className="muted status-line">
            {status === undefined
              ? (error ?? '')
              : `v${status.version} · config ${status.config_source}${status.persist ? '' : ' (not persisted)'}`}
          </span>
          {who?.role === 'viewer' && (
            <span
              className="badge readonly"
              title={`Signed in as ${who.username} (viewer): nothing can be changed`}
            >
              read-only
            </span>
          )}
          <button
            type="button"
            className="theme-toggle"
            aria-label="Dark theme"
            aria-pressed={theme === 'dark'}
            onClick={() => setTheme(theme === 'dark' ? 'light' : 'dark')}
          >
            {theme === 'dark' ? '☾ Dark' : '☀ Light'}
          </button>
        </header>
        <main>
          {view.kind === 'routes' && <RoutesView />}
          {view.kind === 'policies' && <PoliciesView />}
          {view.kind === 'policy' && (
            <PolicyEditor
              key={view.name}
              name={view.name}
              {...(view.trace === undefined ? {} : { trace: view.trace })}
            />
          )}
          {view.kind === 'supernode' && (
            <PolicyEditor key={`s:${view.name}`} name={view.name} kind="supernodes" />
          )}
          {view.kind === 'consumers' && <ConsumersView />}
          {view.kind === 'supernodes' && <NamedResourceView key="supernodes" kind="supernodes" />}
          {view.kind === 'plugin-configs' && <NamedResourceView key="plugin-configs" kind="plugin-configs" />}
          {view.kind === 'stores' && <NamedResourceView key="stores" kind="stores" />}
          {view.kind === 'sessions' && <SessionsView />}
          {view.kind === 'certificates' && <CertificatesView />}
          {view.kind === 'traces' && <TracesView />}
          {view.kind === 'not-found' && <NotFound hash={view.hash} />}
        </main>
        <ShortcutsHelp />
      </div>
    </RoleContext.Provider>
  );
}
