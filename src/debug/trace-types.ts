import type { EdgeKind } from '../core/graph-types.js';
import type { ContextSnapshot } from './snapshot.js';

/** `request`: live traffic (the reference's name; `live` is accepted as a filter alias). */
export type TraceSource = 'request' | 'sandbox';

/** How a node finished: a success or outcome port, or a failure with its error record. */
export type StepOutcome =
  { kind: 'success' } | { kind: 'outcome' } | { kind: 'error'; code: string; message: string };

/** One node run, with the context as it stood after it. */
export interface TraceStep {
  index: number;
  node_id: string;
  node_type: string;
  outcome: StepOutcome;
  duration_us: number;
  edge: EdgeKind;
  /** The outcome port taken (`denied`, `hit`, `true`…); absent for success, error and terminal steps. */
  port?: string;
  next_node_id?: string;
  after: ContextSnapshot;
}

/** The node and port whose run last set the response status or body. */
export interface ResponseOrigin {
  node_id: string;
  port: string;
}

/** One policy execution, live or sandboxed, as stored in the ring buffer. */
export interface Trace {
  id: string;
  seq: number;
  source: TraceSource;
  /** Epoch milliseconds when the graph started. */
  started_ms: number;
  /** Absent for sandbox runs and unrouted requests. */
  route?: string;
  policy: string;
  /** Method and path as the request arrived. */
  method: string;
  path: string;
  status: number;
  duration_us: number;
  captured_bodies: boolean;
  response_origin: ResponseOrigin | null;
  /** Notes about the recording itself (step limit reached, unexpected failure). */
  notes: string[];
  initial: ContextSnapshot;
  steps: TraceStep[];
}

/** One row of `GET /api/debug/traces`: the trace without its snapshots, steps and notes. */
export type TraceSummary = Omit<Trace, 'notes' | 'initial' | 'steps'> & {
  step_count: number;
  error_count: number;
};

/** Policy label of a request that matched no route (docs/debugging.md#reading-a-trace). */
export const NO_ROUTE_POLICY = '(no route matched)';

export function summarize(trace: Trace): TraceSummary {
  const last = trace.steps.at(-1)?.after ?? trace.initial;
  return {
    id: trace.id,
    seq: trace.seq,
    source: trace.source,
    started_ms: trace.started_ms,
    ...(trace.route === undefined ? {} : { route: trace.route }),
    policy: trace.policy,
    method: trace.method,
    path: trace.path,
    status: trace.status,
    duration_us: trace.duration_us,
    step_count: trace.steps.length,
    error_count: last.errors.length,
    captured_bodies: trace.captured_bodies,
    response_origin: trace.response_origin,
  };
}
