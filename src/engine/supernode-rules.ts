import type { SupernodeConfig, SupernodeParamSpec } from '../config/gateway.js';
import { didYouMean, type ConfigIssue } from '../config/schema-validate.js';
import type { PluginDefinition } from '../core/plugin.js';

/** `node.port` split on the LAST dot; no dot means port `out` (docs/configuration.md#gatewayyaml). */
export function parseEndpoint(text: string): { node: string; port: string } {
  const dot = text.lastIndexOf('.');
  if (dot === -1) return { node: text, port: 'out' };
  return { node: text.slice(0, dot), port: text.slice(dot + 1) };
}

/** How deep supernode instances may nest inside each other (docs/supernodes.md#nesting). */
export const MAX_SUPERNODE_DEPTH = 8;

/**
 * Checks a supernode definition on its own (docs/supernodes.md), reporting
 * every violation: boundaries, inner ids, and inner success/outcome ports that
 * are not wired inside the definition. Nested instances are checked by
 * `checkSupernodeNesting`, which sees every definition.
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
    if (boundaryIds.has(node.id) && !['input', 'output', 'error'].includes(node.type)) {
      issues.push({ path: `${at}.id`, message: `${where}: inner node id '${node.id}' reuses a boundary id` });
    }
    if (['input', 'output', 'error'].includes(node.type)) return;
    if (node.id.includes('/')) {
      issues.push({ path: `${at}.id`, message: `${where}: inner node id '${node.id}' may not contain '/'` });
    }
    if (node.type === 'supernode') return;
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

/**
 * Nested instances across all definitions: every inner `type: supernode`
 * names a known supernode, and no chain of definitions leads back to one
 * already on it (`a → b → a`), reported once per cycle at the inner node.
 */
export function checkSupernodeNesting(
  supernodes: ReadonlyMap<string, { def: SupernodeConfig; path: string }>,
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const done = new Set<string>();
  const reported = new Set<string>();
  const visit = (name: string, chain: string[]): void => {
    const entry = supernodes.get(name);
    if (entry === undefined || done.has(name)) return;
    entry.def.nodes.forEach((node, i) => {
      if (node.type !== 'supernode') return;
      const at = `${entry.path}.nodes[${i}].config.name`;
      const inner = (node.config ?? {})['name'];
      if (typeof inner !== 'string') {
        issues.push({
          path: at,
          message: `supernode '${name}': nested instance '${node.id}' needs config.name`,
        });
        return;
      }
      if (!supernodes.has(inner)) {
        issues.push({
          path: at,
          message: `supernode '${name}': nested instance '${node.id}' references unknown supernode '${inner}'${didYouMean(inner, supernodes.keys())}`,
        });
        return;
      }
      const loopAt = chain.indexOf(inner);
      if (loopAt !== -1 || inner === name) {
        const loop = [...chain.slice(loopAt === -1 ? chain.length - 1 : loopAt), inner];
        const key = [...loop].sort().join('\u0000');
        if (!reported.has(key)) {
          reported.add(key);
          issues.push({
            path: at,
            message: `supernode nesting cycle: ${loop.join(' → ')} — a supernode cannot be nested inside itself`,
          });
        }
        return;
      }
      if (chain.length >= MAX_SUPERNODE_DEPTH) {
        issues.push({
          path: at,
          message: `supernode nesting deeper than ${MAX_SUPERNODE_DEPTH} levels: ${[...chain, inner].join(' → ')}`,
        });
        return;
      }
      visit(inner, [...chain, inner]);
    });
    if (chain.length === 1) done.add(name);
  };
  for (const name of supernodes.keys()) visit(name, [name]);
  return issues;
}

/** `{{params.x}}` (spaces allowed) inside an inner node's config. */
const PARAM_REF = /\{\{\s*params\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
const WHOLE_PARAM_REF = /^\{\{\s*params\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/;

function typeOfParam(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function fits(spec: SupernodeParamSpec, value: unknown): boolean {
  const actual = typeOfParam(value);
  return actual === spec.type || (spec.type === 'number' && actual === 'integer');
}

/**
 * The parameter values of one instance: given values checked against the
 * declared types, defaults filled in, required ones enforced. `path` is where
 * the values are written (`policies[0].nodes[1].config.params`,
 * `global_rules[0].params`). Returns undefined when a problem was reported.
 */
export function resolveParams(
  def: SupernodeConfig,
  given: unknown,
  path: string,
  label: string,
  issues: ConfigIssue[],
): Record<string, unknown> | undefined {
  const before = issues.length;
  const declared = def.params ?? {};
  const values: Record<string, unknown> = {};
  if (given !== undefined && (typeof given !== 'object' || given === null || Array.isArray(given))) {
    issues.push({ path, message: `${label}: params must be a mapping of parameter names to values` });
    return undefined;
  }
  const supplied = (given ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(supplied)) {
    if (!(key in declared)) {
      issues.push({
        path: `${path}.${key}`,
        message: `${label}: supernode '${def.name}' declares no parameter '${key}'${didYouMean(key, Object.keys(declared))}`,
      });
    }
  }
  for (const [key, spec] of Object.entries(declared)) {
    const value = key in supplied ? supplied[key] : spec.default;
    if (value === undefined) {
      if (spec.required === true) {
        issues.push({
          path: `${path}.${key}`,
          message: `${label}: parameter '${key}' of supernode '${def.name}' is required`,
        });
      }
      continue;
    }
    // A value still holding an outer `{{params.y}}` was resolved already; anything else is typed.
    if (!fits(spec, value)) {
      issues.push({
        path: `${path}.${key}`,
        message: `${label}: parameter '${key}' of supernode '${def.name}' must be ${spec.type} (got ${typeOfParam(value)})`,
      });
      continue;
    }
    values[key] = value;
  }
  return issues.length > before ? undefined : values;
}

/**
 * A copy of `value` with `{{params.x}}` replaced: a string that is only the
 * reference takes the parameter's own value (a number stays a number), a
 * reference inside longer text is replaced by its text. An unset or unknown
 * parameter is reported at `path`.
 */
export function substituteParams(
  value: unknown,
  params: Readonly<Record<string, unknown>>,
  declared: Readonly<Record<string, unknown>>,
  path: string,
  label: string,
  issues: ConfigIssue[],
): unknown {
  if (typeof value === 'string') {
    if (!value.includes('{{')) return value;
    const missing = (name: string): void => {
      issues.push({
        path,
        message:
          name in declared
            ? `${label}: {{params.${name}}} has no value (the parameter has no default and the instance sets none)`
            : `${label}: {{params.${name}}} names no declared parameter${didYouMean(name, Object.keys(declared))}`,
      });
    };
    const whole = WHOLE_PARAM_REF.exec(value);
    if (whole !== null) {
      const name = whole[1] as string;
      if (!(name in params)) missing(name);
      return params[name];
    }
    return value.replace(PARAM_REF, (text, name: string) => {
      if (!(name in params)) {
        missing(name);
        return text;
      }
      const v = params[name];
      return typeof v === 'string' ? v : JSON.stringify(v);
    });
  }
  if (Array.isArray(value))
    return value.map((v, i) => substituteParams(v, params, declared, `${path}[${i}]`, label, issues));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      out[k] = substituteParams(v, params, declared, `${path}.${k}`, label, issues);
    return out;
  }
  return value;
}
