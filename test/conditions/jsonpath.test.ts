import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileCondition } from '../../src/conditions/index.js';
import { parseJsonPath } from '../../src/conditions/jsonpath.js';
import { requestContext } from '../support/plugin-env.js';
import { holds, jsonRequest, jsonResponse } from './support.js';

const doc = {
  store: {
    book: [
      { title: 'Sayings', price: 8.95, tags: ['classic'] },
      { title: 'Sword', price: 12.99, isbn: null },
    ],
    bicycle: { color: 'red', price: 19.95 },
    'odd key': { "it's": 1 },
  },
  user: { id: null, email: 'a@example.test' },
};

void test('jsonpath: the supported selectors select the expected nodes', () => {
  const cases: [string, unknown[]][] = [
    ['$', [doc]],
    ['$.store.bicycle.color', ['red']],
    ["$['store']['bicycle'][\"color\"]", ['red']],
    ['$.store.book[0].title', ['Sayings']],
    ['$.store.book[-1].title', ['Sword']],
    ['$.store.book[5].title', []],
    ['$.store.book[*].title', ['Sayings', 'Sword']],
    ['$.store.bicycle.*', ['red', 19.95]],
    ['$..price', [8.95, 12.99, 19.95]],
    ['$..book[1].title', ['Sword']],
    ['$..[0].title', ['Sayings']],
    ["$.store['odd key']['it\\'s']", [1]],
    ['$.store[ * ]..tags[0]', ['classic']],
    ['$.user.id', [null]],
    ['$.user.missing', []],
    ['$.store.book.title', []],
  ];
  for (const [path, expected] of cases) {
    assert.deepEqual(parseJsonPath(path).query(doc), expected, path);
  }
});

void test('jsonpath: absent, present-null and present-value are three states', () => {
  const ctx = jsonRequest({ user: { id: null, email: 'a@example.test' } });
  // absent
  assert.equal(holds([['$.user.phone', 'absent']], ctx), true);
  assert.equal(holds([['$.user.phone', 'present']], ctx), false);
  assert.equal(holds([['$.user.phone', 'is_null']], ctx), false);
  // present, null
  assert.equal(holds([['$.user.id', 'present']], ctx), true);
  assert.equal(holds([['$.user.id', 'absent']], ctx), false);
  assert.equal(holds([['$.user.id', 'is_null']], ctx), true);
  assert.equal(holds([['$.user.id', '==', '']], ctx), false, 'null equals no scalar');
  // present, with a value
  assert.equal(holds([['$.user.email', 'present']], ctx), true);
  assert.equal(holds([['$.user.email', 'is_null']], ctx), false);
  assert.equal(holds([['$.user.email', '!', 'is_null']], ctx), true);
});

void test('jsonpath: a rule over several nodes holds when any node passes; negation gives ALL', () => {
  const ctx = jsonRequest({
    items: [
      { id: 1, qty: 5 },
      { id: 2, qty: 0 },
      { id: 3, qty: null },
    ],
  });
  assert.equal(holds([['$.items[*].id', '==', 2]], ctx), true);
  assert.equal(holds([['$.items[*].id', '==', 9]], ctx), false);
  assert.equal(holds([['$.items[*].qty', '>', 3]], ctx), true);
  assert.equal(holds([['$.items[*].qty', 'is_null']], ctx), true);
  // "every qty is positive" = NOT (some qty <= 0)
  assert.equal(holds([['$.items[*].qty', '!', '<=', 0]], ctx), false);
  assert.equal(holds([['$..id', '!', '>', 3]], ctx), true, 'no id exceeds 3');
  assert.equal(holds([['$.nothing[*]', '!=', 'x']], ctx), false, 'zero nodes: no node passes');
});

void test('jsonpath: request_body: and bare $ read the request body; response_body: the response', () => {
  const req = jsonRequest({ a: 1 });
  assert.equal(holds([['request_body:$.a', '==', 1]], req), true);
  assert.equal(holds([['$.a', '==', 1]], req), true);
  assert.equal(holds([['response_body:$.a', 'absent']], req), true);
  const res = jsonResponse({ data: { items: [{ id: 'x' }, { id: 'y' }] } });
  assert.equal(holds([['response_body:$.data.items[*].id', '==', 'y']], res), true);
  assert.equal(holds([['$.data', 'absent']], res), true);
});

void test('jsonpath: a missing, empty or non-JSON body matches nothing', () => {
  for (const ctx of [
    requestContext(),
    jsonRequest(''),
    jsonRequest('{"a": 1'),
    jsonRequest('a=1', { headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
  ]) {
    assert.equal(holds([['$.a', 'absent']], ctx), true);
    assert.equal(holds([['$.a', 'present']], ctx), false);
    assert.equal(holds([['$', 'present']], ctx), false);
    assert.equal(holds([['$.a', '!=', 1]], ctx), false);
  }
  assert.equal(holds([['$', 'is_null']], jsonRequest('null')), true, 'a JSON null document is present');
  assert.equal(holds([['$.a', '==', 1]], jsonRequest('\ufeff{"a":1}')), true, 'a byte-order mark is skipped');
});

void test('jsonpath: each body is parsed at most once per evaluate call', (t) => {
  const condition = compileCondition(
    [
      ['$.a', '==', 1],
      ['$.b', 'present'],
      ['OR', ['$.c', 'absent'], ['response_body:$.d', 'present']],
    ],
    'conditions',
  );
  const ctx = jsonRequest({ a: 1, b: 2 });
  const parse = t.mock.method(JSON, 'parse');
  assert.equal(condition.evaluate(ctx), true);
  assert.equal(parse.mock.callCount(), 1);
  ctx.request.body = Buffer.from('{"a":2,"b":2}');
  assert.equal(condition.evaluate(ctx), false, 'a later call sees the current body');
  assert.equal(parse.mock.callCount(), 2);
});

void test('jsonpath: a rule that needs no body never parses one', (t) => {
  const condition = compileCondition(
    [
      ['uri', '==', '/x'],
      ['$.a', 'present'],
    ],
    'conditions',
  );
  const parse = t.mock.method(JSON, 'parse');
  assert.equal(condition.evaluate(jsonRequest({ a: 1 })), false);
  assert.equal(parse.mock.callCount(), 0);
});

void test('jsonpath: recursive descent survives a deeply nested body', () => {
  const depth = 100_000;
  const ctx = jsonRequest(`${'['.repeat(depth)}{"deep":1}${']'.repeat(depth)}`);
  assert.equal(holds([['$..deep', '==', 1]], ctx), true);
});
