import type { NodeConfig, PolicyConfig } from '../types.js';

/** How a node or edge differs from one version to the other. */
export type Change = 'added' | 'removed' | 'changed' | 'same';

export interface NodeDiff {
  id: string;
  type: string;
  change: Change;
  /** What changed on a `changed` node: `type`, `config_ref`, `config.<key>` (positions do not count). */
  fields: string[];
  /** Output ports its edges use in either version, so the diff can draw them. */
  ports: string[];
}

export interface EdgeDiff {
  from: string;
  to: string;
  change: Exclude<Change, 'changed'>;
}

export interface GraphDiff {
  nodes: NodeDiff[];
  edges: EdgeDiff[];
  /** Policy-level fields that changed (`error_handler: eh → eh2`). */
  meta: string[];
}

/** JSON with sorted keys, so two equal values compare equal whatever their key order. */
function stable(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'undefined';
}

function changedFields(a: NodeConfig, b: NodeConfig): string[] {
  const fields: string[] = [];
  if (a.type !== b.type) fields.push('type');
  if (a.config_ref !== b.config_ref) fields.push('config_ref');
  const ca = a.config ?? {};
  const cb = b.config ?? {};
  for (const key of [...new Set([...Object.keys(ca), ...Object.keys(cb)])].sort())
    if (stable(ca[key]) !== stable(cb[key])) fields.push(`config.${key}`);
  return fields;
}

const portOf = (endpoint: string): [string, string] => {
  const dot = endpoint.lastIndexOf('.');
  return dot === -1 ? [endpoint, ''] : [endpoint.slice(0, dot), endpoint.slice(dot + 1)];
};

/**
 * What changed in a policy (or supernode) graph from `before` to `after`:
 * nodes by id (added, removed, or changed in type, config_ref or a config
 * key), edges by `from → to`, and the policy's own fields. Either side may be
 * missing (the policy did not exist in that version).
 */
export function diffGraphs(before: PolicyConfig | undefined, after: PolicyConfig | undefined): GraphDiff {
  const old = new Map((before?.nodes ?? []).map((n) => [n.id, n]));
  const now = new Map((after?.nodes ?? []).map((n) => [n.id, n]));
  const key = (e: { from: string; to: string }) => `${e.from} ${e.to}`;
  const oldEdges = new Set((before?.edges ?? []).map(key));
  const newEdges = new Set((after?.edges ?? []).map(key));
  const edges: EdgeDiff[] = [
    ...(after?.edges ?? []).map((e) => ({
      ...e,
      change: oldEdges.has(key(e)) ? ('same' as const) : ('added' as const),
    })),
    ...(before?.edges ?? [])
      .filter((e) => !newEdges.has(key(e)))
      .map((e) => ({ ...e, change: 'removed' as const })),
  ];
  const ports = new Map<string, Set<string>>();
  for (const e of edges) {
    const [node, port] = portOf(e.from);
    ports.set(node, (ports.get(node) ?? new Set()).add(port));
  }
  const entry = (n: NodeConfig, change: Change, fields: string[] = []): NodeDiff => ({
    id: n.id,
    type: n.type,
    change,
    fields,
    ports: [...(ports.get(n.id) ?? [])],
  });
  const nodes = [
    ...[...now.values()].map((n) => {
      const was = old.get(n.id);
      if (was === undefined) return entry(n, 'added');
      const fields = changedFields(was, n);
      return entry(n, fields.length > 0 ? 'changed' : 'same', fields);
    }),
    ...[...old.values()].filter((n) => !now.has(n.id)).map((n) => entry(n, 'removed')),
  ];
  const meta: string[] = [];
  for (const field of ['description', 'error_handler'] as const) {
    const a = before?.[field];
    const b = after?.[field];
    if (a !== b) meta.push(`${field}: ${a ?? '(none)'} → ${b ?? '(none)'}`);
  }
  return { nodes, edges, meta };
}

/** `2 added, 1 removed, 1 changed` (the counts that are not zero), or `no change`. */
export function countsText(items: readonly { change: Change }[]): string {
  const parts = (['added', 'removed', 'changed'] as const)
    .map((c) => [c, items.filter((i) => i.change === c).length] as const)
    .filter(([, n]) => n > 0)
    .map(([c, n]) => `${n} ${c}`);
  return parts.length === 0 ? 'no change' : parts.join(', ');
}
