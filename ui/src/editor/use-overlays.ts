import { useEffect, useMemo, useState } from 'react';
import { describe, getJson, getText } from '../api.js';
import { outerNode, type Trace } from '../traces/trace-types.js';
import { handleOf, type PolicyEdge, type PolicyNode } from './graph.js';
import type { Located } from './issues.js';
import { figuresText, nodeFigures } from './metrics.js';

/** The metrics overlay's figures per node id, and when /metrics was read. */
export interface Figures {
  byNode: Map<string, string>;
  readAt: Date;
}

export interface Overlays {
  trace: Trace | undefined;
  figures: Figures | undefined;
  toggleMetrics: () => Promise<void>;
  /** The nodes with the trace, metrics and validation problems drawn on them. */
  shownNodes: PolicyNode[];
  /** The edges, those the trace took highlighted. */
  shownEdges: PolicyEdge[];
}

interface Visit {
  steps: number[];
  us: number;
  error: boolean;
}

function visitsOf(trace: Trace | undefined): Map<string, Visit> {
  const visits = new Map<string, Visit>();
  for (const step of trace?.steps ?? []) {
    const id = outerNode(step.node_id);
    const v = visits.get(id) ?? { steps: [], us: 0, error: false };
    v.steps.push(step.index + 1); // shown counting from 1
    v.us += step.duration_us;
    v.error ||= step.outcome.kind === 'error';
    visits.set(id, v);
  }
  return visits;
}

/** Problems from Validate or a refused Save, drawn on the nodes and ports they name. */
function withIssues(n: PolicyNode, issues: readonly Located[]): PolicyNode {
  const mine = issues.filter((i) => i.node === n.id);
  if (mine.length === 0) return n;
  const portIssues: Record<string, string> = {};
  for (const i of mine) {
    const port = i.port === undefined ? undefined : handleOf(i.port);
    if (port !== undefined && n.data.outputs.some((p) => p.name === port)) portIssues[port] = i.message;
  }
  return { ...n, data: { ...n.data, issues: mine.map((i) => i.message), portIssues } };
}

/** The edges a trace took: from each step's node, through its port, to the next node that ran. */
function takenEdges(trace: Trace, nodes: readonly PolicyNode[], edges: readonly PolicyEdge[]): Set<string> {
  const taken = new Set<string>();
  for (const step of trace.steps) {
    const from = outerNode(step.node_id);
    const to = step.next_node_id === undefined ? undefined : outerNode(step.next_node_id);
    if (to === undefined || to === from) continue;
    for (const e of edges) if (e.source === from && e.target === to) taken.add(e.id);
  }
  // The listener is not a step: its edge leads to the first step's node.
  const first = trace.steps[0];
  if (first !== undefined) {
    for (const e of edges) {
      const src = nodes.find((n) => n.id === e.source);
      if (src?.data.hasInput === false && e.target === outerNode(first.node_id)) taken.add(e.id);
    }
  }
  return taken;
}

/** The trace of `traceId`, the metrics overlay, and the validation problems, drawn over the graph. */
export function useOverlays(
  policy: string,
  traceId: string | undefined,
  nodes: PolicyNode[],
  edges: PolicyEdge[],
  issues: Located[],
  onError: (text: string) => void,
): Overlays {
  const [trace, setTrace] = useState<Trace | undefined>();
  const [figures, setFigures] = useState<Figures | undefined>();

  useEffect(() => {
    if (traceId === undefined) {
      setTrace(undefined);
      return;
    }
    getJson<Trace>(`/api/debug/traces/${encodeURIComponent(traceId)}`).then(setTrace, (err: unknown) =>
      onError(`Could not load trace ${traceId}: ${describe(err)}`),
    );
    // onError only reports: a new closure each render must not fetch the trace again.
  }, [traceId]);

  const toggleMetrics = async () => {
    if (figures !== undefined) {
      setFigures(undefined);
      return;
    }
    try {
      const text = await getText('/metrics');
      const byNode = nodeFigures(text, policy);
      setFigures({ byNode: new Map([...byNode].map(([id, f]) => [id, figuresText(f)])), readAt: new Date() });
    } catch (err) {
      onError(`Metrics unavailable: ${describe(err)}`);
    }
  };

  const shownNodes = useMemo(() => {
    const visits = visitsOf(trace);
    return nodes.map((n) => {
      const traced = visits.get(n.id);
      const line = figures === undefined ? undefined : (figures.byNode.get(n.id) ?? '0 runs · 0 errors');
      const drawn =
        traced === undefined && line === undefined
          ? n
          : {
              ...n,
              data: {
                ...n.data,
                ...(traced === undefined ? {} : { traced }),
                ...(line === undefined ? {} : { figures: line }),
              },
            };
      return issues.length === 0 ? drawn : withIssues(drawn, issues);
    });
  }, [nodes, issues, trace, figures]);

  const shownEdges = useMemo(() => {
    if (trace === undefined) return edges;
    const taken = takenEdges(trace, nodes, edges);
    return edges.map((e) => (taken.has(e.id) ? { ...e, animated: true, className: 'traced' } : e));
  }, [edges, nodes, trace]);

  return { trace, figures, toggleMetrics, shownNodes, shownEdges };
}
