import type { Context } from '../core/context.js';
import { ConfigError } from '../core/plugin.js';
import { any, ExpressionCompiler, type Test } from './compile.js';
import { Evaluation } from './evaluation.js';

/** A compiled condition expression; evaluating it never parses config or builds a regex. */
export interface Condition {
  evaluate(ctx: Context): boolean;
  /** True when some subject reads the response body (response_body:$…): feeds streaming inference. */
  readonly readsResponseBody: boolean;
  readonly readsRequestBody: boolean;
}

/**
 * One expression: an array of rules ANDed at top level, with nested
 * ["AND"|"OR"|"NOT", …] groups. Throws ConfigError(key + sub-path, message) on
 * any problem. An empty array is always true.
 *
 * @example
 * const gate = compileCondition([['http_authorization', 'present'], ['$.user.id', '!', 'is_null']], 'conditions');
 * gate.evaluate(ctx); // boolean
 */
export function compileCondition(expr: unknown, key: string): Condition {
  const compiler = new ExpressionCompiler();
  return condition(compiler.expression(expr, key), compiler);
}

/** The OR-of-expressions list shape (fault-injection/response-rewrite `vars`: a list of expressions, true if any is true; empty list = true). */
export function compileConditionList(exprs: unknown, key: string): Condition {
  if (!Array.isArray(exprs)) throw new ConfigError(key, 'must be an array of expressions');
  const compiler = new ExpressionCompiler();
  const tests = (exprs as unknown[]).map((expr, i) => compiler.expression(expr, `${key}[${i}]`));
  return condition(tests.length === 0 ? () => true : any(tests), compiler);
}

function condition(test: Test, compiler: ExpressionCompiler): Condition {
  return {
    evaluate: (ctx) => test(new Evaluation(ctx)),
    readsResponseBody: compiler.readsResponseBody,
    readsRequestBody: compiler.readsRequestBody,
  };
}
