/**
 * The attack of the security review's M3: a rule with nested quantifiers and
 * an input that a backtracking engine needs seconds to reject (`n` = 30 took
 * 7.9 s, and each extra `a` doubles it). Config regexes run on a linear-time
 * engine, so the same match now takes microseconds.
 */
export const REDOS_RULE = '^/redos/(a+)+$';

/** The same nested quantifier, anchored for values that are not paths (headers, origins, fields). */
export const REDOS_VALUE_RULE = '^(a+)+$';

/** `n` a's and a character that makes the match fail only after every split was tried. */
export const redosInput = (n = 30): string => `${'a'.repeat(n)}!`;

export const redosPath = (n = 30): string => `/redos/${redosInput(n)}`;

/** A generous upper bound: the linear engine answers in microseconds, the old code in seconds. */
export const LINEAR_BOUND_MS = 1000;

/** Runs `fn` and says how long it took, in milliseconds. */
export function timed<T>(fn: () => T): { value: T; ms: number } {
  const start = performance.now();
  const value = fn();
  return { value, ms: performance.now() - start };
}
