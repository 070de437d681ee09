/** The debug trace shapes of docs/debugging.md. */
export interface TraceSummary {
  id: string;
  seq: number;
  source: string;
  started_ms: number;
  route?: string;
  policy?: string;
  method: string;
  path: string;
  status: number;
  duration_us: number;
  step_count: number;
  error_count: number;
}

export interface TraceChange {
  path: string;
  kind: string;
  before?: string;
  after?: string;
}

export interface TraceStep {
  index: number;
  node_id: string;
  node_type: string;
  outcome: { kind: string; code?: string; message?: string };
  port?: string;
  duration_us: number;
  edge: string;
  next_node_id?: string;
  changes?: TraceChange[];
}

export interface Trace extends TraceSummary {
  notes?: string[];
  steps: TraceStep[];
}

/** The policy-level node a step ran in: `guard/auth` ran inside the instance `guard`. */
export const outerNode = (nodeId: string): string => nodeId.split('/')[0] ?? nodeId;
