import { useEffect, useState, type FormEvent } from 'react';
import { describe, getJson, postJson } from '../api.js';
import { useReadOnly } from '../session/role.js';
import type { PolicyConfig } from '../types.js';
import { policyHref } from '../use-hash-route.js';
import type { MockAnswer, SandboxAsk } from './policy-test-entry.js';
import { SaveAsTest } from './save-as-test.js';
import type { Trace } from './trace-types.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

/** Node types that call a backend: the sandbox offers a mock for each of them (F14). */
const CALLS_OUT = new Set(['upstream', 'ai-proxy']);

interface Mock {
  on: boolean;
  status: string;
  headers: string;
  body: string;
}

interface Row {
  name: string;
  value: string;
}

const DEFAULT_MOCK: Mock = { on: true, status: '200', headers: '', body: 'ok' };

/** `name: value` lines → a header object; a line without a colon is an error naming it. */
function headerLines(text: string, where: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`${where}: '${line.trim()}' is not 'name: value'`);
    out[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return out;
}

function mockAnswer(id: string, m: Mock): MockAnswer {
  const status = Number(m.status);
  if (!Number.isInteger(status) || status < 100 || status > 599)
    throw new Error(`Mock of ${id}: status must be a number from 100 to 599`);
  const headers = headerLines(m.headers, `Mock of ${id}, headers`);
  return {
    status,
    ...(Object.keys(headers).length === 0 ? {} : { headers }),
    ...(m.body === '' ? {} : { body: m.body }),
  };
}

