import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { ApiError, describe, getJson, itemPath, remove } from './api.js';
import { ErrorBox } from './error-box.js';
import { useReadOnly } from './session/role.js';
import type { Issue, PolicyConfig, RouteConfig } from './types.js';
import { policyHref } from './use-hash-route.js';

export function PoliciesView() {
  const readOnly = useReadOnly();
  const [policies, setPolicies] = useState<PolicyConfig[] | undefined>();
  const [routes, setRoutes] = useState<RouteConfig[]>([]);
  const [newName, setNewName] = useState('');
  const [error, setError] = useState<{ message: string; details: Issue[] } | undefined>();

  const load = useCallback(async () => {
    const [pols, rts] = await Promise.all([
      getJson<PolicyConfig[]>('/api/policies'),
      getJson<RouteConfig[]>('/api/routes'),
    ]);
    setPolicies(pols);
    setRoutes(rts);
  }, []);

  useEffect(() => {
    load().catch((err: unknown) => setError({ message: describe(err), details: [] }));
  }, [load]);

  const create = (event: FormEvent) => {
    event.preventDefault();
    const name = newName.trim();
    if (name === '') return;
    if (policies?.some((p) => p.name === name) === true) {
      setError({ message: `A policy named '${name}' already exists.`, details: [] });
      return;
    }
    // The editor opens an unknown name as a new, unsaved policy.
    window.location.hash = policyHref(name);
  };

  const del = async (name: string) => {
    if (!window.confirm(`Delete policy '${name}'?`)) return;
    setError(undefined);
    try {
      await remove(itemPath('policies', name));
      await load();
    } catch (err) {
      setError({ message: describe(err), details: err instanceof ApiError ? err.details : [] });
    }
  };

  return (
    <section className="page">
      <div className="page-head">
        <h1>Policies</h1>
        {!readOnly && (
          <form className="inline" onSubmit={create}>
            <input
              aria-label="New policy name"
              placeholder="new-policy-name"
              value={newName}
              onChange={(e) => setNewName(e.target.value)}
            />
            <button type="submit">New policy</button>
          </form>
        )}
      </div>
      {error !== undefined && <ErrorBox message={error.message} details={error.details} />}
      {policies === undefined ? (
        <p className="muted">Loading…</p>
      ) : policies.length === 0 ? (
        <p className="muted">No policies yet.</p>
      ) : (
        <table className="list" aria-label="Policies">
          <thead>
            <tr>
              <th>Name</th>
              <th>Nodes</th>
              <th>Edges</th>
              <th>Used by routes</th>
              <th>Description</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {policies.map((p) => {
              const users = routes.filter((r) => r.policy === p.name).map((r) => r.name);
              return (
                <tr key={p.name} data-policy={p.name}>
                  <td>
                    <a href={policyHref(p.name)}>{p.name}</a>
                  </td>
                  <td>{p.nodes.length}</td>
                  <td>{p.edges.length}</td>
                  <td>{users.length === 0 ? <span className="muted">none</span> : users.join(', ')}</td>
                  <td className="muted">{p.description ?? ''}</td>
                  <td className="actions">
                    <a className="button" href={policyHref(p.name)}>
                      Open
                    </a>
                    {!readOnly && (
                      <button
                        type="button"
                        className="danger"
                        onClick={() => void del(p.name)}
                        title={users.length > 0 ? 'Still used by a route: the gateway will refuse' : ''}
                      >
                        Delete
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
