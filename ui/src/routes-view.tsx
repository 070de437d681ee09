import { useCallback, useEffect, useState } from 'react';
import { ApiError, describe, getJson, getVersioned, itemPath, postJson, put, remove } from './api.js';
import { ErrorBox } from './error-box.js';
import { RouteForm } from './route-form.js';
import { useReadOnly } from './session/role.js';
import type { Issue, PolicyConfig, RouteConfig } from './types.js';
import { policyHref } from './use-hash-route.js';

type Editing = { mode: 'create' } | { mode: 'edit'; route: RouteConfig; etag: string | undefined };

interface Failure {
  message: string;
  details: Issue[];
}

const failure = (err: unknown): Failure => ({
  message: err instanceof ApiError && err.conflict ? conflictText : describe(err),
  details: err instanceof ApiError ? err.details : [],
});

const conflictText =
  'This route was changed by someone else since you opened it. Close the form and open it again to edit the current version.';

/** The match conditions in one line: `GET,POST /orders/* host=a.example`. */
export function matchSummary(route: RouteConfig): string {
  const m = route.match;
  const parts = [m.methods?.join(',') ?? '', m.path ?? '*'];
  const hosts = m.hosts ?? (typeof m.host === 'string' ? [m.host] : []);
  if (hosts.length > 0) parts.push(`host=${hosts.join(',')}`);
  for (const [k, v] of Object.entries(m.headers ?? {})) parts.push(`${k}: ${v}`);
  return parts.filter((p) => p !== '').join(' ');
}

export function RoutesView() {
  const readOnly = useReadOnly();
  const [dragged, setDragged] = useState<string | undefined>();
  const [routes, setRoutes] = useState<RouteConfig[] | undefined>();
  const [policies, setPolicies] = useState<string[]>([]);
  const [editing, setEditing] = useState<Editing | undefined>();
  const [error, setError] = useState<Failure | undefined>();
  const [notice, setNotice] = useState<string | undefined>();

  const load = useCallback(async () => {
    const [list, pols] = await Promise.all([
      getJson<RouteConfig[]>('/api/routes'),
      getJson<PolicyConfig[]>('/api/policies'),
    ]);
    setRoutes(list);
    setPolicies(pols.map((p) => p.name));
  }, []);

  useEffect(() => {
    load().catch((err: unknown) => setError(failure(err)));
  }, [load]);

  const openEdit = async (name: string) => {
    setError(undefined);
    setNotice(undefined);
    try {
      const { value, etag } = await getVersioned<RouteConfig>(itemPath('routes', name));
      setEditing({ mode: 'edit', route: value, etag });
    } catch (err) {
      setError(failure(err));
    }
  };

  const submit = async (route: RouteConfig) => {
    if (editing?.mode === 'edit') await put(itemPath('routes', route.name), route, editing.etag);
    else await postJson('/api/routes', route);
    setEditing(undefined);
    setNotice(`Route '${route.name}' ${editing?.mode === 'edit' ? 'updated' : 'created'}.`);
    await load();
  };

  const del = async (name: string) => {
    if (!window.confirm(`Delete route '${name}'? Requests it matches will no longer be served by it.`))
      return;
    setError(undefined);
    try {
      await remove(itemPath('routes', name));
      setNotice(`Route '${name}' deleted.`);
      await load();
    } catch (err) {
      setError(failure(err));
    }
  };

  /** First match wins, so order is behaviour: moving a route sends the whole new order. */
  const reorder = async (name: string, to: number) => {
    if (routes === undefined) return;
    const names = routes.map((r) => r.name).filter((n) => n !== name);
    names.splice(Math.max(0, Math.min(to, names.length)), 0, name);
    if (names.every((n, i) => n === routes[i]?.name)) return;
    setError(undefined);
    try {
      await put('/api/route-order', { names });
      setNotice(`Route '${name}' moved to position ${names.indexOf(name) + 1}.`);
      await load();
    } catch (err) {
      setError(failure(err));
    }
  };

  return (
    <section className="page">
      <div className="page-head">
        <h1>Routes</h1>
        <span className="muted">First match wins, top to bottom.</span>
        {!readOnly && (
          <button
            type="button"
            onClick={() => {
              setNotice(undefined);
              setEditing({ mode: 'create' });
            }}
          >
            New route
          </button>
        )}
      </div>
      {notice !== undefined && <div className="notice">{notice}</div>}
      {error !== undefined && <ErrorBox message={error.message} details={error.details} />}
      {editing !== undefined && (
        <RouteForm
          key={editing.mode === 'edit' ? editing.route.name : ''}
          initial={editing.mode === 'edit' ? editing.route : undefined}
          policies={policies}
          onSubmit={submit}
          onCancel={() => setEditing(undefined)}
          describeError={failure}
          readOnly={readOnly}
        />
      )}
      {routes === undefined ? (
        <p className="muted">Loading…</p>
      ) : routes.length === 0 ? (
        <p className="muted">No routes yet.</p>
      ) : (
        <table className="list" aria-label="Routes">
          <thead>
            <tr>
              <th>Name</th>
              <th>Match</th>
              <th>Policy</th>
              <th>Description</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {routes.map((r, i) => (
              <tr
                key={r.name}
                data-route={r.name}
                draggable={!readOnly}
                className={dragged === r.name ? 'dragging' : ''}
                onDragStart={(e) => {
                  e.dataTransfer.setData('text/plain', r.name);
                  setDragged(r.name);
                }}
                onDragEnd={() => setDragged(undefined)}
                onDragOver={(e) => {
                  if (dragged !== undefined) e.preventDefault();
                }}
                onDrop={(e) => {
                  e.preventDefault();
                  if (dragged !== undefined && dragged !== r.name) void reorder(dragged, i);
                  setDragged(undefined);
                }}
              >
                <td>{r.name}</td>
                <td>
                  <code>{matchSummary(r)}</code>
                </td>
                <td>
                  <a href={policyHref(r.policy)}>{r.policy}</a>
                </td>
                <td className="muted">{r.description ?? ''}</td>
                <td className="actions">
                  <button type="button" onClick={() => void openEdit(r.name)}>
                    {readOnly ? 'View' : 'Edit'}
                  </button>
                  {!readOnly && (
                    <>
                      <button
                        type="button"
                        aria-label={`Move ${r.name} up`}
                        disabled={i === 0}
                        onClick={() => void reorder(r.name, i - 1)}
                      >
                        ↑
                      </button>
                      <button
                        type="button"
                        aria-label={`Move ${r.name} down`}
                        disabled={i === routes.length - 1}
                        onClick={() => void reorder(r.name, i + 1)}
                      >
                        ↓
                      </button>
                      <button type="button" className="danger" onClick={() => void del(r.name)}>
                        Delete
                      </button>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
