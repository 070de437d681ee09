import assert from 'node:assert/strict';
import { test } from 'node:test';
import { uriBlocker } from '../../../src/plugins/security/uri-blocker.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { LINEAR_BOUND_MS, REDOS_RULE, redosPath, timed } from '../../support/redos.js';
import { assertConfigError, assertSchemaRejects, templatedEnv } from '../../support/node-run.js';
import { responseJson } from '../../support/assertions.js';

const at = (url: string) => requestContext({ url });

test('uri-blocker: a matching path is denied with 403 and an empty body', () => {
  const node = instantiate(uriBlocker, { block_rules: ['root.exe', '^/admin/'] });
  const ctx = at('/admin/users');
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 403);
  assert.equal(ctx.response.body?.length, 0);
  assert.equal(node.run(at('/public')), 'success');
});

test('uri-blocker: rules see the query string too', () => {
  const node = instantiate(uriBlocker, { block_rules: ['root\\.exe'] });
  assert.equal(node.run(at('/download?file=root.exe')), 'denied');
  assert.equal(node.run(at('/download?file=notes.txt')), 'success');
});

test('uri-blocker: case_insensitive and a (?i) prefix both ignore case', () => {
  assert.equal(instantiate(uriBlocker, { block_rules: ['/admin'] }).run(at('/ADMIN/x')), 'success');
  assert.equal(
    instantiate(uriBlocker, { block_rules: ['/admin'], case_insensitive: true }).run(at('/ADMIN/x')),
    'denied',
  );
  assert.equal(instantiate(uriBlocker, { block_rules: ['(?i)/admin'] }).run(at('/ADMIN/x')), 'denied');
});

test('uri-blocker: rejected_code and a templated rejected_msg give {"error_msg": …}', () => {
  const node = instantiate(
    uriBlocker,
    { block_rules: ['^/admin'], rejected_code: 404, rejected_msg: 'no {{request.path}} here' },
    templatedEnv(),
  );
  const ctx = at('/admin');
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 404);
  assert.deepEqual(responseJson(ctx), { error_msg: 'no /admin here' });
});

test('uri-blocker: config rejections — invalid regex, empty and missing rule list, bad status', () => {
  assertConfigError(() => instantiate(uriBlocker, { block_rules: ['^/ok', '(unclosed'] }), 'block_rules[1]');
  assertSchemaRejects(() => instantiate(uriBlocker, { block_rules: [] }), 'block_rules');
  assertSchemaRejects(() => instantiate(uriBlocker, {}), 'block_rules');
  assertSchemaRejects(
    () => instantiate(uriBlocker, { block_rules: ['a'], rejected_code: 99 }),
    'rejected_code',
  );
});

test("uri-blocker: M3 the review's nested-quantifier rule answers the attack path in linear time", () => {
  const node = instantiate(uriBlocker, { block_rules: [REDOS_RULE] });
  const run = timed(() => node.run(at(redosPath(30))));
  assert.equal(run.value, 'success');
  assert.ok(run.ms < LINEAR_BOUND_MS, `took ${run.ms.toFixed(1)} ms`);
  assert.equal(node.run(at('/redos/aaaa')), 'denied');
});

test('uri-blocker: M3 a rule that needs backtracking is refused at load naming the rule', () => {
  assertConfigError(
    () => instantiate(uriBlocker, { block_rules: ['^/ok', '^/(a+)\\1$'] }),
    'block_rules[1]',
    /backreference/,
  );
});
