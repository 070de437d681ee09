import { compileCondition, compileConditionList, type Condition } from '../conditions/index.js';

const LOGIC = new Set(['and', 'or', 'not', '!and', '!or']);

/**
 * A `vars` gate (response-rewrite, fault-injection): a list of expressions,
 * true when any one holds. The reference also accepts one flat expression
 * (`[["status", "==", 200], …]`, rules ANDed); that shape is recognized by its
 * first item being a rule rather than an expression.
 */
export function compileVarsGate(vars: unknown, key: string): Condition {
  const first: unknown = Array.isArray(vars) ? (vars as unknown[])[0] : undefined;
  const head: unknown = Array.isArray(first) ? (first as unknown[])[0] : undefined;
  if (typeof head === 'string' && !LOGIC.has(head.toLowerCase())) return compileCondition(vars, key);
  return compileConditionList(vars, key);
}
