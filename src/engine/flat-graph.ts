import type { EdgeConfig, NodeConfig, PolicyConfig, SupernodeConfig } from '../config/gateway.js';
import { didYouMean, type ConfigIssue } from '../config/schema-validate.js';
import { MAX_SUPERNODE_DEPTH, parseEndpoint, resolveParams, substituteParams } from './supernode-rules.js';

export { parseEndpoint } from './supernode-rules.js';

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
  /** Config path of the written edge (`policies[0].edges[3]`); absent for implicit and spliced edges. */
  path?: string;
  implicit?: boolean;
}

export interface FlatGraph {
  nodes: Map<string, FlatNode>;
  edges: FlatEdge[];
  /** Instance id → its junction ids, for port checks. */
  instances: Map<string, { supernode: string; junctions: FlatNode[] }>;
  /** Nested instances left out (unknown supernode, cycle): reported per definition, so their edges are skipped. */
  broken: Set<string>;
}

const BOUNDARY_TYPES = new Set(['input', 'output', 'error']);

/**
 * Where a node that is not written in the policy itself comes from (a global
 * rule's instance: `global_rules[0]`), for issue paths; see global-rules.ts.
 */
export const spliceOrigins = new WeakMap<NodeConfig, { path: string; paramsPath: string }>();

type Supernodes = ReadonlyMap<string, { def: SupernodeConfig; path: string }>;

/** A `phase: response` global rule, checked (global-rules.ts), to splice before every client node. */
export interface ResponseSplice {
  name: string;
  /** `global:<rule>`; each client gets its own instance, `global:<rule>@<client id>`. */
  instanceId: string;
  entry: { def: SupernodeConfig; path: string };
  params: Readonly<Record<string, unknown>>;
}

/**
 * The response rules of one compile's copy of a policy (withGlobalRules makes the copy, so a
 * stored policy never carries them from one compile to the next).
 */
export const responseSplices = new WeakMap<PolicyConfig, readonly ResponseSplice[]>();

/** Inlines supernode instances; every problem found is reported, nothing thrown. */
export function flattenPolicy(
  policy: PolicyConfig,
  policyPath: string,
  supernodes: ReadonlyMap<string, { def: SupernodeConfig; path: string }>,
  issues: ConfigIssue[],
): FlatGraph {
  const graph: FlatGraph = { nodes: new Map(), edges: [], instances: new Map(), broken: new Set() };
  const where = `policy '${policy.name}'`;

  policy.nodes.forEach((node, i) => {
    const spliced = spliceOrigins.get(node);
    const origin = { path: spliced?.path ?? `${policyPath}.nodes[${i}]` };
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
            ? `${where}: supernode instance '${node.id}' references unknown supernode '${name}'${didYouMean(name, supernodes.keys())}`
            : `${where}: supernode instance '${node.id}' needs config.name`,
      });
      graph.nodes.set(node.id, { id: node.id, type: 'supernode', node, origin });
      return;
    }
    const label = `${where}: supernode instance '${node.id}'`;
    const paramsPath = spliced?.paramsPath ?? `${origin.path}.config.params`;
    const params = resolveParams(entry.def, (node.config ?? {})['params'], paramsPath, label, issues);
    if (params === undefined) return;
    inlineInstance(graph, node.id, entry, params, [entry.def.name], { supernodes, where, issues });
  });

  policy.edges.forEach((edge, i) =>
    addEdge(graph, '', edge, `${policyPath}.edges[${i}]`, `${edge.from} -> ${edge.to}`, where, issues),
  );
  const response = responseSplices.get(policy);
  if (response !== undefined) spliceBeforeClients(graph, response, { supernodes, where, issues });
  return graph;
}

/**
 * docs/global-rules.md#response-rules: every edge into a client node (the policy's own and those
 * inside supernode instances, request rules included) is led through one instance per response
 * rule, in list order, and then to that client. A rule's `output` and its error port both go on
 * to the next hop: a failing response node answers with the error response it prepared (the
 * policy's error_handler is not run again, it may be what led here).
 */
function spliceBeforeClients(graph: FlatGraph, rules: readonly ResponseSplice[], scope: InlineScope): void {
  const clients = [...graph.nodes.values()].filter((n) => n.junction === undefined && n.type === 'client');
  for (const client of clients) {
    const into = graph.edges.filter((e) => e.to === client.id);
    if (into.length === 0) continue;
    const hops: { input: string; exits: string[] }[] = [];
    for (const rule of rules) {
      const id = `${rule.instanceId}@${client.id}`;
      inlineInstance(graph, id, rule.entry, rule.params, [rule.entry.def.name], scope);
      const junctions = graph.instances.get(id)?.junctions ?? [];
      const input = junctions.find((j) => j.junction?.kind === 'input');
      // checkGlobalRules let through only supernodes whose one output boundary is `output`.
      const exits = junctions.filter((j) => j.junction?.kind !== 'input').map((j) => j.id);
      if (input === undefined) return;
      hops.push({ input: input.id, exits });
    }
    const first = hops[0];
    if (first === undefined) return;
    for (const edge of into) edge.to = first.input;
    hops.forEach((hop, i) => {
      const next = hops[i + 1]?.input ?? client.id;
      for (const exit of hop.exits) {
        graph.edges.push({
          from: exit,
          fromPort: 'success',
          to: next,
          toPort: 'in',
          label: `response rule '${rules[i]?.name ?? ''}' before '${client.id}'`,
          implicit: true,
        });
      }
    });
  }
}

