import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requestContext } from '../support/plugin-env.js';
import { holds, jsonRequest } from './support.js';
import { LINEAR_BOUND_MS, REDOS_RULE, redosPath, timed } from '../support/redos.js';

const flat = () =>
  requestContext({
    url: '/api/users?name=jack&age=30&empty=',
    headers: {
      host: 'gateway.test',
      'user-agent': 'Mozilla/5.0',
      'x-tags': 'beta, internal',
      authorization: 'Bearer abc',
      cookie: 'session=abc123; theme=dark',
    },
    remoteAddress: '10.1.2.3',
  });

const body = () =>
  jsonRequest({
    name: 'jack',
    age: 30,
    ratio: '2.5',
    admin: true,
    tags: ['beta', 'internal', 7],
    client: '10.1.2.3',
    note: 'hello world',
  });

void test('conditions: == compares text, and numerically when both sides are numbers', () => {
  const ctx = flat();
  assert.equal(holds([['arg_name', '==', 'jack']], ctx), true);
  assert.equal(holds([['arg_name', '==', 'jill']], ctx), false);
  assert.equal(holds([['arg_age', '==', 30]], ctx), true);
  assert.equal(holds([['arg_age', '==', '30.0']], ctx), true);
  assert.equal(holds([['uri', '==', '/api/users']], ctx), true);
  assert.equal(holds([['host', '==', 'gateway.test']], ctx), true);
  assert.equal(holds([['method', '==', 'GET']], ctx), true);
});

void test('conditions: == on JSON nodes compares natively; booleans only equal booleans', () => {
  const ctx = body();
  assert.equal(holds([['$.name', '==', 'jack']], ctx), true);
  assert.equal(holds([['$.age', '==', 30]], ctx), true);
  assert.equal(holds([['$.age', '==', '30']], ctx), true);
  assert.equal(holds([['$.ratio', '==', 2.5]], ctx), true);
  assert.equal(holds([['$.admin', '==', true]], ctx), true);
  assert.equal(holds([['$.admin', '==', 'true']], ctx), false);
  assert.equal(holds([['$.tags', '==', 'beta']], ctx), false, 'an array never equals a scalar');
});

void test('conditions: ~= and != are the negation of == per value', () => {
  const ctx = flat();
  assert.equal(holds([['arg_name', '~=', 'jill']], ctx), true);
  assert.equal(holds([['arg_name', '!=', 'jack']], ctx), false);
  assert.equal(holds([['$.age', '!=', 31]], body()), true);
  assert.equal(holds([['$.age', '~=', 30]], body()), false);
});

void test('conditions: > >= < <= compare numbers; non-numbers never satisfy them', () => {
  const ctx = flat();
  assert.equal(holds([['arg_age', '>', 18]], ctx), true);
  assert.equal(holds([['arg_age', '>', '30']], ctx), false);
  assert.equal(holds([['arg_age', '>=', 30]], ctx), true);
  assert.equal(holds([['arg_age', '<', 31]], ctx), true);
  assert.equal(holds([['arg_age', '<=', 29]], ctx), false);
  assert.equal(holds([['arg_name', '<', 100]], ctx), false);
  assert.equal(holds([['arg_missing', '<', 100]], ctx), false, 'absent is "", not 0');
  const b = body();
  assert.equal(holds([['$.age', '>', 18]], b), true);
  assert.equal(holds([['$.ratio', '>=', 2.5]], b), true);
  assert.equal(holds([['$.name', '<', 100]], b), false);
  assert.equal(holds([['$.admin', '>', 0]], b), false);
});

void test('conditions: ~~ matches a regex anywhere and ~* ignores case', () => {
  const ctx = flat();
  assert.equal(holds([['http_user_agent', '~~', 'Mozilla.+']], ctx), true);
  assert.equal(holds([['http_user_agent', '~~', 'mozilla']], ctx), false);
  assert.equal(holds([['http_user_agent', '~*', 'mozilla']], ctx), true);
  assert.equal(holds([['http_user_agent', '~~', '(?i)MOZILLA']], ctx), true, 'PCRE inline (?i) is honoured');
  assert.equal(holds([['uri', '~~', '^/api/']], ctx), true);
  assert.equal(holds([['$.note', '~~', 'wor.d$']], body()), true);
  assert.equal(holds([['$.age', '~~', '30']], body()), false, 'regexes apply to string nodes only');
  assert.equal(holds([['$.note', '~*', 'HELLO']], body()), true);
});

void test('conditions: in matches any listed value', () => {
  const ctx = flat();
  assert.equal(holds([['arg_name', 'in', ['jill', 'jack']]], ctx), true);
  assert.equal(holds([['arg_name', 'in', ['jill']]], ctx), false);
  assert.equal(holds([['arg_age', 'in', [29, 30]]], ctx), true);
  assert.equal(holds([['arg_name', 'in', []]], ctx), false);
  assert.equal(holds([['$.age', 'in', [30, 31]]], body()), true);
  assert.equal(holds([['$.admin', 'in', [true]]], body()), true);
  assert.equal(holds([['$.name', 'in', ['jill']]], body()), false);
});

void test('conditions: has looks into comma lists, JSON arrays and message lists', () => {
  const ctx = flat();
  assert.equal(holds([['http_x_tags', 'has', 'internal']], ctx), true);
  assert.equal(holds([['http_x_tags', 'has', 'intern']], ctx), false);
  assert.equal(holds([['$.tags', 'has', 'beta']], body()), true);
  assert.equal(holds([['$.tags', 'has', 7]], body()), true);
  assert.equal(holds([['$.name', 'has', 'jack']], body()), false, 'a string node is not an array');
  ctx.message.groups = ['ops', 'dev'];
  assert.equal(holds([['msg_groups', 'has', 'dev']], ctx), true);
  assert.equal(holds([['msg_groups', 'has', 'qa']], ctx), false);
});

