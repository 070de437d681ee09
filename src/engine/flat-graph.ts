import type { EdgeConfig, NodeConfig, PolicyConfig, SupernodeConfig } from '../config/gateway.js';
import type { ConfigIssue } from '../config/schema-validate.js';

/** Where a node came from in the stored config, for messages and issue paths. */
export interface NodeOrigin {
  /** Config path of the node entry, e.g. `policies[2].nodes[1]` or `supernodes[0].nodes[3]`. */
  path: string;
}

/**
 * A policy after supernode inlining. Boundary nodes of an instance stay as
 * junctions: edges into a junction are followed through its single outgoing
 * edge when the graph is linked, so an unwired instance port is simply a
 * junction without an outgoing edge.
 */
export interface FlatNode {
  id: string;
  type: string;
  node: NodeConfig;
  origin: NodeOrigin;
  junction?: { kind: 'input' | 'output' | 'error'; instance: string; port: string };
}

export interface FlatEdge {
  from: string;
  fromPort: string;
  to: string;
  toPort: string;
  /** The edge as written, e.g. `auth.denied -> out.in`, for messages. */
  label: string;
  implicit?: boolean;
}

export interface FlatGraph {
  nodes: Map<string, FlatNode>;
  edges: FlatEdge[];
  /** Instance id → its junction ids, for port checks. */
  instances: Map<string, { supernode: string; junctions: FlatNode[] }>;
}

/** `node.port` split on the LAST dot; no dot means port `out` (docs/configuration.md#gatewayyaml). */
export function parseEndpoint(text: string): { node: string; port: string } {
  const dot = text.lastIndexOf('.');
  if (dot === -1) return { node: text, port: 'out' };
  return { node: text.slice(0, dot), port: text.slice(dot + 1) };
}

const BOUNDARY_TYPES = new Set(['input', 'output', 'error']);

/** Inlines supernode instances; every problem found is reported, nothing thrown. */
export function flattenPolicy(
  policy: PolicyConfig,
  policyPath: string,
  supernodes: ReadonlyMap<string, { def: SupernodeConfig; path: string }>,
  issues: ConfigIssue[],
): FlatGraph {
  const graph: FlatGraph = { nodes: new Map(), edges: [], instances: new Map() };
  const where = `policy '${policy.name}'`;

  policy.nodes.forEach((node, i) => {
    const origin = { path: `${policyPath}.nodes[${i}]` };
    if (graph.nodes.has(node.id)) {
      issues.push({ path: `${origin.path}.id`, message: `${where}: duplicate node id '${node.id}'` });
      return;
    }
    if (node.type !== 'supernode') {
      if (BOUNDARY_TYPES.has(node.type)) {
        issues.push({
          path: `${origin.path}.type`,
          message: `${where}: node '${node.id}' has boundary type '${node.type}', which only exists inside a supernode definition`,
        });
      }
      graph.nodes.set(node.id, { id: node.id, type: node.type, node, origin });
      return;
    }
    const name = (node.config ?? {})['name'];
    const entry = typeof name === 'string' ? supernodes.get(name) : undefined;
    if (entry === undefined) {
      issues.push({
        path: `${origin.path}.config.name`,
        message:
          typeof name === 'string'
            ? `${where}: supernode instance '${node.id}' references unknown supernode '${name}'`
            : `${where}: supernode instance '${node.id}' needs config.name`,
      });
      graph.nodes.set(node.id, { id: node.id, type: 'supernode', node, origin });
      return;
    }
    inlineInstance(graph, node.id, entry.def, entry.path, where, issues);
  });

  policy.edges.forEach((edge, i) => addPolicyEdge(graph, edge, `${policyPath}.edges[${i}]`, where, issues));
  return graph;
}

