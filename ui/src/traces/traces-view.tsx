import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { describe, getJson } from '../api.js';
import { policyHref } from '../use-hash-route.js';
import { SandboxRunner } from './sandbox-runner.js';
import type { TraceSummary } from './trace-types.js';

/** Recent debug traces with filters; a trace opens on its policy's graph. */
export function TracesView() {
  const [traces, setTraces] = useState<TraceSummary[] | undefined>();
  const [filters, setFilters] = useState({ route: '', status: '', source: '' });
  const [message, setMessage] = useState<string | undefined>();

  const load = useCallback(async () => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(filters)) if (v.trim() !== '') q.set(k, v.trim());
    try {
      const page = await getJson<{ traces: TraceSummary[] }>(`/api/debug/traces?${q.toString()}`);
      setTraces(page.traces);
      setMessage(undefined);
    } catch (err) {
      setMessage(`Traces unavailable: ${describe(err)} (system.yaml debug.enabled).`);
    }
  }, [filters]);

  useEffect(() => {
    void load();
    // Only on open; the filter form reloads on submit.
  }, []);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    void load();
  };
  const field = (key: keyof typeof filters, label: string) => (
    <label>
      {label}
      <input value={filters[key]} onChange={(e) => setFilters({ ...filters, [key]: e.target.value })} />
    </label>
  );

  return (
    <section className="page">
      <div className="page-head">
        <h1>Traces</h1>
        <span className="muted">Requests sent with the debug header, or every request with trace_all.</span>
      </div>
      <form className="row" aria-label="Trace filters" onSubmit={submit}>
        {field('route', 'Route')}
        {field('status', 'Status')}
        {field('source', 'Source')}
        <button type="submit">Refresh</button>
      </form>
      {message !== undefined && <div className="notice">{message}</div>}
      {traces !== undefined &&
        (traces.length === 0 ? (
          <p className="muted">No traces.</p>
        ) : (
          <table className="list" aria-label="Traces">
            <thead>
              <tr>
                <th>When</th>
                <th>Request</th>
                <th>Status</th>
                <th>Route / policy</th>
                <th>Steps</th>
                <th>Time</th>
              </tr>
            </thead>
            <tbody>
              {traces.map((t) => (
                <tr key={t.id} data-trace={t.id}>
                  <td>{new Date(t.started_ms).toLocaleTimeString()}</td>
                  <td>
                    <code>
                      {t.method} {t.path}
                    </code>
                  </td>
                  <td>{t.status}</td>
                  <td>
                    {t.policy !== undefined && !t.policy.startsWith('(') && !t.policy.startsWith('__') ? (
                      <a href={policyHref(t.policy, t.id)}>
                        {t.route ?? '—'} / {t.policy}
                      </a>
                    ) : (
                      `${t.route ?? '—'} / ${t.policy ?? '—'}`
                    )}
                  </td>
                  <td>
                    {t.step_count}
                    {t.error_count > 0 ? ` (${t.error_count} errors)` : ''}
                  </td>
                  <td>{(t.duration_us / 1000).toFixed(2)} ms</td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      <SandboxRunner onRan={() => void load()} />
    </section>
  );
}
