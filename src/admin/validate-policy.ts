import { policySchema, type PolicyConfig } from '../config/gateway.js';
import { ConfigRejected, validateAgainst, type ConfigIssue } from '../config/schema-validate.js';
import type { Runtime } from '../engine/compile.js';
import type { BufferingReport, CachePairReport } from '../core/graph-types.js';
import type { Gateway } from '../gateway.js';

export interface PolicyValidation {
  valid: boolean;
  errors: string[];
  warnings: string[];
  cache_pairs: CachePairReport[];
  buffering: BufferingReport[];
  /** Upstreams whose request body is buffered, and the node that reads it (docs/routing.md#request-bodies). */
  request_buffering: BufferingReport[];
  /** Our addition: the same problems located by config path. */
  details: ConfigIssue[];
}

const UNSAVED = 'unsaved-policy';

/**
 * Dry run of `POST /api/policies/validate`: the current configuration with
 * this policy added or replaced is compiled and thrown away. Nothing is
 * swapped, written or counted as an apply.
 */
export function validatePolicy(gateway: Gateway, body: Record<string, unknown>): PolicyValidation {
  const policy = structuredClone(body);
  if (policy['name'] === undefined) policy['name'] = UNSAVED;
  const shapeIssues = validateAgainst(policySchema, policy, 'policy');
  if (shapeIssues.length > 0) {
    return invalid(
      shapeIssues,
      shapeIssues.map((i) => `${i.path}: ${i.message}`),
    );
  }
  const typed = policy as unknown as PolicyConfig;
  const candidate = structuredClone(gateway.runtime.config);
  const index = candidate.policies.findIndex((p) => p.name === typed.name);
  if (index === -1) candidate.policies.push(typed);
  else candidate.policies[index] = typed;
  let runtime;
  try {
    runtime = gateway.compile(candidate);
  } catch (err) {
    if (err instanceof ConfigRejected) return invalid(err.issues);
    throw err;
  }
  void runtime.close();
  const prefix = `policy '${typed.name}'`;
  return {
    valid: true,
    errors: [],
    warnings: runtime.warnings.filter((w) => w.startsWith(prefix)),
    cache_pairs: lonePairs(runtime, typed.name),
    buffering: [...(runtime.policies.get(typed.name)?.buffering ?? [])],
    request_buffering: [...(runtime.policies.get(typed.name)?.requestBuffering ?? [])],
    details: [],
  };
}

/** The policy's cache halves without counterpart; a purge half is paired by any policy caching its id. */
function lonePairs(runtime: Runtime, name: string): CachePairReport[] {
  const policy = runtime.policies.get(name);
  if (policy === undefined) return [];
  const cached = new Set<string>();
  for (const p of runtime.policies.values()) {
    for (const node of p.nodes.values()) {
      const t = node.instance.cache;
      if (t !== undefined && t.phase !== 'purge') cached.add(`${t.id}\u0000${t.backend}\u0000${t.store}`);
    }
  }
  return (policy.cachePairs ?? []).filter((report) => {
    const t = policy.nodes.get(report.node)?.instance.cache;
    return t?.phase !== 'purge' || !cached.has(`${t.id}\u0000${t.backend}\u0000${t.store}`);
  });
}

function invalid(issues: ConfigIssue[], errors = issues.map((i) => i.message)): PolicyValidation {
  return {
    valid: false,
    errors,
    warnings: [],
    cache_pairs: [],
    buffering: [],
    request_buffering: [],
    details: issues,
  };
}
