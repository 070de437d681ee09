import type { PluginConfigEntry, PolicyConfig, SupernodeConfig } from '../config/gateway.js';
import type { ConsumerIndex } from '../config/consumers.js';
import { didYouMean, suggestion, type ConfigIssue } from '../config/schema-validate.js';
import { warnUnverifiedTls } from './verify-warning.js';
import { ConfigError, type GatewayScope, type PluginDefinition, type PluginEnv } from '../core/plugin.js';
import type { Logger } from '../core/logger.js';
import { flattenPolicy, type FlatEdge, type FlatGraph, type FlatNode } from './flat-graph.js';
import { checkCachePairs } from './cache-pairs.js';
import {
  newNodeStats,
  type BufferingReport,
  type CompiledNode,
  type CompiledPolicy,
} from '../core/graph-types.js';
import { resolveNodeConfig } from './node-config.js';
import { readsFiles } from './file-keys.js';
import type { StoreSet } from '../stores/index.js';

/** Configs written for earlier reference releases left outcome ports unwired; migrate wires them to the client. */
const MIGRATE_HINT = " (or run 'switchyard migrate' to wire unwired outcome ports to the client node)";

type AnyDefinition = PluginDefinition<never, string>;

export interface CompileContext {
  registry: ReadonlyMap<string, AnyDefinition>;
  supernodes: ReadonlyMap<string, { def: SupernodeConfig; path: string }>;
  sharedConfigs: ReadonlyMap<string, PluginConfigEntry>;
  env: NodeJS.ProcessEnv;
  logger: Logger;
  warnings: string[];
  consumers: ConsumerIndex;
  /** Directory of gateway.yaml, handed to nodes that read files beside it (scripts). */
  configDir?: string | undefined;
  /** Stores resolved from the configuration's `stores:` section. */
  stores: StoreSet;
  /** The gateway's lifetime scope, handed to every node as `env.scope`. */
  scope: GatewayScope;
  templateFactory: (
    where: { policy: string; node: string },
    warn: (message: string) => void,
  ) => PluginEnv['template'];
}

interface Prepared {
  flat: FlatNode;
  def: AnyDefinition;
  config: Record<string, unknown>;
}

/**
 * Compiles one policy: inline supernodes, resolve node configs, check every
 * wiring rule (all problems reported), infer streaming, create the node
 * instances and link them. Returns undefined when `issues` got new entries.
 */
