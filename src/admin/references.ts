import type { GatewayConfig, NodeConfig } from '../config/gateway.js';
import type { ConfigIssue } from '../config/schema-validate.js';

/** One place that names another resource, with its config path for `details`. */
export interface Reference {
  /** `route 'r'`, `policy 'p' node 'n'`, `plugin_config 'x'` … */
  label: string;
  path: string;
}

interface NodeOwner {
  kind: 'policy' | 'supernode';
  name: string;
  section: 'policies' | 'supernodes';
  index: number;
  nodes: readonly NodeConfig[];
}

function* nodeOwners(config: GatewayConfig): Generator<NodeOwner> {
  for (const [index, p] of config.policies.entries()) {
    yield { kind: 'policy', name: p.name, section: 'policies', index, nodes: p.nodes ?? [] };
  }
  for (const [index, s] of config.supernodes.entries()) {
    yield { kind: 'supernode', name: s.name, section: 'supernodes', index, nodes: s.nodes ?? [] };
  }
}

function* nodes(config: GatewayConfig): Generator<{ owner: NodeOwner; node: NodeConfig; path: string }> {
  for (const owner of nodeOwners(config)) {
    for (const [i, node] of owner.nodes.entries()) {
      yield { owner, node, path: `${owner.section}[${owner.index}].nodes[${i}]` };
    }
  }
}

const nodeLabel = (owner: NodeOwner, node: NodeConfig): string =>
  `${owner.kind} '${owner.name}' node '${node.id}'`;

export function policyReferences(config: GatewayConfig, name: string): Reference[] {
  return config.routes.flatMap((r, i) =>
    r.policy === name ? [{ label: `route '${r.name}'`, path: `routes[${i}].policy` }] : [],
  );
}

export function supernodeReferences(config: GatewayConfig, name: string): Reference[] {
  const out: Reference[] = [];
  for (const { owner, node, path } of nodes(config)) {
    if (node.type === 'supernode' && node.config?.['name'] === name) {
      out.push({ label: nodeLabel(owner, node), path: `${path}.config.name` });
    }
  }
  for (const [i, rule] of (config.global_rules ?? []).entries()) {
    if (rule.supernode === name)
      out.push({ label: `global_rule '${rule.name}'`, path: `global_rules[${i}].supernode` });
  }
  return out;
}

export function pluginConfigReferences(config: GatewayConfig, name: string): Reference[] {
  const out: Reference[] = [];
  for (const { owner, node, path } of nodes(config)) {
    if (node.config_ref === name) out.push({ label: nodeLabel(owner, node), path: `${path}.config_ref` });
  }
  for (const [i, entry] of config.plugin_configs.entries()) {
    if (entry.config_ref === name)
      out.push({ label: `plugin_config '${entry.name}'`, path: `plugin_configs[${i}].config_ref` });
  }
  return out;
}

/**
 * The path of the first key naming store `name` anywhere in a config: `store`,
 * `session.store`, the flat `session_store`, or one nested deeper (a workflow
 * rule's limit-count action).
 */
function storeKey(value: unknown, name: string, path = ''): string | undefined {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = storeKey(item, name, `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, child] of Object.entries(value)) {
    const here = path === '' ? key : `${path}.${key}`;
    if ((key === 'store' || key === 'session_store') && child === name) return here;
    const found = storeKey(child, name, here);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Everything that uses store `name`: shared configs, node configs of
 * policies and supernodes, and ACME storage in system.yaml.
 */
export function storeReferences(
  config: GatewayConfig,
  name: string,
  acme: Record<string, unknown> | undefined,
): Reference[] {
  const out: Reference[] = [];
  for (const [i, pc] of config.plugin_configs.entries()) {
    const key = storeKey(pc.config, name);
    if (key !== undefined)
      out.push({ label: `plugin_config '${pc.name}'`, path: `plugin_configs[${i}].config.${key}` });
  }
  for (const { owner, node, path } of nodes(config)) {
    const key = storeKey(node.config, name);
    if (key !== undefined) out.push({ label: nodeLabel(owner, node), path: `${path}.config.${key}` });
  }
  const storage = acme?.['storage'] as Record<string, unknown> | undefined;
  if (storage?.['type'] === 'store' && storage['store'] === name) {
    out.push({ label: 'acme storage (system.yaml)', path: 'acme.storage.store' });
  }
  return out;
}

export function referenceIssues(what: string, refs: readonly Reference[]): ConfigIssue[] {
  return refs.map((r) => ({ path: r.path, message: `${what} is referenced by ${r.label}` }));
}
