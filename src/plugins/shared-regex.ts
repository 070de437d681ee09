/**
 * Regular expressions from plugin configs (ua-restriction, uri-blocker,
 * proxy-rewrite `regex_uri`, cors origins): compiled once in `create`, never
 * templated, a bad pattern rejected with its key path.
 */
import { ConfigError } from './define.js';

/**
 * Compiles `source` as a JavaScript RegExp. Configs written for the reference
 * use PCRE/RE2 spellings, so a leading inline flag group such as `(?i)` becomes
 * a RegExp flag and `(?P<name>` becomes `(?<name>`.
 *
 * @example
 * compileRegex('(?i)curl/.*', 'denylist[0]').test('CURL/8.0'); // true
 */
export function compileRegex(source: string, key: string, flags = ''): RegExp {
  if (source === '') throw new ConfigError(key, 'must be a non-empty regular expression');
  let pattern = source;
  let all = flags;
  const inline = /^\(\?([imsx]+)\)/.exec(pattern);
  if (inline !== null) {
    const letters = inline[1]!;
    if (letters.includes('x'))
      throw new ConfigError(key, `the inline flag (?x) is not supported: '${source}'`);
    for (const f of letters) if (!all.includes(f)) all += f;
    pattern = pattern.slice(inline[0].length);
  }
  pattern = pattern.replaceAll('(?P<', '(?<');
  try {
    return new RegExp(pattern, all);
  } catch (err) {
    const reason =
      err instanceof Error ? err.message.replace(/^Invalid regular expression: /, '') : String(err);
    throw new ConfigError(key, `is not a valid regular expression: ${reason}`);
  }
}

/** Compiles every entry of `list`; the first bad one is reported at `key[i]`. */
export function compileRegexList(list: readonly string[], key: string, flags = ''): RegExp[] {
  return list.map((source, i) => compileRegex(source, `${key}[${i}]`, flags));
}
