import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileRegex, compileRegexList, MAX_PATTERN_LENGTH } from '../../src/conditions/regex.js';
import { assertConfigError } from '../support/assertions.js';
import { LINEAR_BOUND_MS, REDOS_RULE, redosInput, redosPath, timed } from '../support/redos.js';

test('config regex: the M3 rule rejects the attack path in linear time, and still matches', () => {
  const re = compileRegex(REDOS_RULE, 'block_rules[0]');
  const attack = timed(() => re.test(redosPath(30)));
  assert.equal(attack.value, false);
  assert.ok(attack.ms < LINEAR_BOUND_MS, `took ${attack.ms.toFixed(1)} ms`);
  // Ten thousand a's: a backtracking engine would never finish; this stays linear.
  const long = timed(() => re.test(redosPath(10_000)));
  assert.equal(long.value, false);
  assert.ok(long.ms < LINEAR_BOUND_MS, `took ${long.ms.toFixed(1)} ms`);
  assert.equal(re.test('/redos/aaaa'), true);
});

test('config regex: other super-linear shapes stay linear too (alternation overlap, polynomial)', () => {
  for (const [pattern, input] of [
    ['^(a|a)*$', redosInput(30)],
    ['^(a|aa)+$', redosInput(40)],
    ['\\s*x\\s*$', `${' '.repeat(20_000)}y`],
    ['^(.*a){12}$', 'a'.repeat(5_000)],
  ] as const) {
    const re = compileRegex(pattern, 'k');
    const run = timed(() => re.test(input));
    assert.ok(run.ms < LINEAR_BOUND_MS, `${pattern} took ${run.ms.toFixed(1)} ms`);
  }
});

test('config regex: lookaheads and backreferences are refused at load, naming the key and the construct', () => {
  assertConfigError(() => compileRegex('\\d(?=\\d{4})', 'request[0].regex'), 'request[0].regex', /lookahead/);
  assertConfigError(() => compileRegex('^/(?!admin)', 'k'), 'k', /lookahead/);
  assertConfigError(() => compileRegex('^(a+)\\1$', 'block_rules[2]'), 'block_rules[2]', /backreference/);
  assertConfigError(() => compileRegex('(?<w>a)\\k<w>', 'k'), 'k', /backreference/);
  assertConfigError(() => compileRegex('(?<=(a))b', 'k'), 'k', /capture group inside a lookbehind/);
});

test('config regex: invalid, empty and over-long patterns are refused naming the key', () => {
  assertConfigError(
    () => compileRegex('(unclosed', 'denylist[1]'),
    'denylist[1]',
    /not a valid regular expression/,
  );
  assertConfigError(() => compileRegex('a{2,1001}', 'k'), 'k', /repeat count/);
  assertConfigError(() => compileRegex('', 'k'), 'k', /non-empty/);
  assertConfigError(() => compileRegex('(?x) a', 'k'), 'k', /not a valid regular expression/);
  compileRegex('a'.repeat(MAX_PATTERN_LENGTH), 'k');
  assertConfigError(() => compileRegex('a'.repeat(MAX_PATTERN_LENGTH + 1), 'k'), 'k', /limited to 1024/);
  assertConfigError(() => compileRegexList(['^/ok', '('], 'block_rules'), 'block_rules[1]');
});

test('config regex: RE2 spellings of the reference configs and JavaScript spellings both work', () => {
  assert.equal(compileRegex('(?i)curl/.*', 'k').test('CURL/8.0'), true);
  assert.equal(compileRegex('(?P<id>\\d+)', 'k').exec('user 42')?.groups?.id, '42');
  assert.equal(compileRegex('(?<id>\\d+)', 'k').exec('user 42')?.groups?.id, '42');
  assert.equal(compileRegex('^[[:alpha:]]+$', 'k').test('abc'), true);
  assert.equal(compileRegex('^\\pL+$', 'k').test('héllo'), true);
  assert.equal(compileRegex('^\\u0041$', 'k').test('A'), true);
  assert.equal(compileRegex('^\\/api\\/', 'k').test('/api/x'), true);
  assert.equal(
    compileRegex('(?<=\\$)\\d+', 'k').exec('cost $42')?.[0],
    '42',
    'captureless lookbehind is linear',
  );
});

test('config regex: flags i, s and m', () => {
  assert.equal(compileRegex('^abc$', 'k', 'i').test('ABC'), true);
  assert.equal(compileRegex('^a.b$', 'k').test('a\nb'), false);
  assert.equal(compileRegex('^a.b$', 'k', 's').test('a\nb'), true);
  assert.equal(compileRegex('^b$', 'k', 'm').test('a\nb'), true);
});

test('config regex: exec and replacements follow RegExp and String.prototype.replace', () => {
  const re = compileRegex('^/api/v1/(.*)$', 'k');
  const m = re.exec('/api/v1/users');
  assert.equal(m?.[0], '/api/v1/users');
  assert.equal(m?.[1], 'users');
  assert.equal(m?.index, 0);
  assert.equal(re.exec('/other'), null);
  for (const replacement of ['/v2/$1', '/v2/$3', '$$1', '[$&]', '/v2/$<x>']) {
    assert.equal(
      re.replace('/api/v1/users', replacement),
      '/api/v1/users'.replace(/^\/api\/v1\/(.*)$/, replacement),
    );
  }
  const named = compileRegex('(?<first>\\w+) (?<last>\\w+)', 'k');
  assert.equal(named.replace('ada lovelace', '$<last>, $<first>'), 'lovelace, ada');
  const digit = compileRegex('\\d', 'k');
  assert.equal(digit.replace('a1b22', '*'), 'a*b22');
  assert.equal(digit.replaceAll('a1b22', '*'), 'a*b**');
  // Stateless: no lastIndex carried between calls.
  assert.equal(digit.test('1'), true);
  assert.equal(digit.test('1'), true);
});
