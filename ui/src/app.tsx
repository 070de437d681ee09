import { useEffect, useState } from 'react';
import { describe, getJson } from './api.js';
import { PolicyEditor } from './editor/policy-editor.js';
import { PoliciesView } from './policies-view.js';
import { RoutesView } from './routes-view.js';
import type { Status } from './types.js';
import { useHashRoute } from './use-hash-route.js';

export function App() {
  const view = useHashRoute();
  const [status, setStatus] = useState<Status | undefined>();
  const [error, setError] = useState<string | undefined>();

  useEffect(() => {
    getJson<Status>('/api/status').then(setStatus, (err: unknown) => setError(describe(err)));
  }, []);

  return (
    <div className="app">
      <header className="topbar">
        <strong className="brand">Switchyard</strong>
        <nav>
          <a href="#/routes" className={view.kind === 'routes' ? 'active' : ''}>
            Routes
          </a>
          <a href="#/policies" className={view.kind === 'routes' ? '' : 'active'}>
            Policies
          </a>
        </nav>
        <span className="muted">
          {status === undefined
            ? (error ?? '')
            : `v${status.version} · config ${status.config_source}${status.persist ? '' : ' (not persisted)'}`}
        </span>
      </header>
      <main>
        {view.kind === 'routes' && <RoutesView />}
        {view.kind === 'policies' && <PoliciesView />}
        {view.kind === 'policy' && <PolicyEditor key={view.name} name={view.name} />}
      </main>
    </div>
  );
}
