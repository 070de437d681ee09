import type { PolicyConfig } from '../types.js';

/** Read-only expansion of a supernode instance: the nodes and edges it stands for. */
export function SupernodeInside({
  name,
  def,
}: {
  name: string;
  def: Omit<PolicyConfig, 'name'> | undefined;
}) {
  if (def === undefined) {
    return <p className="error-box">No supernode named '{name}'.</p>;
  }
  return (
    <section className="supernode-inside" aria-label={`Inside supernode ${name}`}>
      <h3>
        Inside <code>{name}</code> <span className="badge">read-only</span>
      </h3>
      <ul>
        {def.nodes.map((n) => (
          <li key={n.id}>
            <code>{n.id}</code> <span className="muted">{n.type}</span>
          </li>
        ))}
      </ul>
      <ul className="muted">
        {def.edges.map((e) => (
          <li key={`${e.from}->${e.to}`}>
            {e.from} → {e.to}
          </li>
        ))}
      </ul>
      <a href="#/supernodes">Edit supernodes</a>
    </section>
  );
}
