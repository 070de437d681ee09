import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileCondition, compileConditionList } from '../../src/conditions/index.js';
import { requestContext } from '../support/plugin-env.js';
import { holds, jsonRequest, jsonResponse } from './support.js';

const ctx = () => requestContext({ url: '/orders?name=jack&age=30' });
const T = ['arg_name', '==', 'jack'];
const F = ['arg_name', '==', 'jill'];

void test('conditions: an empty expression is true and top-level rules are ANDed', () => {
  assert.equal(holds([], ctx()), true);
  assert.equal(holds([T, T], ctx()), true);
  assert.equal(holds([T, F], ctx()), false);
});

void test('conditions: AND, OR and NOT groups, case-insensitive', () => {
  assert.equal(holds([['OR', F, T]], ctx()), true);
  assert.equal(holds([['OR', F, F]], ctx()), false);
  assert.equal(holds([['AND', T, F]], ctx()), false);
  assert.equal(holds([['and', T, T]], ctx()), true);
  assert.equal(holds([['NOT', F]], ctx()), true);
  assert.equal(holds([['not', T]], ctx()), false);
  assert.equal(holds([['OR']], ctx()), false, 'an empty OR has no true branch');
  assert.equal(holds([['AND']], ctx()), true);
});

void test('conditions: groups nest to any depth', () => {
  const expr = [['OR', ['AND', F, T], ['NOT', ['OR', F, ['NOT', T]]]]];
  assert.equal(holds(expr, ctx()), true);
  assert.equal(holds([['NOT', ['NOT', ['NOT', T]]]], ctx()), false);
  assert.equal(holds([['AND', ['OR', F, ['arg_age', '>', 18]], ['uri', '~~', '^/orders']]], ctx()), true);
});

void test('conditions: APISIX !AND and !OR negate a group', () => {
  assert.equal(holds([['!AND', T, F]], ctx()), true);
  assert.equal(holds([['!AND', T, T]], ctx()), false);
  assert.equal(holds([['!OR', F, F]], ctx()), true);
  assert.equal(holds([['!OR', F, T]], ctx()), false);
});

void test('conditions: a group may stand at the top of an expression', () => {
  assert.equal(holds(['OR', F, T], ctx()), true);
  assert.equal(holds(['AND', F, T], ctx()), false);
  assert.equal(holds(['NOT', F], ctx()), true);
});

void test('conditions: the spec example gates on header and body together', () => {
  const expr = [
    ['http_authorization', 'present'],
    ['http_authorization', 'contains', 'Bearer'],
    ['OR', ['$.user.email', 'present'], ['NOT', ['$.user.id', 'is_null']]],
  ];
  const headers = { host: 'gateway.test', authorization: 'Bearer t' };
  assert.equal(holds(expr, jsonRequest({ user: { id: 7 } }, { headers })), true);
  assert.equal(holds(expr, jsonRequest({ user: { id: null } }, { headers })), false);
  assert.equal(holds(expr, jsonRequest({ user: { id: null, email: 'e' } }, { headers })), true);
  assert.equal(holds(expr, jsonRequest({ user: { id: 7 } })), false);
});

void test('conditions: a list of expressions is true when any is; an empty list is true', () => {
  const list = compileConditionList([[F], [T, ['arg_age', '==', 30]]], 'vars');
  assert.equal(list.evaluate(ctx()), true);
  assert.equal(compileConditionList([[F], [T, F]], 'vars').evaluate(ctx()), false);
  assert.equal(compileConditionList([], 'vars').evaluate(ctx()), true);
  assert.equal(compileConditionList([[]], 'vars').evaluate(ctx()), true);
});

void test('conditions: readsResponseBody and readsRequestBody report body subjects', () => {
  const flags = (expr: unknown) => {
    const c = compileCondition(expr, 'conditions');
    return [c.readsRequestBody, c.readsResponseBody];
  };
  assert.deepEqual(
    flags([
      ['uri', '==', '/'],
      ['http_x', 'present'],
    ]),
    [false, false],
  );
  assert.deepEqual(flags([['$.a', 'present']]), [true, false]);
  assert.deepEqual(flags([['request_body:$.a', 'present']]), [true, false]);
  assert.deepEqual(flags([['OR', ['uri', '==', '/'], ['NOT', ['response_body:$.a', 'present']]]]), [
    false,
    true,
  ]);
  assert.deepEqual(flags([['resp_body', 'contains', 'x']]), [false, true]);
  assert.deepEqual(
    flags([
      ['request_body', 'contains', 'x'],
      ['post_arg_a', 'present'],
    ]),
    [true, false],
  );
  const list = compileConditionList([[['uri', '==', '/']], [['response_body:$.a', 'present']]], 'vars');
  assert.equal(list.readsResponseBody, true);
  assert.equal(list.readsRequestBody, false);
  assert.equal(compileConditionList([], 'vars').readsResponseBody, false);
});

void test('conditions: response_body subjects see the body set by the time of evaluation', () => {
  const condition = compileCondition([['response_body:$.ok', '==', true]], 'vars');
  const res = jsonResponse({ ok: false });
  assert.equal(condition.evaluate(res), false);
  res.response.setBody('{"ok":true}');
  assert.equal(condition.evaluate(res), true);
});
