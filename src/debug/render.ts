import { diffSnapshots, type Change } from './diff.js';
import type { Trace, TraceStep } from './trace-types.js';

export type RenderedStep = TraceStep & { changes: Change[] };
export type RenderedTrace = Omit<Trace, 'steps'> & { steps: RenderedStep[] };

/**
 * A trace as the Admin API returns it: each step with the `changes` it made.
 * The context flows linearly (a step's "before" is the previous step's
 * "after"), so changes are derived at read time and the traced request path
 * only takes snapshots.
 */
export function renderTrace(trace: Trace): RenderedTrace {
  let previous = trace.initial;
  const steps = trace.steps.map((step) => {
    const changes = diffSnapshots(previous, step.after);
    previous = step.after;
    return { ...step, changes };
  });
  return { ...trace, steps };
}
