import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileCondition, compileConditionList } from '../../src/conditions/index.js';
import { ConfigError } from '../../src/core/plugin.js';

/** Asserts that compiling `expr` under `conditions` fails at `path`. */
function rejects(expr: unknown, path: string, message?: RegExp): void {
  assert.throws(
    () => compileCondition(expr, 'conditions'),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
      assert.equal(error.path, path);
      if (message !== undefined) assert.match(error.message, message);
      return true;
    },
  );
}

const ok = ['uri', '==', '/'];

void test('condition errors: the expression and each rule must be arrays', () => {
  rejects('uri == /', 'conditions');
  rejects({ uri: '/' }, 'conditions');
  rejects(['uri', '==', '/'], 'conditions', /wrap a single rule/);
  rejects([ok, 'uri'], 'conditions[1]');
  rejects([ok, ok, []], 'conditions[2]', /empty/);
});

void test('condition errors: a subject must be a non-empty string', () => {
  rejects([[42, '==', 1]], 'conditions[0][0]');
  rejects([['', '==', 1]], 'conditions[0][0]');
  rejects([[['uri', '==', '/']]], 'conditions[0][0]');
});

void test('condition errors: unknown or missing operators name the operator slot', () => {
  rejects([ok, ['uri', 'equals', '/']], 'conditions[1][1]', /unknown operator `equals`/);
  rejects([['uri', '!', 'like', '/']], 'conditions[0][2]', /unknown operator/);
  rejects([['uri', 42, '/']], 'conditions[0][1]');
  rejects([['uri']], 'conditions[0]', /missing an operator/);
  rejects([['uri', '!']], 'conditions[0]', /missing an operator/);
});

void test('condition errors: wrong arity', () => {
  rejects([['uri', '==']], 'conditions[0]', /needs a value/);
  rejects([['uri', '!', '==']], 'conditions[0]', /needs a value/);
  rejects([['uri', '==', '/', 'extra']], 'conditions[0][3]');
  rejects([['http_x', 'present', true]], 'conditions[0][2]', /takes no value/);
  rejects([['$.a', '!', 'absent', 1]], 'conditions[0][3]', /takes no value/);
});

void test('condition errors: is_null needs a JSONPath subject', () => {
  rejects([['http_x', 'is_null']], 'conditions[0][1]', /JSONPath/);
  rejects([['arg_a', '!', 'is_null']], 'conditions[0][2]');
});

void test('condition errors: malformed JSONPath names the subject', () => {
  for (const subject of [
    '$.',
    '$.[',
    '$[',
    "$['a'",
    '$.a-b',
    '$[?(@.a)]',
    '$[0:2]',
    '$[0,1]',
    '$x',
    '$uri',
    'request_body:a',
    'response_body:$..',
    '$[01]',
    "$['\\q']",
  ]) {
    rejects([ok, [subject, 'present']], 'conditions[1][0]', /invalid JSONPath/);
  }
});

void test('condition errors: values of the wrong type', () => {
  rejects([['uri', '==', ['/']]], 'conditions[0][2]');
  rejects([['uri', '==', null]], 'conditions[0][2]');
  rejects([['uri', '!', '==', { a: 1 }]], 'conditions[0][3]');
  rejects([['arg_a', '>', 'ten']], 'conditions[0][2]', /number/);
  rejects([['arg_a', '<=', true]], 'conditions[0][2]', /number/);
  rejects([['arg_a', 'in', 'a,b']], 'conditions[0][2]', /array/);
  rejects([['arg_a', 'in', ['a', ['b']]]], 'conditions[0][2][1]');
  rejects([['arg_a', 'has', ['a']]], 'conditions[0][2]');
  rejects([['arg_a', 'contains', {}]], 'conditions[0][2]');
  rejects([['uri', '~~', 42]], 'conditions[0][2]');
});

void test('condition errors: malformed regexes fail at compile time', () => {
  rejects([ok, ok, ['uri', '~~', '(']], 'conditions[2][2]');
  rejects([['uri', '!', '~*', '[a-']], 'conditions[0][3]');
});

void test('condition errors: malformed CIDRs fail at compile time', () => {
  rejects([['remote_addr', 'ipmatch', '10.0.0.0/8']], 'conditions[0][2]', /array/);
  rejects([['remote_addr', 'ipmatch', ['10.0.0.0/8', 'not-an-ip']]], 'conditions[0][2][1]');
  rejects([['remote_addr', 'ipmatch', ['10.0.0.0/33']]], 'conditions[0][2][0]', /prefix/);
  rejects([['remote_addr', 'ipmatch', ['2001:db8::/129']]], 'conditions[0][2][0]', /prefix/);
  rejects([['remote_addr', 'ipmatch', ['10.0.0.0/']]], 'conditions[0][2][0]');
  rejects([['remote_addr', 'ipmatch', ['300.1.1.1']]], 'conditions[0][2][0]');
  rejects([['remote_addr', 'ipmatch', [10]]], 'conditions[0][2][0]');
});

void test('condition errors: NOT takes exactly one child', () => {
  rejects([['NOT']], 'conditions[0]', /exactly one/);
  rejects([['NOT', ok, ok]], 'conditions[0]', /exactly one/);
  rejects(['NOT'], 'conditions', /exactly one/);
});

void test('condition errors: paths run through nested groups', () => {
  rejects([ok, ['OR', ok, ['AND', ok, ['uri', '~~', '(']]]], 'conditions[1][2][2][2]');
  rejects([['NOT', ['OR', ok, ['http_x', 'is_null']]]], 'conditions[0][1][2][1]');
  rejects(['OR', ok, ['uri', 'nope', 1]], 'conditions[2][1]');
});

void test('condition errors: a list of expressions prefixes the expression index', () => {
  assert.throws(
    () => compileConditionList([[ok], [ok, ['uri', '~~', '(']]], 'abort.vars'),
    (error: unknown) => error instanceof ConfigError && error.path === 'abort.vars[1][1][2]',
  );
  assert.throws(
    () => compileConditionList({}, 'vars'),
    (error: unknown) => error instanceof ConfigError && error.path === 'vars',
  );
  assert.throws(
    () => compileConditionList([ok], 'vars'),
    (error: unknown) => error instanceof ConfigError && error.path === 'vars[0]',
  );
});

void test('condition errors: M3 a lookahead or backreference in ~~ is refused at its value slot', () => {
  rejects([['uri', '~~', '^/(?!admin)']], 'conditions[0][2]', /lookahead/);
  rejects([ok, ['uri', '!', '~*', '^/(a)\\1']], 'conditions[1][3]', /backreference/);
});
