import { parseYamlData as parseYaml } from './yaml-data.js';
import { interpolateMarkingEmpty, type EmptyPlaceholder } from './interpolate.js';
import type { ConfigIssue } from './schema-validate.js';
import { joinPath } from './schema-validate.js';

/**
 * The keys of system.yaml that hold a secret. `*` matches every item of a
 * list. `when` narrows a rule to configurations where the secret is in use.
 */
const CREDENTIAL_KEYS: readonly {
  path: readonly string[];
  /** `${NAME:-}` may resolve to empty here on purpose (admin.password: generate one). */
  emptyDefaultAllowed?: boolean;
  when?: (doc: Record<string, unknown>) => boolean;
}[] = [
  { path: ['admin', 'password'], emptyDefaultAllowed: true },
  { path: ['admin', 'users', '*', 'password'] },
  { path: ['admin', 'mcp', 'tokens', '*', 'token'], when: mcpEnabled },
  { path: ['config', 'etcd', 'password'] },
  { path: ['acme', 'eab', 'hmac_key'] },
  { path: ['acme', 'storage', 'encryption_key'] },
];

function mcpEnabled(doc: Record<string, unknown>): boolean {
  const mcp = (doc.admin as { mcp?: { enabled?: unknown } } | undefined)?.mcp;
  const enabled = mcp?.enabled;
  return enabled === true || enabled === 'true';
}

const describe = (p: EmptyPlaceholder): string =>
  p.set
    ? `${p.source} is empty`
    : p.hasDefault
      ? `${p.source} is not set (and its default is empty)`
      : `${p.source} is not set`;

/**
 * H3: a credential whose `${VAR}` resolves to empty would become an empty
 * secret (an account anyone can log into). Each such key is an issue naming
 * the key and the variable: `admin.users[0].password: ${OPS_PASSWORD} is not set`.
 * A credential that is only partly empty (`${A}${B}` with B unset) is refused
 * too: it is weaker than its author meant. The one exception is
 * `admin.password: ${NAME:-}`, the documented way to ask for a generated password.
 */
export function emptyCredentialIssues(text: string, env: NodeJS.ProcessEnv): ConfigIssue[] {
  const marked = interpolateMarkingEmpty(text, env);
  if (marked.empties.length === 0) return [];
  let doc: unknown;
  try {
    doc = parseYaml(marked.text);
  } catch {
    return []; // the regular parse reports the YAML problem
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return [];
  const issues: ConfigIssue[] = [];
  for (const rule of CREDENTIAL_KEYS) {
    if (rule.when !== undefined && !rule.when(doc as Record<string, unknown>)) continue;
    for (const { path, value } of leaves(doc, rule.path, '')) {
      if (typeof value !== 'string') continue;
      const empties = marked.emptiesIn(value);
      if (empties.length === 0) continue;
      if (rule.emptyDefaultAllowed === true && empties.every((e) => e.hasDefault)) continue;
      issues.push({ path, message: empties.map(describe).join(', ') });
    }
  }
  return issues;
}

function* leaves(
  node: unknown,
  keys: readonly string[],
  at: string,
): Generator<{ path: string; value: unknown }> {
  if (keys.length === 0) {
    yield { path: at, value: node };
    return;
  }
  const [key, ...rest] = keys as [string, ...string[]];
  if (key === '*') {
    if (!Array.isArray(node)) return;
    for (const [i, item] of node.entries()) yield* leaves(item, rest, joinPath(at, i));
    return;
  }
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return;
  if (!Object.hasOwn(node, key)) return;
  yield* leaves((node as Record<string, unknown>)[key], rest, joinPath(at, key));
}
