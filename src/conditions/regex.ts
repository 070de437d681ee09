/**
 * The one compiler for regular expressions written in configuration: plugin
 * keys (ua-restriction, uri-blocker, proxy-rewrite and redirect `regex_uri`,
 * cors origins, response-rewrite filters, data-mask rules), OpenAPI path
 * templates and the `~~`/`~*` condition operators. Every pattern runs on
 * re2js, a port of RE2 whose matching time is linear in the input, so no
 * pattern can stall the event loop however the request is crafted
 * (docs/conditions.md#regular-expressions says why this engine).
 */
import { RE2JS } from 're2js';
import { ConfigError } from '../core/plugin.js';

/** The longest pattern accepted, in UTF-16 code units; compile time and per-match cost grow with it. */
export const MAX_PATTERN_LENGTH = 1024;

/** A compiled config regex: the subset of the RegExp API the gateway uses, with no `lastIndex` state. */
export interface ConfigRegex {
  /** The pattern as written in the config. */
  readonly source: string;
  /** Whether the pattern matches anywhere in `input`. */
  test(input: string): boolean;
  /** The first match with its captures (`groups` for named ones), as `RegExp.prototype.exec` returns it. */
  exec(input: string): RegExpExecArray | null;
  /** Replaces the first match; `replacement` expands `$1`, `$<name>`, `$&` and `$$` as `String.prototype.replace` does. */
  replace(input: string, replacement: string): string;
  /** Replaces every match, expanding `replacement` as `replace` does. */
  replaceAll(input: string, replacement: string): string;
}

/** Flags a caller may pass besides the inline `(?i)`, `(?s)`, `(?m)` groups a pattern may carry. */
const FLAG_BITS: Readonly<Record<string, number>> = {
  i: RE2JS.CASE_INSENSITIVE,
  s: RE2JS.DOTALL,
  m: RE2JS.MULTILINE,
};

/**
 * RE2 errors for constructs that only a backtracking engine can run. They are
 * named in the error instead of the parser's wording, which reads as a typo.
 */
const BACKTRACKING_ONLY: readonly (readonly [RegExp, string])[] = [
  [/unsupported Perl syntax: `\(\?[=!]/, 'a lookahead (?= or (?!'],
  [/invalid escape sequence: `\\[1-9k]/, 'a backreference (\\1 or \\k<name>)'],
  [/invalid capture in lookbehind/, 'a capture group inside a lookbehind'],
];

/**
 * Compiles `source` for matching request data. Patterns use RE2 syntax, the
 * syntax of the reference gateway's Rust `regex` crate: inline flags such as
 * `(?i)`, `(?P<name>…)`, `\pL`, `[[:alpha:]]`. JavaScript spellings RE2 lacks
 * (`(?<name>…)`, `\u0041`, `\cA`, `[^]`) are translated. Lookaheads and
 * backreferences are refused, because no linear-time engine can run them.
 *
 * @param key the config path the error names, e.g. `block_rules[0]`.
 * @param flags any of `i`, `s`, `m`.
 * @throws ConfigError naming `key` for an empty, too long, invalid or backtracking-only pattern.
 *
 * @example
 * compileRegex('(?i)curl/.*', 'denylist[0]').test('CURL/8.0'); // true
 * compileRegex('^/api/v1/(.*)$', 'regex_uri[0]').replace('/api/v1/users', '/v2/$1'); // '/v2/users'
 */
export function compileRegex(source: string, key: string, flags = ''): ConfigRegex {
  if (source === '') throw new ConfigError(key, 'must be a non-empty regular expression');
  if (source.length > MAX_PATTERN_LENGTH) {
    throw new ConfigError(
      key,
      `pattern is ${source.length} characters long; config regexes are limited to ${MAX_PATTERN_LENGTH}`,
    );
  }
  let bits = RE2JS.LOOKBEHINDS;
  for (const flag of flags) {
    const bit = FLAG_BITS[flag];
    if (bit === undefined) throw new Error(`compileRegex: unknown flag '${flag}'`);
    bits |= bit;
  }
  return new Re2Regex(source, parse(source, key, bits));
}

/** Compiles every entry of `list`; the first bad one is reported at `key[i]`. */
export function compileRegexList(list: readonly string[], key: string, flags = ''): ConfigRegex[] {
  return list.map((source, i) => compileRegex(source, `${key}[${i}]`, flags));
}

function parse(source: string, key: string, bits: number): RE2JS {
  let direct: string;
  try {
    return RE2JS.compile(source, bits);
  } catch (err) {
    direct = errorText(err);
  }
  for (const [match, construct] of BACKTRACKING_ONLY) {
    if (match.test(direct)) {
      throw new ConfigError(
        key,
        `pattern '${source}' uses ${construct}, which only a backtracking engine can run; config ` +
          'regexes run on a linear-time engine (RE2 syntax, see docs/conditions.md#regular-expressions)',
      );
    }
  }
  // Not RE2 syntax: perhaps a JavaScript spelling RE2 writes differently.
  try {
    return RE2JS.compile(RE2JS.translateRegExp(source), bits);
  } catch {
    throw new ConfigError(key, `pattern '${source}' is not a valid regular expression: ${direct}`);
  }
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.replace(/^error parsing regexp: /, '');
}

class Re2Regex implements ConfigRegex {
  constructor(
    readonly source: string,
    private readonly re: RE2JS,
  ) {}

  test(input: string): boolean {
    return this.re.test(input);
  }

  exec(input: string): RegExpExecArray | null {
    return this.re.exec(input) as RegExpExecArray | null;
  }

  replace(input: string, replacement: string): string {
    return this.re.matcher(input).replaceFirst(replacement);
  }

  replaceAll(input: string, replacement: string): string {
    return this.re.matcher(input).replaceAll(replacement);
  }
}
