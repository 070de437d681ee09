import assert from 'node:assert/strict';
import { test } from 'node:test';
import { proxyRewrite } from '../../../src/plugins/core/proxy-rewrite.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { LINEAR_BOUND_MS, redosPath, timed } from '../../support/redos.js';
import { assertConfigError, assertSchemaRejects, runNow, templatedEnv } from '../../support/node-run.js';

test('proxy-rewrite: strip_path_prefix then add_path_prefix rewrite the path, query kept', () => {
  const node = instantiate(proxyRewrite, { strip_path_prefix: '/api', add_path_prefix: '/v2/' });
  const ctx = requestContext({ url: '/api/users?page=2' });
  assert.equal(node.run(ctx), 'success');
  assert.equal(ctx.request.url, '/v2/users?page=2');
  const root = requestContext({ url: '/api' });
  runNow(instantiate(proxyRewrite, { strip_path_prefix: '/api' }), root);
  assert.equal(root.request.path, '/');
  const other = requestContext({ url: '/other' });
  runNow(instantiate(proxyRewrite, { strip_path_prefix: '/api' }), other);
  assert.equal(other.request.path, '/other');
});

test('proxy-rewrite: uri replaces the path (and the query when it has one); templated', () => {
  const node = instantiate(proxyRewrite, { uri: '/users/{{request.headers.x-user}}' }, templatedEnv());
  const ctx = requestContext({ url: '/me?x=1', headers: { host: 'gw', 'x-user': '42' } });
  runNow(node, ctx);
  assert.equal(ctx.request.url, '/users/42?x=1');
  const withQuery = requestContext({ url: '/me?x=1' });
  runNow(instantiate(proxyRewrite, { uri: '/search?q={{request.method}}' }, templatedEnv()), withQuery);
  assert.equal(withQuery.request.path, '/search');
  assert.equal(withQuery.request.rawQuery, 'q=GET');
});

test('proxy-rewrite: regex_uri rewrites with the first matching pair; uri wins over it', () => {
  const node = instantiate(proxyRewrite, {
    regex_uri: ['^/nomatch/(.*)', '/x/$1', '^/api/v(\\d+)/(.*)', '/$2/v$1'],
  });
  const ctx = requestContext({ url: '/api/v3/items?a=b' });
  runNow(node, ctx);
  assert.equal(ctx.request.url, '/items/v3?a=b');
  const untouched = requestContext({ url: '/else' });
  runNow(node, untouched);
  assert.equal(untouched.request.path, '/else');
  const both = requestContext({ url: '/api/v3/items' });
  runNow(instantiate(proxyRewrite, { uri: '/fixed', regex_uri: ['.*', '/regex'] }, templatedEnv()), both);
  assert.equal(both.request.path, '/fixed');
});

test('proxy-rewrite: method and host are replaced; host templated', () => {
  const node = instantiate(
    proxyRewrite,
    { method: 'POST', host: '{{request.headers.x-tenant}}.internal' },
    templatedEnv(),
  );
  const ctx = requestContext({ method: 'GET', headers: { host: 'gw', 'x-tenant': 'acme' } });
  runNow(node, ctx);
  assert.equal(ctx.request.method, 'POST');
  assert.equal(ctx.request.host, 'acme.internal');
  assert.equal(ctx.request.headers.host, 'acme.internal');
});

test('proxy-rewrite: add_headers append (templated), remove_headers delete', () => {
  const node = instantiate(
    proxyRewrite,
    { add_headers: { 'X-Tpl': 'm={{request.method}} $keep', 'x-num': 2 }, remove_headers: ['X-Internal'] },
    templatedEnv(),
  );
  const ctx = requestContext({ headers: { host: 'gw', 'x-tpl': 'old', 'x-internal': 'secret' } });
  runNow(node, ctx);
  assert.deepEqual(ctx.request.headers['x-tpl'], ['old', 'm=GET $keep']);
  assert.equal(ctx.request.headers['x-num'], '2');
  assert.equal(ctx.request.headers['x-internal'], undefined);
  const list = requestContext();
  const listed = instantiate(proxyRewrite, {
    add_headers: [
      { name: 'x-a', value: 'v' },
      { name: '', value: 'skipped' },
    ],
  });
  runNow(listed, list);
  assert.equal(list.request.headers['x-a'], 'v');
});

test('proxy-rewrite: headers.add, headers.remove then headers.set, in that order', () => {
  const node = instantiate(
    proxyRewrite,
    {
      headers: {
        add: { 'x-added': 'a' },
        remove: ['x-gone', 'x-replaced'],
        set: { 'x-replaced': 'new', 'x-tenant': '{{request.query.t}}' },
      },
    },
    templatedEnv(),
  );
  const ctx = requestContext({
    url: '/?t=acme',
    headers: { host: 'gw', 'x-gone': '1', 'x-replaced': 'old' },
  });
  runNow(node, ctx);
  const h = ctx.request.headers;
  assert.equal(h['x-added'], 'a');
  assert.equal(h['x-gone'], undefined);
  assert.equal(h['x-replaced'], 'new');
  assert.equal(h['x-tenant'], 'acme');
});

