import type { EdgeConfig, NodeConfig, PluginConfigEntry, PolicyConfig } from '../config/gateway.js';
import { registry } from '../plugins/index.js';

/**
 * The policy graph of an imported route, written as the source gateway runs it: request-side
 * steps in plugin order, the upstream, then the response-side steps every answer goes through
 * (the upstream's, a 401, a 429, a cache hit). The importers describe a route as steps; this
 * module turns steps into nodes and edges, gives every node a unique id, and shares one policy
 * between routes whose graphs are the same.
 */

/** Where a port leads: the next step, the response chain, the client, or a side node. */
export type Target = 'next' | 'reply' | { step: NodeStep };

export interface NodeStep {
  kind: 'node';
  /** Preferred node id; made unique within the policy. */
  id: string;
  type: string;
  config?: Record<string, unknown>;
  config_ref?: string;
  /** Port → target. Unlisted: a success port goes to `next`, an outcome port to `reply`. */
  ports?: Record<string, Target>;
}

/** Branches on the authenticated consumer (Kong consumer-scoped plugins, APISIX consumer plugins). */
export interface SwitchStep {
  kind: 'switch';
  id: string;
  cases: { consumers: string[]; steps: Step[] }[];
  otherwise: Step[];
}

export type Step = NodeStep | SwitchStep;

export interface PolicyPlan {
  /** After the listener, in order. */
  request: Step[];
  /** The proxying node; absent when the request side always answers (request-termination). */
  upstream?: NodeStep;
  /** Between the upstream and the response chain, on the upstream's path only (cache store). */
  afterUpstream: Step[];
  /** Before the client, on every path. */
  response: Step[];
}

export function node(
  id: string,
  type: string,
  config?: Record<string, unknown>,
  ports?: Record<string, Target>,
): NodeStep {
  return {
    kind: 'node',
    id,
    type,
    ...(config === undefined ? {} : { config: clean(config) }),
    ...(ports ? { ports } : {}),
  };
}

/** A copy without `undefined` values (and without empty objects they leave), for YAML output. */
export function clean<T>(value: T): T {
  if (Array.isArray(value)) return value.filter((v) => v !== undefined).map((v) => clean(v) as unknown) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = clean(v);
    return out as T;
  }
  return value;
}

/** The output ports a node type declares, with their kinds (`success`, `outcome`, `error`). */
function outputsOf(type: string): [string, string][] {
  const plugin = registry.get(type);
  if (plugin === undefined) throw new Error(`import: unknown node type '${type}'`);
  return Object.entries(plugin.outputs).map(([port, spec]) => [port, (spec as { kind: string }).kind]);
}

/** Turns a plan into the nodes and edges of one policy (without its name). */
export function buildPolicy(plan: PolicyPlan): Pick<PolicyConfig, 'nodes' | 'edges'> {
  // Ids are given in flow order (which is also the order nodes are listed in), then the graph is
  // built back to front, so each step knows the entry of what follows it.
  const ids = new Map<object, string>();
  const rankOf = new Map<string, number>([['listener', -1]]);
  const taken = new Set(['listener', 'client']);
  const assign = (key: object, base: string): void => {
    const stem = base.replace(/[./]/g, '-');
    let id = stem;
    for (let n = 2; taken.has(id) || id.startsWith('global:'); n++) id = `${stem}-${n}`;
    taken.add(id);
    ids.set(key, id);
    rankOf.set(id, rankOf.size);
  };
  const name = (step: Step): void => {
    if (step.kind === 'switch') {
      step.cases.forEach((c, i) => {
        assign(c, step.cases.length === 1 ? step.id : `${step.id}-${i + 1}`);
        c.steps.forEach(name);
      });
      step.otherwise.forEach(name);
      return;
    }
    assign(step, step.id);
    for (const target of Object.values(step.ports ?? {})) if (typeof target === 'object') name(target.step);
  };
  [plan.request, plan.upstream ? [plan.upstream] : [], plan.afterUpstream, plan.response]
    .flat()
    .forEach(name);
  rankOf.set('client', rankOf.size);

  const nodes: NodeConfig[] = [];
  const edges: EdgeConfig[] = [];
  const edge = (from: string, port: string, to: string): void => {
    edges.push({ from: `${from}.${port}`, to: `${to}.in` });
  };
  const idOf = (key: object): string => {
    const id = ids.get(key);
    if (id === undefined) throw new Error('import: a step without an id');
    return id;
  };
  const addStep = (step: Step, next: string, reply: string): string => {
    if (step.kind === 'switch') {
      let entry = chain(step.otherwise, next, reply);
      for (let i = step.cases.length - 1; i >= 0; i--) {
        const c = step.cases[i];
        if (c === undefined) continue;
        const id = idOf(c);
        const caseEntry = chain(c.steps, next, reply);
        nodes.push({ id, type: 'condition', config: { conditions: [['consumer_name', 'in', c.consumers]] } });
        edge(id, 'true', caseEntry);
        edge(id, 'false', entry);
        entry = id;
      }
      return entry;
    }
    const id = idOf(step);
    const n: NodeConfig = { id, type: step.type };
    if (step.config_ref !== undefined) n.config_ref = step.config_ref;
    if (step.config !== undefined && Object.keys(step.config).length > 0) n.config = step.config;
    nodes.push(n);
    for (const [port, kind] of outputsOf(step.type)) {
      if (kind === 'error') continue;
      const target = step.ports?.[port] ?? (kind === 'success' ? 'next' : 'reply');
      if (target === 'next') edge(id, port, next);
      else if (target === 'reply') edge(id, port, reply === '' ? next : reply);
      else edge(id, port, addStep(target.step, next, reply));
    }
    return id;
  };
  const chain = (steps: Step[], next: string, reply: string): string => {
    let entry = next;
    for (let i = steps.length - 1; i >= 0; i--) {
      const step = steps[i];
      if (step !== undefined) entry = addStep(step, entry, reply);
    }
    return entry;
  };

  // An outcome on the response side (a cache hit port, a preflight) goes on to the next step.
  const responseEntry = chain(plan.response, 'client', '');
  const afterEntry = chain(plan.afterUpstream, responseEntry, responseEntry);
  const upstreamEntry =
    plan.upstream === undefined ? responseEntry : addStep(plan.upstream, afterEntry, responseEntry);
  const requestEntry = chain(plan.request, upstreamEntry, responseEntry);
  nodes.push({ id: 'listener', type: 'listener' }, { id: 'client', type: 'client' });
  edges.push({ from: 'listener.out', to: `${requestEntry}.in` });

  const rank = (id: string): number => rankOf.get(id) ?? 0;
  nodes.sort((a, b) => rank(a.id) - rank(b.id));
  const from = (e: EdgeConfig): number => rank(e.from.slice(0, e.from.lastIndexOf('.')));
  edges.sort((a, b) => from(a) - from(b));
  return { nodes, edges };
}

