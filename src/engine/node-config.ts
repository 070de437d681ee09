import type { NodeConfig, PluginConfigEntry } from '../config/gateway.js';
import { interpolateLeaves } from '../config/interpolate.js';
import { didYouMean, validateAgainst, type ConfigIssue } from '../config/schema-validate.js';
import type { PluginDefinition } from '../core/plugin.js';

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `over` laid on `base` without changing either (docs/shared-configs.md):
 * `shallow` replaces whole top-level keys; `deep` merges mappings key by key
 * at every level, replaces arrays and scalars, and a null deletes the key.
 */
export function mergeConfig(
  base: Readonly<Record<string, unknown>>,
  over: Readonly<Record<string, unknown>>,
  mode: 'shallow' | 'deep' = 'shallow',
): Record<string, unknown> {
  if (mode === 'shallow') return { ...base, ...over };
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const below = out[key];
    if (value === null) delete out[key];
    else if (isPlainObject(value) && isPlainObject(below)) out[key] = mergeConfig(below, value, 'deep');
    else out[key] = value;
  }
  return out;
}

/**
 * Shared configs with their `config_ref` chains resolved: each entry's
 * `config` becomes the one it builds on with its own keys merged over
 * (`merge: shallow | deep`). Unknown names, another type and cycles are
 * reported at `plugin_configs[i].config_ref` with the chain; such an entry is
 * kept as written so its users are not reported a second time.
 */
export function resolveSharedChains(
  entries: ReadonlyMap<string, { item: PluginConfigEntry; index: number }>,
  issues: ConfigIssue[],
): Map<string, PluginConfigEntry> {
  const out = new Map<string, PluginConfigEntry>();
  const failed = new Set<string>();
  const resolve = (name: string, chain: string[]): PluginConfigEntry | undefined => {
    if (failed.has(name)) return undefined;
    const done = out.get(name);
    if (done !== undefined) return done;
    const found = entries.get(name);
    if (found === undefined) return undefined;
    const { item, index } = found;
    const path = `plugin_configs[${index}].config_ref`;
    const fail = (message: string): undefined => {
      failed.add(name);
      out.set(name, item);
      issues.push({ path, message: `plugin_configs '${name}': ${message}` });
      return undefined;
    };
    if (item.config_ref === undefined) {
      out.set(name, item);
      return item;
    }
    const ref = item.config_ref;
    if (chain.includes(ref)) return fail(`config_ref chain is a cycle: ${[...chain, ref].join(' → ')}`);
    const parent = entries.get(ref);
    if (parent === undefined)
      return fail(`config_ref '${ref}' names no plugin_configs entry${didYouMean(ref, entries.keys())}`);
    if (parent.item.type !== item.type)
      return fail(`config_ref '${ref}' is a '${parent.item.type}' config; this one is '${item.type}'`);
    const base = resolve(ref, [...chain, ref]);
    if (base === undefined || failed.has(ref)) {
      failed.add(name);
      out.set(name, item);
      return undefined;
    }
    const merged: PluginConfigEntry = {
      name: item.name,
      type: item.type,
      config: mergeConfig(base.config, item.config, item.merge),
    };
    out.set(name, merged);
    return merged;
  };
  for (const name of entries.keys()) resolve(name, [name]);
  return out;
}

/**
 * The effective config of one node: shared config (`config_ref`, its chain
 * already resolved) with the local keys merged over it (`merge: shallow`, the
 * default, or `deep`; local wins, local null unsets), `${ENV}` resolved in
 * every string leaf, then schema defaults and coercions applied. Returns
 * undefined when a problem was reported.
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
        message: `${label}: config_ref '${node.config_ref}' names no plugin_configs entry${didYouMean(node.config_ref, sharedConfigs.keys())}`,
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
    merged = mergeConfig(shared.config, merged, node.merge);
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
