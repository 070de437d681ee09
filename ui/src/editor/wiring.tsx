import type { PolicyEdge, PolicyNode } from './graph.js';

interface Props {
  node: PolicyNode;
  nodes: readonly PolicyNode[];
  edges: readonly PolicyEdge[];
  readOnly: boolean;
  onWire: (source: string, port: string, target: string | undefined) => void;
}

/**
 * Keyboard wiring (F12): one select per output port of the selected node,
 * listing every other node's input; choosing one wires the port there (an
 * output port has one edge, so it replaces the old one), "not wired" removes
 * the edge. The edges into the node are listed below. docs/editor.md#policy-graph-editor.
 */
export function Wiring({ node, nodes, edges, readOnly, onWire }: Props) {
  const targets = nodes.filter((n) => n.id !== node.id && n.data.hasInput);
  const incoming = edges.filter((e) => e.target === node.id);
  if (node.data.outputs.length === 0 && incoming.length === 0) return null;
  return (
    <section className="wiring" aria-label={`Wiring of ${node.id}`}>
      <h3>Wiring</h3>
      {node.data.outputs.length > 0 && (
        <fieldset className="plain" disabled={readOnly}>
          {node.data.outputs.map((port) => {
            const edge = edges.find((e) => e.source === node.id && e.sourceHandle === port.name);
            const name = `${node.id}.${edge?.data?.fromPort ?? port.name} →`;
            return (
              <label key={port.name} className={`wire-row kind-${port.kind}`}>
                <code>{name}</code>
                <select
                  aria-label={name}
                  value={edge?.target ?? ''}
                  onChange={(e) =>
                    onWire(node.id, port.name, e.target.value === '' ? undefined : e.target.value)
                  }
                >
                  <option value="">not wired</option>
                  {targets.map((t) => (
                    <option key={t.id} value={t.id}>
                      {t.id}.in
                    </option>
                  ))}
                </select>
              </label>
            );
          })}
        </fieldset>
      )}
      {incoming.length > 0 && (
        <p className="muted wire-in">
          Into <code>{node.id}.in</code>:{' '}
          {incoming.map((e) => `${e.source}.${e.data?.fromPort ?? e.sourceHandle ?? ''}`).join(', ')}
        </p>
      )}
    </section>
  );
}
