import type {
  EdgeConfig,
  GlobalRuleConfig,
  NodeConfig,
  PolicyConfig,
  SupernodeConfig,
} from '../config/gateway.js';
import { didYouMean, type ConfigIssue } from '../config/schema-validate.js';
import { parseEndpoint, responseSplices, spliceOrigins, type ResponseSplice } from './flat-graph.js';
import { resolveParams } from './supernode-rules.js';

/** Prefix of a global rule's instance id in every policy: `global:<rule>/<inner node>`. */
export const GLOBAL_RULE_PREFIX = 'global:';

/** A checked global rule, ready to be spliced into policies. */
export interface GlobalRule {
  name: string;
  instanceId: string;
  /** `request`: after the listener; `response`: before every client node. */
  phase: 'request' | 'response';
  /** The instance node put into each policy (one object: its issue paths are registered once). */
  node: NodeConfig;
  /** For a response rule: the supernode and its checked params, inlined before each client. */
  splice: ResponseSplice;
}

/**
 * Checks `global_rules:` (docs/global-rules.md): unique names, a known
 * supernode whose only output boundary is `output` (its success path: other
 * outcomes must end inside it, at its own `client` node), and parameter values
 * that fit the supernode's declared `params`. A rule with a problem is reported
 * at its key path and left out.
 */
export function checkGlobalRules(
  rules: readonly GlobalRuleConfig[] | undefined,
  supernodes: ReadonlyMap<string, { def: SupernodeConfig; path: string }>,
  issues: ConfigIssue[],
): GlobalRule[] {
  const out: GlobalRule[] = [];
  const seen = new Set<string>();
  (rules ?? []).forEach((rule, index) => {
    const path = `global_rules[${index}]`;
    const label = `global rule '${rule.name}'`;
    if (seen.has(rule.name)) {
      issues.push({ path: `${path}.name`, message: `global_rules: duplicate name '${rule.name}'` });
      return;
    }
    seen.add(rule.name);
    const entry = supernodes.get(rule.supernode);
    if (entry === undefined) {
      issues.push({
        path: `${path}.supernode`,
        message: `${label}: unknown supernode '${rule.supernode}'${didYouMean(rule.supernode, supernodes.keys())}`,
      });
      return;
    }
    const extra = entry.def.nodes.filter((n) => n.type === 'output' && n.id !== 'output').map((n) => n.id);
    if (extra.length > 0) {
      issues.push({
        path: `${path}.supernode`,
        message: `${label}: supernode '${rule.supernode}' has output ports ${extra.map((p) => `'${p}'`).join(', ')}; a global rule continues only through 'output' (success) — end other outcomes inside the supernode at a client node`,
      });
      return;
    }
    if (!entry.def.nodes.some((n) => n.type === 'output' && n.id === 'output')) {
      issues.push({
        path: `${path}.supernode`,
        message: `${label}: supernode '${rule.supernode}' needs an output boundary with id 'output' to continue to the policy`,
      });
      return;
    }
    const params = resolveParams(entry.def, rule.params, `${path}.params`, label, issues);
    if (params === undefined) return;
    const instanceId = `${GLOBAL_RULE_PREFIX}${rule.name}`;
    const node: NodeConfig = {
      id: instanceId,
      type: 'supernode',
      config: { name: rule.supernode, ...(rule.params === undefined ? {} : { params: rule.params }) },
    };
    spliceOrigins.set(node, { path, paramsPath: `${path}.params` });
    const phase = rule.phase ?? 'request';
    out.push({
      name: rule.name,
      instanceId,
      phase,
      node,
      splice: { name: rule.name, instanceId, entry, params },
    });
  });
  return out;
}

/**
 * The policy with every request rule spliced between its listener and the node the listener's
 * success edge led to, in `global_rules` order, and its response rules attached for
 * flattenPolicy to splice before every client node (docs/global-rules.md). The stored policy is
 * not changed. A policy with `global_rules: false` is returned as it is; so is one without one
 * listener wired from its success port (the compiler reports that) as far as request rules go.
 */
export function withGlobalRules(
  policy: PolicyConfig,
  policyPath: string,
  rules: readonly GlobalRule[],
  issues: ConfigIssue[],
): PolicyConfig {
  if (rules.length === 0 || policy.global_rules === false) return policy;
  for (const rule of rules) {
    const clash = policy.nodes.findIndex(
      (n) => n.id === rule.instanceId || n.id.startsWith(`${rule.instanceId}@`),
    );
    if (clash !== -1) {
      issues.push({
        path: `${policyPath}.nodes[${clash}].id`,
        message: `policy '${policy.name}': node id '${policy.nodes[clash]?.id ?? ''}' is reserved for global rule '${rule.name}'`,
      });
      return policy;
    }
  }
  const request = rules.filter((r) => r.phase === 'request');
  const response = rules.filter((r) => r.phase === 'response').map((r) => r.splice);
  const spliced = withRequestRules(policy, request);
  if (response.length === 0) return spliced;
  // A copy of its own: the stored policy object outlives this compile.
  const copy = spliced === policy ? { ...policy } : spliced;
  responseSplices.set(copy, response);
  return copy;
}

function withRequestRules(policy: PolicyConfig, rules: readonly GlobalRule[]): PolicyConfig {
  if (rules.length === 0) return policy;
  const listeners = policy.nodes.filter((n) => n.type === 'listener');
  if (listeners.length !== 1) return policy;
  const listener = (listeners[0] as NodeConfig).id;
  const at = policy.edges.findIndex((e) => {
    const from = parseEndpoint(e.from);
    return from.node === listener && (from.port === 'out' || from.port === 'success');
  });
  if (at === -1) return policy;
  const original = policy.edges[at] as EdgeConfig;
  const chain: EdgeConfig[] = [{ from: original.from, to: `${(rules[0] as GlobalRule).instanceId}.in` }];
  rules.forEach((rule, i) => {
    const next = rules[i + 1];
    chain.push({
      from: `${rule.instanceId}.success`,
      to: next === undefined ? original.to : `${next.instanceId}.in`,
    });
  });
  const edges = [...policy.edges.slice(0, at), ...chain, ...policy.edges.slice(at + 1)];
  return { ...policy, nodes: [...policy.nodes, ...rules.map((r) => r.node)], edges };
}
