import type { Trace } from './trace-types.js';

/** A trace beside the graph: each step's node, port, time and changes, in order. */
export function TracePanel({ trace, onSelect }: { trace: Trace; onSelect: (nodeId: string) => void }) {
  return (
    <section className="trace-panel" aria-label="Trace">
      <h2>
        Trace {trace.method} {trace.path} → {trace.status}
      </h2>
      <p className="muted">
        {trace.source} · {(trace.duration_us / 1000).toFixed(2)} ms · {trace.step_count} steps
      </p>
      <ol>
        {trace.steps.map((step) => (
          <li
            key={step.index}
            className={step.outcome.kind === 'error' ? 'step-error' : ''}
            data-step={step.node_id}
          >
            <button
              type="button"
              className="link"
              onClick={() => onSelect(step.node_id.split('/')[0] ?? step.node_id)}
            >
              {step.node_id}
            </button>{' '}
            <span className="muted">{step.node_type}</span> → <strong>{step.port ?? step.edge}</strong>{' '}
            <span className="muted">{step.duration_us} µs</span>
            {step.outcome.code !== undefined && (
              <div className="field-error">
                {step.outcome.code}: {step.outcome.message}
              </div>
            )}
            {(step.changes ?? []).length > 0 && (
              <ul className="changes">
                {(step.changes ?? []).map((c, i) => (
                  <li key={i}>
                    <code>{c.path}</code> {c.kind} {c.before !== undefined && <del>{c.before}</del>}{' '}
                    {c.after !== undefined && <ins>{c.after}</ins>}
                  </li>
                ))}
              </ul>
            )}
          </li>
        ))}
      </ol>
    </section>
  );
}
