import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { responseRewrite } from '../../../src/plugins/core/response-rewrite.js';
import { read, startAdmin, type AdminHarness } from '../../admin/harness.js';
import type { Origin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { startSlowOrigin } from '../streaming-probe.js';
import { LINEAR_BOUND_MS, timed } from '../../support/redos.js';
import {
  assertConfigError,
  assertSchemaRejects,
  bodyText,
  runNow,
  templatedEnv,
} from '../../support/node-run.js';

function upstreamResponse(body = '{"ok":true}', headers: Record<string, string> = {}) {
  const ctx = requestContext({ url: '/r', headers: { host: 'h', 'x-id': 'abc' } });
  ctx.response.status = 200;
  ctx.response.headers = {
    'content-type': 'application/json',
    'content-length': String(body.length),
    ...headers,
  };
  ctx.response.body = Buffer.from(body);
  return ctx;
}

test('response-rewrite: status_code and body replace the response; body-derived headers go', () => {
  const node = instantiate(
    responseRewrite,
    { status_code: 203, body: 'seen {{response.status}} for {{request.path}}' },
    templatedEnv(),
  );
  const ctx = upstreamResponse('{}', { etag: '"v1"', 'last-modified': 'yesterday' });
  assert.equal(runNow(node, ctx), 'success');
  assert.equal(ctx.response.status, 203);
  assert.equal(bodyText(ctx), 'seen 203 for /r');
  for (const h of ['content-length', 'etag', 'last-modified'])
    assert.equal(ctx.response.headers[h], undefined);
});

test('response-rewrite: body_base64 is decoded at load', () => {
  const node = instantiate(responseRewrite, {
    body: Buffer.from('bin\u0000ary').toString('base64'),
    body_base64: true,
  });
  const ctx = upstreamResponse();
  runNow(node, ctx);
  assert.deepEqual(ctx.response.body, Buffer.from('bin\u0000ary'));
});

test('response-rewrite: headers add appends, set replaces, remove deletes; values legacy + {{…}} templated', () => {
  const node = instantiate(
    responseRewrite,
    {
      headers: {
        add: ['X-Trace: $http_x_id', 'Vary: {{request.method}}'],
        set: { 'X-Status': '$status', 'x-n': 3 },
        remove: ['X-Powered-By'],
      },
    },
    templatedEnv(),
  );
  const ctx = upstreamResponse('{}', { vary: 'Origin', 'x-powered-by': 'php', 'x-status': 'old' });
  runNow(node, ctx);
  const h = ctx.response.headers;
  assert.equal(h['x-trace'], 'abc');
  assert.deepEqual(h.vary, ['Origin', 'GET']);
  assert.equal(h['x-status'], '200');
  assert.equal(h['x-n'], '3');
  assert.equal(h['x-powered-by'], undefined);
  assert.equal(bodyText(ctx), '{}', 'body untouched');
});

test('response-rewrite: a flat headers map is the deprecated form of set', () => {
  const ctx = upstreamResponse();
  runNow(instantiate(responseRewrite, { headers: { 'X-Server': 'edge-1' } }, templatedEnv()), ctx);
  assert.equal(ctx.response.headers['x-server'], 'edge-1');
});

test('response-rewrite: filters substitute once or globally, case-insensitive with options i', () => {
  const node = instantiate(responseRewrite, {
    filters: [
      { regex: 'secret', replace: '***', scope: 'global' },
      { regex: 'HELLO (\\w+)', replace: 'bye $1', options: 'i' },
      { regex: 'a', replace: 'A' },
    ],
  });
  const ctx = upstreamResponse('hello world: secret, secret, banana');
  runNow(node, ctx);
  assert.equal(bodyText(ctx), 'bye world: ***, ***, bAnana');
  assert.equal(ctx.response.headers['content-length'], undefined);
});

test('response-rewrite: filters decode a gzip body first and drop content-encoding', () => {
  const ctx = upstreamResponse();
  ctx.response.body = gzipSync('token=abc');
  ctx.response.headers['content-encoding'] = 'gzip';
  runNow(instantiate(responseRewrite, { filters: [{ regex: 'abc', replace: 'xyz' }] }), ctx);
  assert.equal(bodyText(ctx), 'token=xyz');
  assert.equal(ctx.response.headers['content-encoding'], undefined);
});

test('response-rewrite: vars gates the node; false leaves the response untouched', () => {
  const node = instantiate(
    responseRewrite,
    {
      status_code: 500,
      headers: { set: { 'x-hit': '1' } },
      vars: [
        ['status', '==', 200],
        ['http_x_id', '==', 'abc'],
      ],
    },
    templatedEnv(),
  );
  const hit = upstreamResponse();
  runNow(node, hit);
  assert.equal(hit.response.status, 500);
  const miss = upstreamResponse();
  miss.response.status = 404;
  runNow(node, miss);
  assert.equal(miss.response.status, 404);
  assert.equal(miss.response.headers['x-hit'], undefined);
  // The list-of-expressions shape: any one expression suffices.
  const list = instantiate(responseRewrite, {
    status_code: 299,
    vars: [[['status', '==', 404]], [['status', '==', 200]]],
  });
  const ctx = upstreamResponse();
  runNow(list, ctx);
  assert.equal(ctx.response.status, 299);
});

test('response-rewrite: readsResponseBody only when the config references the body', () => {
  const reads = (config: Record<string, unknown>) => responseRewrite.readsResponseBody!(config as never);
  assert.equal(reads({ body_base64: false, status_code: 201, headers: { set: { a: 'b' } } }), false);
  assert.equal(reads({ body_base64: false, body: 'replaced' }), false);
  assert.equal(reads({ body_base64: false, vars: [['status', '==', 200]] }), false);
  assert.equal(reads({ body_base64: false, filters: [{ regex: 'a', replace: 'b' }] }), true);
  assert.equal(reads({ body_base64: false, body: 'wrapped {{response.body}}' }), true);
  assert.equal(reads({ body_base64: false, headers: { add: ['x-b: $resp_body'] } }), true);
  assert.equal(reads({ body_base64: false, vars: [['response_body:$.ok', '==', true]] }), true);
});

test('response-rewrite: config rejections', () => {
  assertConfigError(
    () => instantiate(responseRewrite, { add_headers: { a: 'b' } }),
    'add_headers',
    /headers/,
  );
  assertConfigError(
    () => instantiate(responseRewrite, { body: 'x', filters: [{ regex: 'a', replace: 'b' }] }),
    'filters',
  );
  assertConfigError(() => instantiate(responseRewrite, { body_base64: true }), 'body_base64');
  assertConfigError(() => instantiate(responseRewrite, { body: '%%%', body_base64: true }), 'body');
  assertConfigError(
    () => instantiate(responseRewrite, { filters: [{ regex: '(', replace: '' }] }),
    'filters[0].regex',
  );
  assertConfigError(() => instantiate(responseRewrite, { headers: { add: ['no colon'] } }), 'headers.add[0]');
  assertConfigError(() => instantiate(responseRewrite, { vars: [['status', 'bogus-op', 1]] }), 'vars[0][1]');
  assertSchemaRejects(() => instantiate(responseRewrite, { status_code: 100 }), 'status_code');
  assertSchemaRejects(
    () => instantiate(responseRewrite, { filters: [{ regex: 'a', replace: 'b', options: 'jo' }] }),
    'filters[0].options',
  );
});

const harnesses: AdminHarness[] = [];
const origins: Origin[] = [];
after(async () => {
  await Promise.all(harnesses.map((h) => h.stop()));
  await Promise.all(origins.map((o) => o.close()));
});

function policy(name: string, port: number, rewrite: Record<string, unknown>) {
  return {
    name,
    nodes: [
      { id: 'in', type: 'listener' },
      { id: 'up', type: 'upstream', config: { targets: [{ host: '127.0.0.1', port }] } },
      { id: 'rw', type: 'response-rewrite', config: rewrite },
      { id: 'out', type: 'client' },
    ],
    edges: [
      { from: 'in.out', to: 'up.in' },
      { from: 'up.success', to: 'rw.in' },
      { from: 'rw.success', to: 'out.in' },
    ],
  };
}

test('response-rewrite: E2E-STREAM — header-only config keeps the upstream streaming, a body filter buffers it', async () => {
  const slow = await startSlowOrigin();
  origins.push(slow.origin);
  const streamingPolicy = policy('rw-stream', slow.origin.port, { headers: { set: { 'x-rw': 'yes' } } });
  const bufferingPolicy = policy('rw-buffer', slow.origin.port, {
    filters: [{ regex: 'one', replace: 'ONE' }],
  });
  const h = await startAdmin({
    gatewayYaml: `
routes:
  - { name: s, match: { path: /s }, policy: rw-stream }
  - { name: b, match: { path: /b }, policy: rw-buffer }
policies: ${JSON.stringify([streamingPolicy, bufferingPolicy])}
`,
  });
  harnesses.push(h);

  const kept = await read(await h.call('POST', '/api/policies/validate', streamingPolicy));
  assert.deepEqual((kept.body as { valid: boolean; buffering: unknown[] }).buffering, []);
  const blocked = await read(await h.call('POST', '/api/policies/validate', bufferingPolicy));
  assert.deepEqual((blocked.body as { buffering: unknown[] }).buffering, [
    { upstream: 'up', blocked_by: 'rw' },
  ]);

  const streamed = await slow.probe(`${h.data}/s`);
  assert.equal(streamed.streamed, true, 'first event reached the client before the origin finished');
  assert.equal(streamed.headers['x-rw'], 'yes');
  assert.equal(streamed.body, 'data: one\n\ndata: two\n\n');
  const buffered = await slow.probe(`${h.data}/b`);
  assert.equal(buffered.streamed, false);
  assert.equal(buffered.body, 'data: ONE\n\ndata: two\n\n');
});

test('response-rewrite: M3 a nested-quantifier filter rewrites a crafted body in linear time', () => {
  const node = instantiate(responseRewrite, {
    filters: [{ regex: '(a+)+!$', replace: 'x', scope: 'global' }],
  });
  // 100 000 a's and no '!': a backtracking engine never finishes this body.
  const ctx = upstreamResponse(`${'a'.repeat(100_000)}?`);
  const run = timed(() => runNow(node, ctx));
  assert.ok(run.ms < LINEAR_BOUND_MS, `took ${run.ms.toFixed(1)} ms`);
  assert.equal(bodyText(ctx).length, 100_001);
  const hit = upstreamResponse('say aaa!');
  runNow(node, hit);
  assert.equal(bodyText(hit), 'say x');
});

test('response-rewrite: M3 a filter that needs backtracking is refused at load naming the filter', () => {
  assertConfigError(
    () =>
      instantiate(responseRewrite, {
        filters: [
          { regex: 'a', replace: 'b' },
          { regex: '(\\w)\\1', replace: '' },
        ],
      }),
    'filters[1].regex',
    /backreference/,
  );
});