interface InlineScope {
  supernodes: Supernodes;
  where: string;
  issues: ConfigIssue[];
}

/**
 * Inlines one instance as `<instance>/<inner id>` nodes, with `{{params.x}}`
 * replaced by the instance's values; an inner `type: supernode` is inlined in
 * turn (`<instance>/<inner instance>/<id>`), `chain` guarding against cycles.
 */
function inlineInstance(
  graph: FlatGraph,
  instance: string,
  entry: { def: SupernodeConfig; path: string },
  params: Readonly<Record<string, unknown>>,
  chain: readonly string[],
  scope: InlineScope,
): void {
  const { def, path: defPath } = entry;
  const { where, issues } = scope;
  const declared = def.params ?? {};
  const junctions: FlatNode[] = [];
  const inner = new Set<string>();
  const nested = new Set<string>();
  def.nodes.forEach((written, i) => {
    const id = `${instance}/${written.id}`;
    const origin = { path: `${defPath}.nodes[${i}]` };
    const label = `${where}: node '${id}' (supernode '${def.name}')`;
    const node: NodeConfig =
      written.config === undefined || written.config === null
        ? written
        : {
            ...written,
            config: substituteParams(
              written.config,
              params,
              declared,
              `${origin.path}.config`,
              label,
              issues,
            ) as Record<string, unknown>,
          };
    if (node.type === 'supernode') {
      const name = (node.config ?? {})['name'];
      const target = typeof name === 'string' ? scope.supernodes.get(name) : undefined;
      // Unknown names, cycles and depth are reported once per definition (checkSupernodeNesting);
      // edges to the instance left out are then not reported again.
      if (
        target === undefined ||
        typeof name !== 'string' ||
        chain.includes(name) ||
        chain.length >= MAX_SUPERNODE_DEPTH
      ) {
        graph.broken.add(id);
        return;
      }
      const values = resolveParams(
        target.def,
        (node.config ?? {})['params'],
        `${origin.path}.config.params`,
        label,
        issues,
      );
      if (values === undefined) return;
      nested.add(written.id);
      inlineInstance(graph, id, target, values, [...chain, name], scope);
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
    // A client ends the request and has no error port (an inner one ends an outcome in place).
    if (node.type !== 'client' && node.type !== 'listener') inner.add(node.id);
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
  graph.instances.set(instance, { supernode: def.name, junctions });
  const withErrorEdge = new Set<string>();
  def.edges.forEach((edge, i) => {
    const from = parseEndpoint(edge.from);
    if (from.port === 'error') withErrorEdge.add(from.node);
    const label = `${edge.from} -> ${edge.to} (supernode '${def.name}', ${defPath}.edges[${i}])`;
    addEdge(graph, `${instance}/`, edge, `${defPath}.edges[${i}]`, label, where, issues);
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
  // …and so do failures leaving a nested instance whose error port is not wired inside.
  for (const id of nested) {
    if (!withErrorEdge.has(id)) {
      graph.edges.push({
        from: `${instance}/${id}/error`,
        fromPort: 'success',
        to: `${instance}/error`,
        toPort: 'in',
        label: `implicit error edge of '${instance}/${id}'`,
        implicit: true,
      });
    }
  }
}

function defaultPort(boundaryId: string): string {
  return boundaryId === 'output' ? 'success' : 'error';
}

/**
 * Adds one written edge, `prefix` being `<instance>/` inside a definition and
 * '' in a policy; an endpoint naming an instance goes to its boundary junction.
 */
function addEdge(
  graph: FlatGraph,
  prefix: string,
  edge: EdgeConfig,
  path: string,
  label: string,
  where: string,
  issues: ConfigIssue[],
): void {
  const from = parseEndpoint(edge.from);
  const to = parseEndpoint(edge.to);
  let fromId = prefix + from.node;
  let fromPort = from.port;
  let toId = prefix + to.node;
  let toPort = to.port === 'out' ? 'in' : to.port;
  if (graph.broken.has(fromId) || graph.broken.has(toId)) return;

  const source = graph.instances.get(fromId);
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
  const target = graph.instances.get(toId);
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
  graph.edges.push({ from: fromId, fromPort, to: toId, toPort, label, path });
}