export function compilePolicy(
  policy: PolicyConfig,
  policyPath: string,
  cc: CompileContext,
  issues: ConfigIssue[],
): CompiledPolicy | undefined {
  const before = issues.length;
  const where = `policy '${policy.name}'`;
  const graph = flattenPolicy(policy, policyPath, cc.supernodes, issues);

  const prepared = new Map<string, Prepared>();
  /** A node config names a file its node reads when created (src/engine/file-keys.ts). */
  let files = false;
  for (const flat of graph.nodes.values()) {
    if (flat.junction !== undefined || flat.type === 'supernode') continue;
    const label = `${where}: node '${flat.id}' (type '${flat.type}')`;
    if (flat.type === 'unpack') {
      issues.push({
        path: `${flat.origin.path}.type`,
        message: `${label}: the unpack node is not implemented`,
      });
      continue;
    }
    const def = cc.registry.get(flat.type);
    if (def === undefined) {
      issues.push({
        path: `${flat.origin.path}.type`,
        message: `${where}: node '${flat.id}': Unknown plugin type: ${flat.type}${didYouMean(flat.type, cc.registry.keys())}`,
      });
      continue;
    }
    const config = resolveNodeConfig(
      flat.node,
      def,
      flat.origin.path,
      label,
      cc.sharedConfigs,
      issues,
      cc.env,
    );
    if (config !== undefined) {
      prepared.set(flat.id, { flat, def, config });
      if (!files) files = readsFiles(def.schema, config);
    }
  }

  const outgoing = checkWiring(policy, policyPath, graph, cc, issues);
  // The nodes are created beside config and wiring errors too, so an error only `create` finds
  // (key-auth without keys) shows in the same pass (F19); such a compile is closed below.
  const wired = issues.length === before;

  const edgesFrom = new Map<string, FlatEdge[]>();
  for (const edge of graph.edges) {
    const list = edgesFrom.get(edge.from);
    if (list === undefined) edgesFrom.set(edge.from, [edge]);
    else list.push(edge);
  }
  const { streaming, buffering } = wired
    ? inferStreaming(graph, prepared, outgoing, edgesFrom)
    : { streaming: new Set<string>(), buffering: [] };
  const requestBuffering = inferRequestStreaming(prepared);
  const instances = new Map<string, CompiledNode>();
  const pushWarning = (message: string) => cc.warnings.push(message);
  for (const { flat, def, config } of prepared.values()) {
    const warn = (key: string, message: string) =>
      cc.warnings.push(`${where}, node '${flat.id}': ${key}: ${message}`);
    const env: PluginEnv = {
      policy: policy.name,
      nodeId: flat.id,
      logger: cc.logger,
      streaming: streaming.has(flat.id),
      warn,
      template: cc.templateFactory({ policy: policy.name, node: flat.id }, pushWarning),
      consumers: cc.consumers,
      configDir: cc.configDir,
      stores: cc.stores,
      scope: cc.scope,
      sharedConfig: (name, type, key) => sharedConfigFor(name, type, key, cc),
    };
    warnUnverifiedTls(config, warn);
    try {
      const instance = def.create(config as never, env);
      instances.set(flat.id, {
        id: flat.id,
        type: flat.type,
        instance,
        isClient: flat.type === 'client',
        next: {},
        onError: undefined,
        definition: def,
        stats: newNodeStats(),
      });
    } catch (err) {
      const key = err instanceof ConfigError && err.path !== '' ? `.${err.path}` : '';
      issues.push({
        path: `${flat.origin.path}.config${key}`,
        message: `${where}: node '${flat.id}' (type '${flat.type}'): ${key ? `config${key} ` : ''}${withStoreSuggestion((err as Error).message, cc.stores.names)}`,
      });
    }
  }
  // A cache half that failed above would be reported again as an unpaired one.
  const cachePairs =
    issues.length > before
      ? []
      : checkCachePairs(
          where,
          [...instances.values()].map((n) => ({
            node: n.id,
            path: prepared.get(n.id)?.flat.origin.path ?? policyPath,
            target: n.instance.cache,
          })),
          issues,
        );
  if (issues.length > before) {
    for (const node of instances.values()) void node.instance.close?.();
    return undefined;
  }

  link(graph, instances, outgoing);
  const listener = [...instances.values()].find((n) => n.type === 'listener');
  return {
    name: policy.name,
    entry: listener?.next['success'],
    errorHandler: policy.error_handler === undefined ? undefined : instances.get(policy.error_handler),
    nodes: instances,
    buffering,
    cachePairs,
    streaming: [...streaming],
    streamsRequestBody: requestBuffering === null,
    requestBuffering: requestBuffering ?? [],
    readsFiles: files,
  };
}

/**
 * PluginEnv.sharedConfig: the `plugin_configs` entry `name` resolved as a node of `type` would see
 * it, or a ConfigError at `key` (the node's config key holding the reference).
 */
function sharedConfigFor(
  name: string,
  type: string,
  key: string,
  cc: CompileContext,
): Record<string, unknown> {
  const def = cc.registry.get(type);
  if (def === undefined) throw new ConfigError(key, `unknown plugin type '${type}'`);
  const shared = cc.sharedConfigs.get(name);
  if (shared === undefined)
    throw new ConfigError(
      key,
      `'${name}' names no plugin_configs entry${didYouMean(name, cc.sharedConfigs.keys())}`,
    );
  if (shared.type !== type)
    throw new ConfigError(
      key,
      `'${name}' is a '${shared.type}' config; a config of type '${type}' is needed here`,
    );
  const found: ConfigIssue[] = [];
  const node = { id: name, type, config_ref: name };
  const config = resolveNodeConfig(
    node,
    def,
    '',
    `plugin_configs '${name}'`,
    cc.sharedConfigs,
    found,
    cc.env,
  );
  if (config === undefined) {
    const more = found.length > 1 ? ` (and ${found.length - 1} more)` : '';
    throw new ConfigError(key, `${found[0]?.message ?? `plugin_configs '${name}' is not valid`}${more}`);
  }
  return config;
}