function inlineInstance(
  graph: FlatGraph,
  instance: string,
  def: SupernodeConfig,
  defPath: string,
  where: string,
  issues: ConfigIssue[],
): void {
  const junctions: FlatNode[] = [];
  const inner = new Set<string>();
  def.nodes.forEach((node, i) => {
    const id = `${instance}/${node.id}`;
    const origin = { path: `${defPath}.nodes[${i}]` };
    if (node.type === 'supernode') {
      issues.push({
        path: `${origin.path}.type`,
        message: `${where}: supernode '${def.name}' contains supernode '${node.id}' — supernodes cannot be nested`,
      });
      return;
    }
    if (BOUNDARY_TYPES.has(node.type)) {
      const kind = node.type as 'input' | 'output' | 'error';
      const port =
        kind === 'input'
          ? 'in'
          : node.id === 'output' || node.id === 'error'
            ? defaultPort(node.id)
            : node.id;
      const junction: FlatNode = { id, type: node.type, node, origin, junction: { kind, instance, port } };
      junctions.push(junction);
      graph.nodes.set(id, junction);
      return;
    }
    inner.add(node.id);
    graph.nodes.set(id, { id, type: node.type, node, origin });
  });
  if (!junctions.some((j) => j.junction?.kind === 'error' && j.junction.port === 'error')) {
    const implicit: FlatNode = {
      id: `${instance}/error`,
      type: 'error',
      node: { id: 'error', type: 'error' },
      origin: { path: defPath },
      junction: { kind: 'error', instance, port: 'error' },
    };
    junctions.push(implicit);
    graph.nodes.set(implicit.id, implicit);
  }
  const withErrorEdge = new Set<string>();
  def.edges.forEach((edge, i) => {
    const from = parseEndpoint(edge.from);
    const to = parseEndpoint(edge.to);
    if (from.port === 'error') withErrorEdge.add(from.node);
    graph.edges.push({
      from: `${instance}/${from.node}`,
      fromPort: from.port,
      to: `${instance}/${to.node}`,
      toPort: to.port === 'out' ? 'in' : to.port,
      label: `${edge.from} -> ${edge.to} (supernode '${def.name}', ${defPath}.edges[${i}])`,
    });
  });
  // Black box: inner failures without their own error edge leave through the instance's error port.
  for (const id of inner) {
    if (!withErrorEdge.has(id)) {
      graph.edges.push({
        from: `${instance}/${id}`,
        fromPort: 'error',
        to: `${instance}/error`,
        toPort: 'in',
        label: `implicit error edge of '${instance}/${id}'`,
        implicit: true,
      });
    }
  }
  graph.instances.set(instance, { supernode: def.name, junctions });
}

function defaultPort(boundaryId: string): string {
  return boundaryId === 'output' ? 'success' : 'error';
}

function addPolicyEdge(
  graph: FlatGraph,
  edge: EdgeConfig,
  path: string,
  where: string,
  issues: ConfigIssue[],
): void {
  const from = parseEndpoint(edge.from);
  const to = parseEndpoint(edge.to);
  const label = `${edge.from} -> ${edge.to}`;
  let fromId = from.node;
  let fromPort = from.port;
  let toId = to.node;
  let toPort = to.port === 'out' ? 'in' : to.port;

  const source = graph.instances.get(from.node);
  if (source !== undefined) {
    const wanted = fromPort === 'out' ? 'success' : fromPort;
    const junction = source.junctions.find(
      (j) => j.junction?.kind !== 'input' && j.junction?.port === wanted,
    );
    if (junction === undefined) {
      const ports = source.junctions
        .filter((j) => j.junction?.kind !== 'input')
        .map((j) => j.junction?.port)
        .join(', ');
      issues.push({
        path: `${path}.from`,
        message: `${where}: unknown port '${from.port}' on supernode instance '${from.node}' — instances expose success (alias out) and error${ports ? ` (this one: ${ports})` : ''}`,
      });
      return;
    }
    fromId = junction.id;
    fromPort = 'success';
  }
  const target = graph.instances.get(to.node);
  if (target !== undefined) {
    if (toPort !== 'in') {
      issues.push({
        path: `${path}.to`,
        message: `${where}: edge ${label} targets port '${to.port}' of supernode instance '${to.node}'; the only input is 'in'`,
      });
      return;
    }
    const input = target.junctions.find((j) => j.junction?.kind === 'input');
    if (input === undefined) {
      issues.push({
        path: `${path}.to`,
        message: `${where}: supernode instance '${to.node}' has no input boundary`,
      });
      return;
    }
    toId = input.id;
    toPort = 'in';
  }
  graph.edges.push({ from: fromId, fromPort, to: toId, toPort, label });
}
