import { useEffect, useState, type FormEvent } from 'react';
import { describe, getJson, remove } from '../api.js';
import { useReadOnly } from '../session/role.js';

interface SessionMeta {
  id: string;
  subject: string;
  plugin: string;
  policy: string;
  route: string;
  created_at: number;
  expires_at: number;
}

const when = (seconds: number): string => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

/**
 * The id is the browser's session cookie value (a bearer secret in kvstore
 * storage, docs/sessions.md): shown and spoken only as its first 8 characters.
 */
export const maskId = (id: string): string => `${id.slice(0, 8)}…`;

/** Server-side sessions of one store: list (filter by subject), revoke one or all of a subject. */
export function SessionsView() {
  const readOnly = useReadOnly();
  const [stores, setStores] = useState<string[]>([]);
  const [store, setStore] = useState('');
  const [subject, setSubject] = useState('');
  const [sessions, setSessions] = useState<SessionMeta[] | undefined>();
  const [message, setMessage] = useState<string | undefined>();

  useEffect(() => {
    getJson<{ name: string }[]>('/api/stores').then(
      (list) => {
        setStores(list.map((s) => s.name));
        setStore((s) => s || (list[0]?.name ?? ''));
      },
      (err: unknown) => setMessage(describe(err)),
    );
  }, []);

  const query = () => {
    const q = new URLSearchParams({ store });
    if (subject.trim() !== '') q.set('subject', subject.trim());
    return q;
  };

  const list = async (event?: FormEvent) => {
    // A refresh after a revoke keeps its notice; only a new search clears it.
    if (event !== undefined) {
      event.preventDefault();
      setMessage(undefined);
    }
    try {
      const page = await getJson<{ sessions: SessionMeta[] }>(`/api/sessions?${query().toString()}`);
      setSessions(page.sessions);
    } catch (err) {
      setMessage(describe(err));
    }
  };

  const revoke = async (id: string) => {
    if (!window.confirm(`Revoke session ${maskId(id)}? It stops working on the next request.`)) return;
    try {
      await remove(`/api/sessions/${encodeURIComponent(store)}/${encodeURIComponent(id)}`);
      setMessage(`Session ${maskId(id)} revoked.`);
      await list();
    } catch (err) {
      setMessage(describe(err));
    }
  };

  return (
    <section className="page">
      <div className="page-head">
        <h1>Sessions</h1>
        <span className="muted">Server-side sessions of the interactive auth plugins (kvstore storage).</span>
      </div>
      <form className="row" aria-label="Find sessions" onSubmit={(e) => void list(e)}>
        <label>
          Store
          <select value={store} onChange={(e) => setStore(e.target.value)}>
            {stores.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Subject
          <input value={subject} onChange={(e) => setSubject(e.target.value)} />
        </label>
        <button type="submit" disabled={store === ''}>
          List sessions
        </button>
      </form>
      {message !== undefined && <div className="notice">{message}</div>}
      {sessions !== undefined &&
        (sessions.length === 0 ? (
          <p className="muted">No sessions.</p>
        ) : (
          <table className="list" aria-label="Sessions">
            <thead>
              <tr>
                <th>Session</th>
                <th>Subject</th>
                <th>Plugin</th>
                <th>Policy / route</th>
                <th>Created</th>
                <th>Expires</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {sessions.map((s) => (
                <tr key={s.id} data-session={maskId(s.id)}>
                  <td>
                    <code>{maskId(s.id)}</code>
                  </td>
                  <td>{s.subject}</td>
                  <td>{s.plugin}</td>
                  <td>
                    {s.policy} / {s.route}
                  </td>
                  <td>{when(s.created_at)}</td>
                  <td>{when(s.expires_at)}</td>
                  <td className="actions">
                    {!readOnly && (
                      <button
                        type="button"
                        className="danger"
                        aria-label={`Revoke session ${maskId(s.id)} of ${s.subject}`}
                        onClick={() => void revoke(s.id)}
                      >
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
    </section>
  );
}