/** Describe a request, run it through a policy in the sandbox (its backends real or mocked), and see its trace. */
export function SandboxRunner({ onRan }: { onRan: () => void }) {
  const readOnly = useReadOnly();
  const [policies, setPolicies] = useState<string[]>([]);
  const [policy, setPolicy] = useState('');
  const [callouts, setCallouts] = useState<{ id: string; type: string }[]>([]);
  const [method, setMethod] = useState<string>('GET');
  const [path, setPath] = useState('/');
  const [headers, setHeaders] = useState<Row[]>([{ name: '', value: '' }]);
  const [body, setBody] = useState('');
  const [mocks, setMocks] = useState<Record<string, Mock>>({});
  const [result, setResult] = useState<{ trace: Trace; ask: SandboxAsk; policy: string } | undefined>();
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

  useEffect(() => {
    if (policy === '') return;
    getJson<PolicyConfig>(`/api/policies/${encodeURIComponent(policy)}`).then(
      (p) => {
        const found = p.nodes.filter((n) => CALLS_OUT.has(n.type)).map((n) => ({ id: n.id, type: n.type }));
        setCallouts(found);
        // Mocked by default: a sandbox run should not reach a real backend unless asked to.
        setMocks(Object.fromEntries(found.map((n) => [n.id, { ...DEFAULT_MOCK }])));
      },
      () => setCallouts([]),
    );
  }, [policy]);

  if (readOnly) return null; // POST /api/debug/sandbox runs nodes for real: an admin tool.

  const setMock = (id: string, patch: Partial<Mock>) =>
    setMocks((all) => ({ ...all, [id]: { ...(all[id] ?? DEFAULT_MOCK), ...patch } }));
  const setRow = (i: number, patch: Partial<Row>) =>
    setHeaders((rows) => rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));

  const run = async (event: FormEvent) => {
    event.preventDefault();
    setMessage(undefined);
    let ask: SandboxAsk;
    try {
      const answers: Record<string, MockAnswer> = {};
      for (const { id } of callouts) {
        const m = mocks[id];
        if (m?.on === true) answers[id] = mockAnswer(id, m);
      }
      const sent: Record<string, string> = {};
      for (const r of headers) if (r.name.trim() !== '') sent[r.name.trim().toLowerCase()] = r.value;
      ask = { method, path, headers: sent, body, mocks: answers };
    } catch (err) {
      setMessage(describe(err));
      return;
    }
    try {
      const answer = await postJson<{ trace: Trace }>('/api/debug/sandbox', {
        policy,
        context: { method, path, headers: ask.headers, ...(body === '' ? {} : { body }) },
        ...(Object.keys(ask.mocks).length === 0 ? {} : { upstreams: ask.mocks }),
      });
      setResult({ trace: answer.trace, ask, policy });
      onRan();
    } catch (err) {
      setMessage(describe(err));
    }
  };

  const real = callouts.filter((n) => mocks[n.id]?.on !== true);
  return (
    <section className="panel sandbox" aria-label="Sandbox">
      <h2>Sandbox</h2>
      <p className="banner-inline warn" role="note">
        <strong>Runs for real.</strong> Every node of the policy runs as for live traffic: rate limits count,
        loggers log, and an unmocked upstream calls its real backend.
        {callouts.length > 0 &&
          (real.length === 0
            ? ' Every upstream of this policy is mocked below.'
            : ` Not mocked: ${real.map((n) => n.id).join(', ')}.`)}
      </p>
      <form aria-label="Sandbox request" onSubmit={(e) => void run(e)}>
        <div className="row wrap">
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
            <select value={method} onChange={(e) => setMethod(e.target.value)}>
              {METHODS.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
          </label>
          <label className="grow">
            Path
            <input value={path} onChange={(e) => setPath(e.target.value)} />
          </label>
        </div>
        <fieldset className="plain">
          <legend>Headers</legend>
          {headers.map((r, i) => (
            <div className="row" key={i}>
              <input
                aria-label={`Header ${i + 1} name`}
                placeholder="name"
                value={r.name}
                onChange={(e) => setRow(i, { name: e.target.value })}
              />
              <input
                aria-label={`Header ${i + 1} value`}
                placeholder="value"
                value={r.value}
                onChange={(e) => setRow(i, { value: e.target.value })}
              />
              <button
                type="button"
                className="small"
                aria-label={`Remove header ${i + 1}`}
                onClick={() => setHeaders((rows) => rows.filter((_, j) => j !== i))}
              >
                ×
              </button>
            </div>
          ))}
          <button
            type="button"
            className="small"
            onClick={() => setHeaders((rows) => [...rows, { name: '', value: '' }])}
          >
            Add header
          </button>
        </fieldset>
        <label>
          Body
          <textarea rows={3} value={body} onChange={(e) => setBody(e.target.value)} />
        </label>
        {callouts.length > 0 && (
          <fieldset className="plain mocks">
            <legend>Mocked upstreams</legend>
            {callouts.map(({ id, type }) => {
              const m = mocks[id] ?? DEFAULT_MOCK;
              return (
                <div className="mock" key={id} data-mock={id}>
                  <label className="switch">
                    <input
                      type="checkbox"
                      checked={m.on}
                      onChange={(e) => setMock(id, { on: e.target.checked })}
                    />
                    Mock {id} ({type})
                  </label>
                  {m.on && (
                    <div className="row wrap">
                      <label>
                        Status
                        <input
                          aria-label={`Mock status of ${id}`}
                          inputMode="numeric"
                          size={4}
                          value={m.status}
                          onChange={(e) => setMock(id, { status: e.target.value })}
                        />
                      </label>
                      <label className="grow">
                        Headers (name: value per line)
                        <textarea
                          aria-label={`Mock headers of ${id}`}
                          rows={2}
                          value={m.headers}
                          onChange={(e) => setMock(id, { headers: e.target.value })}
                        />
                      </label>
                      <label className="grow">
                        Body
                        <textarea
                          aria-label={`Mock body of ${id}`}
                          rows={2}
                          value={m.body}
                          onChange={(e) => setMock(id, { body: e.target.value })}
                        />
                      </label>
                    </div>
                  )}
                </div>
              );
            })}
          </fieldset>
        )}
        <div className="buttons">
          <button type="submit" className="primary" disabled={policy === ''}>
            Run
          </button>
        </div>
      </form>
      {message !== undefined && <div className="error-box">{message}</div>}
      {result !== undefined && (
        <>
          <div className="notice" role="status" aria-label="Sandbox result">
            {result.trace.method} {result.trace.path} → <strong>{result.trace.status}</strong> in{' '}
            {result.trace.steps.length} steps ({result.trace.steps.map((s) => s.node_id).join(' → ')}){' '}
            <a href={policyHref(result.policy, result.trace.id)}>Show on graph</a>
          </div>
          <SaveAsTest key={result.trace.id} policy={result.policy} ask={result.ask} trace={result.trace} />
        </>
      )}
    </section>
  );
}
