import type { NodeConfig, PluginConfigEntry } from '../config/gateway.js';
import { interpolateLeaves } from '../config/interpolate.js';
import { validateAgainst, type ConfigIssue } from '../config/schema-validate.js';
import type { PluginDefinition } from '../plugins/define.js';

/**
 * The effective config of one node: shared config (`config_ref`) merged
 * shallowly under the local keys (local wins, local null overrides), `${ENV}`
 * resolved in every string leaf, then schema defaults and coercions applied.
 * Returns undefined when a problem was reported.
 */
export function resolveNodeConfig(
  node: NodeConfig,
  def: PluginDefinition<never, string>,
  nodePath: string,
  label: string,
  sharedConfigs: ReadonlyMap<string, PluginConfigEntry>,
  issues: ConfigIssue[],
  env: NodeJS.ProcessEnv,
): Record<string, unknown> | undefined {
  let merged: Record<string, unknown> = { ...(node.config ?? {}) };
  if (node.config_ref !== undefined) {
    const shared = sharedConfigs.get(node.config_ref);
    if (shared === undefined) {
      issues.push({
        path: `${nodePath}.config_ref`,
        message: `${label}: config_ref '${node.config_ref}' names no plugin_configs entry`,
      });
      return undefined;
    }
    if (shared.type !== node.type) {
      issues.push({
        path: `${nodePath}.config_ref`,
        message: `${label}: config_ref '${node.config_ref}' is a '${shared.type}' config; this node is '${node.type}'`,
      });
      return undefined;
    }
    merged = { ...shared.config, ...merged };
  }
  if (merged['runtime'] === 'python') {
    issues.push({
      path: `${nodePath}.config.runtime`,
      message: `${label}: runtime 'python' is not supported (only Lua scripts run in the gateway)`,
    });
    return undefined;
  }
  // A null key means "unset": it overrides a shared value and then lets the schema default apply.
  for (const key of Object.keys(merged)) if (merged[key] === null) delete merged[key];
  const resolved = interpolateLeaves(merged, env, true);
  const found = validateAgainst(def.schema, resolved, `${nodePath}.config`, { suggestKeys: true });
  if (found.length > 0) {
    for (const issue of found) {
      const local = issue.path.slice(nodePath.length + 1);
      issues.push({ path: issue.path, message: `${label}: ${local} ${issue.message}` });
    }
    return undefined;
  }
  return resolved;
}