/** `unknown store 'mian'` thrown by a node's `create` gets the suggestion among the declared stores (F20). */
function withStoreSuggestion(message: string, stores: readonly string[]): string {
  const name = /^unknown store '(.*)'$/.exec(message)?.[1];
  return name === undefined ? message : `${message}${didYouMean(name, stores)}`;
}

function normalizePort(port: string): string {
  return port === 'out' ? 'success' : port;
}

/** A supernode boundary's one output. */
const JUNCTION_PORTS: ReadonlySet<string> = new Set(['success']);
/** Output ports of each plugin type, built once: every edge of every policy asks. */
const portsOfType = new WeakMap<AnyDefinition, ReadonlySet<string>>();

function declaredOutputs(flat: FlatNode, def: AnyDefinition | undefined): ReadonlySet<string> | undefined {
  if (flat.junction !== undefined) return JUNCTION_PORTS;
  if (def === undefined) return undefined;
  let ports = portsOfType.get(def);
  if (ports === undefined) {
    const set = new Set(Object.keys(def.outputs));
    if (def.noErrorPort !== true) set.add('error');
    ports = set;
    portsOfType.set(def, ports);
  }
  return ports;
}

/**
 * Checks every wiring rule; returns the edge leaving each output port (`node.port`), which the
 * later passes share when no rule failed (then each port has at most one edge).
 */