void test('conditions: contains is a substring test on text and an element test on arrays', () => {
  const ctx = flat();
  assert.equal(holds([['http_authorization', 'contains', 'Bearer']], ctx), true);
  assert.equal(holds([['http_authorization', 'contains', 'Basic']], ctx), false);
  assert.equal(holds([['http_missing', 'contains', '']], ctx), false, 'an absent variable contains nothing');
  const b = body();
  assert.equal(holds([['$.note', 'contains', 'lo wo']], b), true);
  assert.equal(holds([['$.tags', 'contains', 'internal']], b), true);
  assert.equal(holds([['$.tags', 'contains', 'intern']], b), false);
  assert.equal(holds([['$.age', 'contains', '3']], b), false, 'numbers are neither text nor arrays');
});

void test('conditions: ipmatch accepts CIDRs and addresses, IPv4 and IPv6', () => {
  const ctx = flat();
  assert.equal(holds([['remote_addr', 'ipmatch', ['10.0.0.0/8']]], ctx), true);
  assert.equal(holds([['remote_addr', 'ipmatch', ['10.1.2.3']]], ctx), true);
  assert.equal(holds([['remote_addr', 'ipmatch', ['192.168.0.0/16', '2001:db8::/32']]], ctx), false);
  const v6 = requestContext({ remoteAddress: '2001:db8::7' });
  assert.equal(holds([['remote_addr', 'ipmatch', ['2001:db8::/32']]], v6), true);
  assert.equal(holds([['remote_addr', 'ipmatch', ['10.0.0.0/8']]], v6), false);
  const mapped = requestContext({ remoteAddress: '::ffff:10.1.2.3' });
  assert.equal(holds([['remote_addr', 'ipmatch', ['10.0.0.0/8']]], mapped), true);
  assert.equal(holds([['http_missing', 'ipmatch', ['0.0.0.0/0']]], ctx), false, 'absent is not an address');
  assert.equal(holds([['$.client', 'ipmatch', ['10.1.0.0/16']]], body()), true);
  assert.equal(holds([['$.name', 'ipmatch', ['0.0.0.0/0']]], body()), false);
});

void test('conditions: present and absent on flat variables; an empty value is present', () => {
  const ctx = flat();
  assert.equal(holds([['http_authorization', 'present']], ctx), true);
  assert.equal(holds([['http_x_missing', 'present']], ctx), false);
  assert.equal(holds([['http_x_missing', 'absent']], ctx), true);
  assert.equal(holds([['arg_empty', 'present']], ctx), true);
  assert.equal(holds([['arg_empty', '==', '']], ctx), true);
  assert.equal(holds([['arg_nope', '==', '']], ctx), true, 'absent compares as ""');
  assert.equal(holds([['cookie_session', 'present']], ctx), true);
  assert.equal(holds([['cookie_nope', 'absent']], ctx), true);
  assert.equal(holds([['consumer_name', 'absent']], ctx), true);
  ctx.setConsumer({ name: 'alice' });
  assert.equal(holds([['consumer_name', '==', 'alice']], ctx), true);
  assert.equal(holds([['msg_consumer.name', 'present']], ctx), true);
  assert.equal(holds([['uri', 'present']], ctx), true);
  assert.equal(holds([['no_such_variable', 'absent']], ctx), true, 'unknown names never resolve');
  assert.equal(holds([['no_such_variable', '==', '']], ctx), true);
});

void test('conditions: other catalog families read through the template readers', () => {
  const form = requestContext({
    method: 'POST',
    headers: { host: 'gateway.test', 'content-type': 'application/x-www-form-urlencoded' },
    body: Buffer.from('user=bob&note=hello%20world'),
  });
  assert.equal(holds([['post_arg_note', '==', 'hello world']], form), true);
  assert.equal(holds([['post_arg_x', 'absent']], form), true);
  const ctx = requestContext();
  ctx.message.tenant = 'acme';
  ctx.response.status = 502;
  ctx.response.headers['content-type'] = 'text/html';
  assert.equal(holds([['msg_tenant', '==', 'acme']], ctx), true);
  assert.equal(holds([['status', '>=', 500]], ctx), true);
  assert.equal(holds([['sent_http_content_type', '~~', '^text/']], ctx), true);
  assert.equal(holds([['sent_http_x_cache', 'absent']], ctx), true);
});

void test('conditions: ! negates a whole rule, unary rules included', () => {
  const ctx = flat();
  assert.equal(holds([['arg_name', '!', '==', 'jill']], ctx), true);
  assert.equal(holds([['arg_name', '!', '==', 'jack']], ctx), false);
  assert.equal(holds([['arg_age', '!', '>', 18]], ctx), false);
  assert.equal(holds([['http_authorization', '!', 'present']], ctx), false);
  assert.equal(holds([['http_x_missing', '!', 'present']], ctx), true);
  assert.equal(holds([['$.tags[*]', '!', '==', 'gamma']], body()), true);
});

void test('conditions: M3 ~~ and ~* run on the linear-time engine, so a nested quantifier cannot stall', () => {
  const attack = requestContext({ url: redosPath(30) });
  for (const op of ['~~', '~*']) {
    const run = timed(() => holds([['uri', op, REDOS_RULE]], attack));
    assert.equal(run.value, false);
    assert.ok(run.ms < LINEAR_BOUND_MS, `${op} took ${run.ms.toFixed(1)} ms`);
    assert.equal(holds([['uri', op, REDOS_RULE]], requestContext({ url: '/redos/aaa' })), true);
  }
});
