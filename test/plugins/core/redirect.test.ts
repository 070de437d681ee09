import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { redirect } from '../../../src/plugins/core/redirect.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { request } from '../../support/http.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { LINEAR_BOUND_MS, redosPath, timed } from '../../support/redos.js';
import {
  assertConfigError,
  assertSchemaRejects,
  bodyText,
  runNow,
  templatedEnv,
} from '../../support/node-run.js';

test('redirect: uri mode prepares ret_code + location (legacy $var and {{…}}) on the redirect port', () => {
  const node = instantiate(
    redirect,
    { uri: 'https://$host/new{{request.path}}', ret_code: 301 },
    templatedEnv(),
  );
  const ctx = requestContext({ url: '/old?x=1', host: 'api.test', headers: { host: 'api.test' } });
  ctx.response.setBody('stale', 'text/plain');
  assert.equal(runNow(node, ctx), 'redirect');
  assert.equal(ctx.response.status, 301);
  assert.equal(ctx.response.headers.location, 'https://api.test/new/old');
  assert.equal(bodyText(ctx), '');
});

test('redirect: ret_code defaults to 302', () => {
  const ctx = requestContext();
  runNow(instantiate(redirect, { uri: '/login' }, templatedEnv()), ctx);
  assert.equal(ctx.response.status, 302);
});

test('redirect: append_query_string adds the original query with ? or &', () => {
  const node = instantiate(redirect, { uri: '/a', append_query_string: true }, templatedEnv());
  const ctx = requestContext({ url: '/x?b=2&a=1' });
  runNow(node, ctx);
  assert.equal(ctx.response.headers.location, '/a?b=2&a=1');
  const withQuery = instantiate(redirect, { uri: '/a?fixed=1', append_query_string: true }, templatedEnv());
  const ctx2 = requestContext({ url: '/x?b=2' });
  runNow(withQuery, ctx2);
  assert.equal(ctx2.response.headers.location, '/a?fixed=1&b=2');
  const noQuery = requestContext({ url: '/x' });
  runNow(node, noQuery);
  assert.equal(noQuery.response.headers.location, '/a');
});

test('redirect: http_to_https gives 301 for GET, 308 for POST; https requests pass on success', () => {
  const node = instantiate(redirect, { http_to_https: true });
  const get = requestContext({ url: '/p?q=1', headers: { host: 'shop.test:8080' } });
  assert.equal(runNow(node, get), 'redirect');
  assert.equal(get.response.status, 301);
  assert.equal(get.response.headers.location, 'https://shop.test:8080/p?q=1');
  const post = requestContext({ method: 'POST', url: '/p', headers: { host: 'shop.test' } });
  runNow(node, post);
  assert.equal(post.response.status, 308);
  const secure = requestContext({ scheme: 'https' });
  assert.equal(runNow(node, secure), 'success');
  assert.equal(secure.response.status, 0);
  const forwarded = requestContext({ headers: { host: 'x', 'x-forwarded-proto': 'https, http' } });
  assert.equal(runNow(node, forwarded), 'success');
});

test('redirect: regex_uri rewrites with the first matching pair; no match continues on success', () => {
  const node = instantiate(redirect, {
    regex_uri: ['^/nope/(.*)', '/x/$1', '^/old/(\\w+)/(\\d+)$', '/new/${2}/$1'],
    ret_code: 307,
  });
  const ctx = requestContext({ url: '/old/item/42' });
  assert.equal(runNow(node, ctx), 'redirect');
  assert.equal(ctx.response.status, 307);
  assert.equal(ctx.response.headers.location, '/new/42/item');
  const miss = requestContext({ url: '/other' });
  assert.equal(runNow(node, miss), 'success');
  assert.equal(miss.response.headers.location, undefined);
});

test('redirect: encode_uri percent-encodes what a Location cannot carry, keeping reserved characters', () => {
  const node = instantiate(
    redirect,
    { uri: '/search/{{request.query.q}}?a=b c', encode_uri: true },
    templatedEnv(),
  );
  const ctx = requestContext({ url: '/s?q=caf%C3%A9%20bar' });
  runNow(node, ctx);
  assert.equal(ctx.response.headers.location, '/search/caf%C3%A9%20bar?a=b%20c');
});

test('redirect: config rejections', () => {
  assertConfigError(() => instantiate(redirect, {}), '', /exactly one/);
  assertConfigError(() => instantiate(redirect, { uri: '/a', http_to_https: true }), '', /exactly one/);
  assertConfigError(
    () => instantiate(redirect, { http_to_https: true, append_query_string: true }),
    'append_query_string',
  );
  assertConfigError(() => instantiate(redirect, { regex_uri: ['^/a', '/b', '^/c'] }), 'regex_uri');
  assertConfigError(
    () => instantiate(redirect, { regex_uri: ['(', '/b'] }),
    'regex_uri[0]',
    /not a valid regular expression/,
  );
  assertSchemaRejects(() => instantiate(redirect, { uri: '/a', ret_code: 100 }), 'ret_code');
  assertSchemaRejects(() => instantiate(redirect, { uri: '/a', https_port: 443 }), 'https_port');
});

const gateways: RunningGateway[] = [];
after(() => Promise.all(gateways.map((g) => g.stop())));

test('redirect: end to end the redirect port reaches the client, success reaches the next node', async () => {
  const gw = await startGateway(`
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - id: moved
        type: redirect
        config: { regex_uri: ['^/old/(.*)', '/new/$1'], ret_code: 301 }
      - { id: fallback, type: mocking, config: { response_example: 'not moved', content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: moved.in }
      - { from: moved.redirect, to: client.in }
      - { from: moved.success, to: fallback.in }
      - { from: fallback.success, to: client.in }
`);
  gateways.push(gw);
  const moved = await request(`${gw.url}/old/thing`);
  assert.equal(moved.status, 301);
  assert.equal(moved.headers.location, '/new/thing');
  const stay = await request(`${gw.url}/else`);
  assert.equal(stay.status, 200);
  assert.equal(stay.body, 'not moved');
});

test('redirect: M3 a nested-quantifier regex_uri answers the attack path in linear time', () => {
  const node = instantiate(redirect, { regex_uri: ['^/redos/((a+)+)$', '/clean/$1'] });
  const run = timed(() => runNow(node, requestContext({ url: redosPath(30) })));
  assert.equal(run.value, 'success');
  assert.ok(run.ms < LINEAR_BOUND_MS, `took ${run.ms.toFixed(1)} ms`);
  const ok = requestContext({ url: '/redos/aaa' });
  assert.equal(runNow(node, ok), 'redirect');
  assert.equal(ok.response.headers.location, '/clean/aaa');
});

test('redirect: M3 a regex_uri that needs backtracking is refused at load naming the pattern', () => {
  assertConfigError(
    () => instantiate(redirect, { regex_uri: ['^/(?=old)(.*)', '/new/$1'] }),
    'regex_uri[0]',
    /lookahead/,
  );
});