function checkWiring(
  policy: PolicyConfig,
  policyPath: string,
  graph: FlatGraph,
  cc: CompileContext,
  issues: ConfigIssue[],
): Map<string, FlatEdge> {
  const where = `policy '${policy.name}'`;
  const before = issues.length;
  const outgoing = new Map<string, FlatEdge>();
  // Any input takes several incoming edges (fan-in): a request walks one path, so a node reached
  // from several branches runs once on whichever led to it (docs/configuration.md#compile-rules).
  const touched = new Set<string>();
  /**
   * Ports a rejected edge meant to wire (`quota.success -> lookp.in`, `auth.deny` for `denied`):
   * their "must be wired" would only repeat that edge's error (F18).
   */
  const meant = new Set<string>();
  const nodeIds = [...graph.nodes.keys()].filter((id) => !id.includes('/'));

  for (const edge of graph.edges) {
    edge.fromPort = normalizePort(edge.fromPort);
    // An edge's own errors point at its line (`policies[0].edges[3]`, F18).
    const at = edge.path ?? policyPath;
    const from = graph.nodes.get(edge.from);
    const to = graph.nodes.get(edge.to);
    if (from === undefined || to === undefined) {
      const missing = from === undefined ? edge.from : edge.to;
      const near = suggestion(missing, nodeIds);
      issues.push({
        path: at,
        message: `${where}: edge ${edge.label} references unknown node '${missing}'${near === undefined ? '' : ` (did you mean '${near}'?)`}`,
      });
      const source = from === undefined ? near : edge.from;
      if (source !== undefined) meant.add(`${source}.${edge.fromPort}`);
      for (const id of [source, to === undefined ? near : edge.to]) if (id !== undefined) touched.add(id);
      continue;
    }
    touched.add(edge.from);
    touched.add(edge.to);
    const fromDef = cc.registry.get(from.type);
    const ports = declaredOutputs(from, fromDef);
    if (ports !== undefined && !ports.has(edge.fromPort)) {
      const near = suggestion(edge.fromPort, ports);
      if (near !== undefined) meant.add(`${edge.from}.${near}`);
      issues.push({
        path: at,
        message: `${where}: edge ${edge.label}: node '${edge.from}' (type '${from.type}') has no output port '${edge.fromPort}'${near === undefined ? '' : ` (did you mean '${near}'?)`} (ports: ${[...ports].join(', ') || 'none'})`,
      });
    }
    const toDef = cc.registry.get(to.type);
    if (edge.toPort !== 'in') {
      issues.push({
        path: at,
        message: `${where}: edge ${edge.label}: target port must be 'in' (got '${edge.toPort}')`,
      });
    } else if (to.junction === undefined && toDef?.input === null) {
      issues.push({
        path: at,
        message: `${where}: edge ${edge.label}: node '${edge.to}' has no input port`,
      });
    }
    const key = `${edge.from}.${edge.fromPort}`;
    if (outgoing.has(key)) {
      issues.push({
        path: at,
        message: `${where}: output port '${edge.fromPort}' of node '${edge.from}' has more than one edge (fan-out is not allowed)`,
      });
    } else outgoing.set(key, edge);
  }

  const regular = [...graph.nodes.values()].filter((n) => n.junction === undefined);
  const listeners = regular.filter((n) => n.type === 'listener');
  if (listeners.length === 0)
    issues.push({ path: policyPath, message: `${where}: a listener node is required` });
  if (listeners.length > 1) {
    issues.push({
      path: policyPath,
      message: `${where}: exactly one listener node is allowed (found ${listeners.length})`,
    });
  }
  if (!regular.some((n) => n.type === 'client')) {
    issues.push({ path: policyPath, message: `${where}: a client node is required` });
  }
  if (policy.error_handler !== undefined) {
    const eh = graph.nodes.get(policy.error_handler);
    if (eh === undefined || eh.junction !== undefined) {
      issues.push({
        path: `${policyPath}.error_handler`,
        message: `${where}: error_handler '${policy.error_handler}' names no node of this policy`,
      });
    }
  }
  for (const node of regular) {
    if (!touched.has(node.id) && node.id !== policy.error_handler && !node.id.includes('/')) {
      issues.push({
        path: node.origin.path,
        message: `${where}: node '${node.id}' is not connected to anything`,
      });
    }
    const def = cc.registry.get(node.type);
    if (def === undefined) continue;
    for (const [port, spec] of Object.entries(def.outputs)) {
      if (spec.kind === 'error') continue;
      if (!outgoing.has(`${node.id}.${port}`) && !meant.has(`${node.id}.${port}`)) {
        issues.push({
          path: node.origin.path,
          message: `${where}: output port '${port}' of node '${node.id}' (type '${node.type}') must be wired — add an edge from '${node.id}.${port}'${MIGRATE_HINT}`,
        });
      }
    }
  }
  for (const [instance, { junctions }] of graph.instances) {
    for (const j of junctions) {
      if (j.junction?.kind !== 'output') continue;
      if (!outgoing.has(`${j.id}.success`) && !meant.has(`${instance}.${j.junction.port}`)) {
        const port = j.junction.port;
        issues.push({
          path: policyPath,
          message: `${where}: output port '${port}' of supernode instance '${instance}' must be wired — add an edge from '${instance}.${port}'${MIGRATE_HINT}`,
        });
      }
    }
  }
  if (issues.length === before) checkCycles(graph, outgoing, where, policyPath, issues);
  return outgoing;
}

/** Follows junctions: an edge into an instance boundary continues along the boundary's own edge. */
function resolveTarget(
  graph: FlatGraph,
  outgoing: ReadonlyMap<string, FlatEdge>,
  id: string,
): string | undefined {
  let current: string | undefined = id;
  for (let hops = 0; current !== undefined && hops < 64; hops++) {
    const node = graph.nodes.get(current);
    if (node?.junction === undefined) return current;
    current = outgoing.get(`${current}.success`)?.to;
  }
  return undefined;
}

function checkCycles(
  graph: FlatGraph,
  outgoing: ReadonlyMap<string, FlatEdge>,
  where: string,
  policyPath: string,
  issues: ConfigIssue[],
): void {
  const edgesFrom = new Map<string, FlatEdge[]>();
  for (const edge of graph.edges) {
    const list = edgesFrom.get(edge.from);
    if (list === undefined) edgesFrom.set(edge.from, [edge]);
    else list.push(edge);
  }
  const successors = (id: string): { target: string; edge: FlatEdge }[] => {
    const out: { target: string; edge: FlatEdge }[] = [];
    for (const e of edgesFrom.get(id) ?? []) {
      const target = resolveTarget(graph, outgoing, e.to);
      if (target !== undefined) out.push({ target, edge: e });
    }
    return out;
  };
  const state = new Map<string, 1 | 2>();
  // Depth-first, the path so far in `trail` (entered on the way down, left on the way up).
  const trail: string[] = [];
  const visit = (id: string): boolean => {
    state.set(id, 1);
    trail.push(id);
    for (const { target: next, edge } of successors(id)) {
      const s = state.get(next);
      if (s === 1) {
        const loop = [...trail.slice(trail.indexOf(next)), next].join(' → ');
        // Reported at the edge that closes the loop (`policies[0].edges[4]`).
        issues.push({
          path: edge.path ?? policyPath,
          message: `${where}: the graph has a cycle: ${loop} (closed by edge ${edge.label})`,
        });
        return true;
      }
      if (s === undefined && visit(next)) return true;
    }
    trail.pop();
    state.set(id, 2);
    return false;
  };
  for (const node of graph.nodes.values()) {
    if (node.junction === undefined && !state.has(node.id) && visit(node.id)) return;
  }
}

