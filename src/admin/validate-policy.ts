import { policySchema, type PolicyConfig } from '../config/gateway.js';
import { ConfigRejected, validateAgainst, type ConfigIssue } from '../config/schema-validate.js';
import type { BufferingReport, CachePairReport } from '../engine/graph-types.js';
import type { Gateway } from '../gateway.js';

export interface PolicyValidation {
  valid: boolean;
  errors: string[];
  warnings: string[];
  cache_pairs: CachePairReport[];
  buffering: BufferingReport[];
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
    cache_pairs: [],
    buffering: [...(runtime.policies.get(typed.name)?.buffering ?? [])],
    details: [],
  };
}

function invalid(issues: ConfigIssue[], errors = issues.map((i) => i.message)): PolicyValidation {
  return {
    valid: false,
    errors,
    warnings: [],
    cache_pairs: [],
    buffering: [],
    details: issues,
  };
}