test('proxy-rewrite: phase response acts on the response headers only', () => {
  const env = templatedEnv();
  const node = instantiate(
    proxyRewrite,
    {
      phase: 'response',
      strip_path_prefix: '/api',
      remove_headers: ['x-powered-by'],
      headers: { set: { 'x-status': '{{response.status}}' } },
    },
    env,
  );
  const ctx = requestContext({ url: '/api/x' });
  ctx.response.status = 201;
  ctx.response.headers['x-powered-by'] = 'php';
  runNow(node, ctx);
  assert.equal(ctx.request.path, '/api/x');
  assert.equal(ctx.response.headers['x-powered-by'], undefined);
  assert.equal(ctx.response.headers['x-status'], '201');
  assert.deepEqual(
    env.warnings.map((w) => w.key),
    ['strip_path_prefix'],
  );
});

test('proxy-rewrite: only response-phase header values that render the body count for streaming', () => {
  const reads = (config: Record<string, unknown>) =>
    proxyRewrite.readsResponseBody?.({ phase: 'request', remove_headers: [], ...config });
  assert.equal(reads({ add_headers: { 'x-b': '{{response.body}}' } }), false);
  assert.equal(reads({ phase: 'response', add_headers: { 'x-b': 'static' } }), false);
  assert.equal(reads({ phase: 'response', add_headers: { 'x-b': '{{ response.body }}' } }), true);
  assert.equal(
    reads({ phase: 'response', headers: { set: [{ name: 'x-b', value: '{{response.body}}' }] } }),
    true,
  );
  assert.equal(reads({ phase: 'response', headers: { add: { 'x-b': '$resp_body' } } }), false);
});

test('proxy-rewrite: config rejections — bad regex, odd regex_uri, bad header name, flat headers map, bad method', () => {
  assertConfigError(
    () => instantiate(proxyRewrite, { regex_uri: ['^/ok', '/x', '(', '/y'] }),
    'regex_uri[2]',
  );
  assertConfigError(() => instantiate(proxyRewrite, { regex_uri: ['a', 'b', 'c'] }), 'regex_uri');
  assertConfigError(
    () => instantiate(proxyRewrite, { add_headers: { 'bad name': 'x' } }),
    'add_headers.bad name',
  );
  assertSchemaRejects(() => instantiate(proxyRewrite, { headers: { 'x-foo': 'bar' } }), 'headers.x-foo');
  assertSchemaRejects(() => instantiate(proxyRewrite, { method: 'FETCH' }), 'method');
  assertSchemaRejects(() => instantiate(proxyRewrite, { regex_uri: ['only-one'] }), 'regex_uri');
});

test('proxy-rewrite: M3 a nested-quantifier regex_uri answers the attack path in linear time', () => {
  const node = instantiate(proxyRewrite, { regex_uri: ['^/redos/((a+)+)$', '/clean/$1'] });
  const attack = requestContext({ url: redosPath(30) });
  const run = timed(() => runNow(node, attack));
  assert.ok(run.ms < LINEAR_BOUND_MS, `took ${run.ms.toFixed(1)} ms`);
  assert.equal(attack.request.path, redosPath(30), 'no match leaves the path alone');
  const ok = requestContext({ url: '/redos/aaa' });
  runNow(node, ok);
  assert.equal(ok.request.path, '/clean/aaa');
});

test('proxy-rewrite: M3 a regex_uri that needs backtracking is refused at load naming the pattern', () => {
  assertConfigError(
    () => instantiate(proxyRewrite, { regex_uri: ['^/a/(.*)', '/b/$1', '^/(\\w+)/\\1$', '/c'] }),
    'regex_uri[2]',
    /backreference/,
  );
});

test('F-12: proxy-rewrite normalises what it rewrites: a static uri above the root is a load error, a regex ? starts the query, a templated .. is refused', () => {
  assertConfigError(() => instantiate(proxyRewrite, { uri: '/a/../../etc' }, templatedEnv()), 'uri');
  const literal = requestContext({ url: '/x' });
  runNow(instantiate(proxyRewrite, { uri: '/a/./b/../c#frag' }, templatedEnv()), literal);
  assert.equal(literal.request.url, '/a/c%23frag');
  const regex = requestContext({ url: '/old/7?keep=1' });
  runNow(instantiate(proxyRewrite, { regex_uri: ['^/old/(\\d+)$', '/new?id=$1#x'] }), regex);
  assert.equal(regex.request.path, '/new');
  assert.equal(regex.request.rawQuery, 'id=7%23x');
  const node = instantiate(proxyRewrite, { uri: '/inj/{{request.headers.x-p}}' }, templatedEnv());
  const climb = requestContext({ url: '/i', headers: { host: 'gw', 'x-p': '../admin' } });
  assert.throws(() => node.run(climb), { code: 'UPSTREAM_REQUEST_BUILD_ERROR' });
  const spaced = requestContext({ url: '/i', headers: { host: 'gw', 'x-p': 'a b\\c' } });
  runNow(node, spaced);
  assert.equal(spaced.request.path, '/inj/a%20b%5Cc');
});