function link(
  graph: FlatGraph,
  instances: Map<string, CompiledNode>,
  outgoing: ReadonlyMap<string, FlatEdge>,
): void {
  for (const edge of graph.edges) {
    const from = instances.get(edge.from);
    if (from === undefined) continue;
    const targetId = resolveTarget(graph, outgoing, edge.to);
    const target = targetId === undefined ? undefined : instances.get(targetId);
    if (edge.fromPort === 'error') (from as { onError: CompiledNode | undefined }).onError = target;
    else if (target !== undefined) from.next[edge.fromPort] = target;
  }
}

/**
 * docs/configuration.md#streaming: an upstream relays as the response arrives unless a node
 * reachable from its success port reads the response body.
 */
function inferStreaming(
  graph: FlatGraph,
  prepared: ReadonlyMap<string, Prepared>,
  outgoing: ReadonlyMap<string, FlatEdge>,
  edgesFrom: ReadonlyMap<string, readonly FlatEdge[]>,
): { streaming: Set<string>; buffering: BufferingReport[] } {
  const streaming = new Set<string>();
  const buffering: BufferingReport[] = [];
  for (const { flat, def } of prepared.values()) {
    if (def.relaysResponse !== true && def.relaysOn === undefined) continue;
    const start = outgoing.get(`${flat.id}.${def.relaysOn ?? 'success'}`);
    const queue = start ? [resolveTarget(graph, outgoing, start.to)] : [];
    const seen = new Set<string>();
    let blocker: string | undefined;
    while (queue.length > 0 && blocker === undefined) {
      const id = queue.shift();
      if (id === undefined || seen.has(id)) continue;
      seen.add(id);
      const p = prepared.get(id);
      if (p?.def.readsResponseBody?.(p.config as never) === true) blocker = id;
      for (const e of edgesFrom.get(id) ?? []) queue.push(resolveTarget(graph, outgoing, e.to));
    }
    if (blocker === undefined) streaming.add(flat.id);
    else buffering.push({ upstream: flat.id, blocked_by: blocker });
  }
  return { streaming, buffering };
}

/**
 * docs/routing.md#request-bodies: the body is read from the client before the graph runs, so one
 * node anywhere in the policy that may read it (its type does not declare `readsRequestBody:
 * false`, or its instance's `readsRequestBody(config)` is true) buffers it for every upstream.
 * Returns null when the body streams, else one report per upstream naming the first such node in
 * the policy's order.
 */
function inferRequestStreaming(prepared: ReadonlyMap<string, Prepared>): BufferingReport[] | null {
  // Without an upstream nothing takes the body as it arrives: it is read whole, so a client that
  // trickles it is still answered 408 rather than by a node that answered before it ended.
  if (![...prepared.values()].some(({ def }) => def.relaysResponse === true)) return [];
  let reader: string | undefined;
  for (const { flat, def, config } of prepared.values()) {
    const reads = def.readsRequestBody;
    if (typeof reads === 'function' ? reads(config as never) : reads !== false) {
      reader = flat.id;
      break;
    }
  }
  if (reader === undefined) return null;
  const blocked_by = reader;
  const reports: BufferingReport[] = [];
  for (const { flat, def } of prepared.values()) {
    if (def.relaysResponse === true) reports.push({ upstream: flat.id, blocked_by });
  }
  return reports;
}
