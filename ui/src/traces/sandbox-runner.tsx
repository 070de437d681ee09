import { useEffect, useState, type FormEvent } from 'react';
import { describe, getJson, postJson } from '../api.js';
import { useReadOnly } from '../session/role.js';
import { policyHref } from '../use-hash-route.js';
import type { Trace } from './trace-types.js';

/** Describe a request, run it through a policy in the sandbox, and see its trace. */
export function SandboxRunner({ onRan }: { onRan: () => void }) {
  const readOnly = useReadOnly();
  const [policies, setPolicies] = useState<string[]>([]);
  const [policy, setPolicy] = useState('');
  const [method, setMethod] = useState('GET');
  const [path, setPath] = useState('/');
  const [headers, setHeaders] = useState('{}');
  const [result, setResult] = useState<Trace | undefined>();
  const [message, setMessage] = useState<string | undefined>();

  useEffect(() => {
    getJson<{ name: string }[]>('/api/policies').then(
      (list) => {
        setPolicies(list.map((p) => p.name));
        setPolicy((p) => p || (list[0]?.name ?? ''));
      },
      () => undefined,
    );
  }, []);

  if (readOnly) return null; // POST /api/debug/sandbox runs nodes for real: an admin tool.

  const run = async (event: FormEvent) => {
    event.preventDefault();
    setMessage(undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(headers.trim() === '' ? '{}' : headers);
    } catch (err) {
      setMessage(`Headers are not JSON: ${(err as Error).message}`);
      return;
    }
    try {
      const answer = await postJson<Trace | { trace: Trace }>('/api/debug/sandbox', {
        policy,
        context: { method, path, headers: parsed },
      });
      setResult('trace' in answer ? answer.trace : answer);
      onRan();
    } catch (err) {
      setMessage(describe(err));
    }
  };

  return (
    <section className="panel" aria-label="Sandbox">
      <h2>Sandbox</h2>
      <form className="row wrap" aria-label="Sandbox request" onSubmit={(e) => void run(e)}>
        <label>
          Policy
          <select value={policy} onChange={(e) => setPolicy(e.target.value)}>
            {policies.map((p) => (
              <option key={p}>{p}</option>
            ))}
          </select>
        </label>
        <label>
          Method
          <input value={method} size={7} onChange={(e) => setMethod(e.target.value.toUpperCase())} />
        </label>
        <label>
          Path
          <input value={path} onChange={(e) => setPath(e.target.value)} />
        </label>
        <label>
          Headers (JSON)
          <input value={headers} onChange={(e) => setHeaders(e.target.value)} />
        </label>
        <button type="submit" className="primary" disabled={policy === ''}>
          Run
        </button>
      </form>
      {message !== undefined && <div className="error-box">{message}</div>}
      {result !== undefined && (
        <div className="notice" role="status" aria-label="Sandbox result">
          {result.method} {result.path} → <strong>{result.status}</strong> in {result.steps.length} steps (
          {result.steps.map((s) => s.node_id).join(' → ')}){' '}
          <a href={policyHref(policy, result.id)}>Show on graph</a>
        </div>
      )}
    </section>
  );
}