/**
 * Policies shared by routes whose graphs are identical: `policyFor` answers the name of the
 * policy holding that graph, creating it under `preferred` (made unique) the first time.
 */
export class PolicySet {
  readonly policies: PolicyConfig[] = [];
  readonly #byGraph = new Map<string, string>();
  readonly #names = new Set<string>();

  /** `preferred`: names to try in order; the last is made unique when all are taken. */
  policyFor(preferred: string[], graph: Pick<PolicyConfig, 'nodes' | 'edges'>): string {
    const key = JSON.stringify(graph);
    const found = this.#byGraph.get(key);
    if (found !== undefined) return found;
    const free = preferred.find((n) => !this.#names.has(n));
    const name = uniqueName(free ?? preferred[preferred.length - 1] ?? 'policy', this.#names);
    this.#byGraph.set(key, name);
    this.policies.push({ name, nodes: graph.nodes, edges: graph.edges });
    return name;
  }
}

/**
 * A node config used by two or more nodes (the request and response halves of cors, a global
 * plugin copied into every policy) becomes one `plugin_configs` entry the nodes name with
 * `config_ref`, so the operator edits it once.
 */
export function shareConfigs(policies: PolicyConfig[], pluginConfigs: PluginConfigEntry[]): void {
  const uses = new Map<string, NodeConfig[]>();
  for (const p of policies)
    for (const n of p.nodes) {
      if (n.config_ref !== undefined || n.config === undefined || n.type === 'condition') continue;
      const key = JSON.stringify([n.type, n.config]);
      uses.set(key, [...(uses.get(key) ?? []), n]);
    }
  const names = new Set(pluginConfigs.map((c) => c.name));
  for (const nodes of uses.values()) {
    const first = nodes[0];
    if (nodes.length < 2 || first?.config === undefined) continue;
    const name = uniqueName(first.id.replace(/-response$/, ''), names);
    pluginConfigs.push({ name, type: first.type, config: first.config } as PluginConfigEntry);
    for (const n of nodes) {
      delete n.config;
      n.config_ref = name;
    }
  }
}

/** `base`, or `base-2`, `base-3`… when taken; at most 128 characters. */
export function uniqueName(base: string, taken: Set<string>): string {
  const stem = (base === '' ? 'imported' : base).slice(0, 120);
  let name = stem;
  for (let n = 2; taken.has(name); n++) name = `${stem}-${n}`;
  taken.add(name);
  return name;
}

/** Stores named after their Redis endpoint, one per distinct URL. */
export class StoreSet {
  readonly stores: { name: string; type: 'redis'; url: string }[] = [];
  readonly #byUrl = new Map<string, string>();
  readonly #names = new Set<string>();

  storeFor(
    host: string,
    port: number,
    options: { password?: string; username?: string; database?: number; tls?: boolean } = {},
  ): string {
    const auth =
      options.password !== undefined && options.password !== ''
        ? `${encodeURIComponent(options.username ?? '')}:${encodeURIComponent(options.password)}@`
        : '';
    const db = options.database !== undefined && options.database !== 0 ? `/${options.database}` : '';
    const url = `${options.tls === true ? 'rediss' : 'redis'}://${auth}${host}:${port}${db}`;
    const found = this.#byUrl.get(url);
    if (found !== undefined) return found;
    const name = uniqueName(this.stores.length === 0 ? 'redis' : `redis-${host}-${port}`, this.#names);
    this.#byUrl.set(url, name);
    this.stores.push({ name, type: 'redis', url });
    return name;
  }
}
