import type { SupernodeConfig } from '../config/gateway.js';
import { didYouMean, type ConfigIssue } from '../config/schema-validate.js';
import type { PluginDefinition } from '../plugins/define.js';
import { parseEndpoint } from './flat-graph.js';

/**
 * Checks a supernode definition on its own (COMPAT §3.3), reporting every
 * violation: boundaries, nesting, inner ids, and inner success/outcome ports
 * that are not wired inside the definition.
 */
export function checkSupernodeDefinition(
  def: SupernodeConfig,
  path: string,
  registry: ReadonlyMap<string, PluginDefinition<never, string>>,
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const where = `supernode '${def.name}'`;
  const inputs = def.nodes.filter((n) => n.type === 'input');
  if (inputs.length !== 1) {
    issues.push({
      path: `${path}.nodes`,
      message: `${where}: exactly one input boundary is required (found ${inputs.length})`,
    });
  }
  if (!def.nodes.some((n) => n.type === 'output')) {
    issues.push({ path: `${path}.nodes`, message: `${where}: at least one output boundary is required` });
  }
  const boundaryIds = new Set(
    def.nodes.filter((n) => ['input', 'output', 'error'].includes(n.type)).map((n) => n.id),
  );
  const wired = new Set(
    def.edges.map((e) => {
      const from = parseEndpoint(e.from);
      return `${from.node}.${from.port === 'out' ? 'success' : from.port}`;
    }),
  );
  def.nodes.forEach((node, i) => {
    const at = `${path}.nodes[${i}]`;
    if (node.type === 'supernode') {
      issues.push({
        path: `${at}.type`,
        message: `${where}: inner node '${node.id}' is a supernode — supernodes cannot be nested`,
      });
      return;
    }
    if (boundaryIds.has(node.id) && !['input', 'output', 'error'].includes(node.type)) {
      issues.push({ path: `${at}.id`, message: `${where}: inner node id '${node.id}' reuses a boundary id` });
    }
    if (['input', 'output', 'error'].includes(node.type)) return;
    if (node.id.includes('/')) {
      issues.push({ path: `${at}.id`, message: `${where}: inner node id '${node.id}' may not contain '/'` });
    }
    if (['input', 'output', 'error'].includes(node.id)) {
      issues.push({
        path: `${at}.id`,
        message: `${where}: inner node id '${node.id}' is reserved for boundaries`,
      });
    }
    const plugin = registry.get(node.type);
    if (plugin === undefined) {
      issues.push({
        path: `${at}.type`,
        message: `${where}: node '${node.id}': Unknown plugin type: ${node.type}${didYouMean(node.type, registry.keys())}`,
      });
      return;
    }
    for (const [port, spec] of Object.entries(plugin.outputs)) {
      if (spec.kind !== 'error' && !wired.has(`${node.id}.${port}`)) {
        issues.push({
          path: at,
          message: `${where}: output port '${port}' of node '${node.id}' (type '${node.type}') must be wired inside the definition — add an edge from '${node.id}.${port}'`,
        });
      }
    }
  });
  return issues;
}
