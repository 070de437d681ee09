import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { compileGateway } from '../../src/engine/compile.js';
import { checkGatewayShape } from '../../src/config/gateway.js';
import { Context } from '../../src/core/context.js';
import { runPolicy } from '../../src/engine/run.js';
import type { CompiledNode, CompiledPolicy, EdgeKind } from '../../src/core/graph-types.js';
import { silentLogger } from '../../src/core/logger.js';
import { templateFactory } from '../../src/engine/templates.js';
import { testRegistry } from '../support/test-plugins.js';

function policyOf(yaml: string): CompiledPolicy {
  const rt = compileGateway(checkGatewayShape(parse(yaml)), {
    registry: testRegistry,
    logger: silentLogger,
    env: {},
    templateFactory: templateFactory({}),
  });
  const p = rt.policies.get('p');
  assert.ok(p);
  return p;
}

function context(headers: Record<string, string> = {}): Context {
  return new Context(
    {
      method: 'GET',
      url: '/x?a=1',
      host: 'example.test',
      scheme: 'http',
      protocol: 'http1',
      headers,
      remoteAddress: '127.0.0.1',
      remotePort: 5000,
    },
    new AbortController().signal,
  );
}

const hooks = { logger: silentLogger };

const chain = (async: boolean) => `
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: a, type: test-tag, config: { tag: a, async: ${async} } }
      - { id: g, type: test-gate }
      - { id: b, type: test-tag, config: { tag: b } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: a.in }
      - { from: a.success, to: g.in }
      - { from: g.success, to: b.in }
      - { from: g.denied, to: out.in }
      - { from: b.success, to: out.in }
`;

test('run loop: an all-synchronous graph completes without creating a promise', () => {
  const ctx = context();
  const result = runPolicy(policyOf(chain(false)), ctx, hooks);
  assert.equal(result, undefined);
  assert.equal(ctx.response.headers['x-trail'], 'a,b');
});

test('run loop: an async node resumes the walk and follows the same edges', async () => {
  const ctx = context();
  const result = runPolicy(policyOf(chain(true)), ctx, hooks);
  assert.ok(result instanceof Promise);
  await result;
  assert.equal(ctx.response.headers['x-trail'], 'a,b');
});

test('run loop: an outcome port exit takes its edge and records no error', () => {
  const ctx = context({ 'x-deny': '1' });
  assert.equal(runPolicy(policyOf(chain(false)), ctx, hooks), undefined);
  assert.equal(ctx.response.status, 403);
  assert.equal(ctx.response.headers['x-trail'], 'a');
  assert.deepEqual(ctx.errors, []);
});

const failing = (opts: { edge: boolean; handler: boolean; async?: boolean }) => `
policies:
  - name: p
    ${opts.handler ? 'error_handler: eh' : ''}
    nodes:
      - { id: in, type: listener }
      - { id: f, type: test-fail, config: { code: BOOM, async: ${opts.async ?? false} } }
      - { id: own, type: test-tag, config: { tag: own-error-edge } }
      - { id: eh, type: error-handler, config: { status_code: 599, body_template: '{"c":"{{error.code}}","n":"{{error.node_id}}"}' } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: f.in }
      - { from: f.success, to: out.in }
      ${opts.edge ? '- { from: f.error, to: own.in }' : ''}
      - { from: own.success, to: out.in }
      - { from: eh.success, to: out.in }
`;

for (const async of [false, true]) {
  const mode = async ? 'async' : 'sync';
  test(`run loop (${mode}): a failure follows the node's own error edge and records the error`, async () => {
    const ctx = context();
    await runPolicy(policyOf(failing({ edge: true, handler: true, async })), ctx, hooks);
    assert.equal(ctx.response.headers['x-trail'], 'own-error-edge');
    assert.deepEqual(ctx.errors, [{ node_id: 'f', code: 'BOOM', message: 'test node failed', metadata: {} }]);
    assert.equal(ctx.response.status, 503);
    assert.deepEqual(JSON.parse(ctx.response.body?.toString() ?? ''), {
      error: 'internal_error',
      message: 'test node failed',
    });
  });

  test(`run loop (${mode}): without an error edge the policy error_handler catches the failure`, async () => {
    const ctx = context();
    await runPolicy(policyOf(failing({ edge: false, handler: true, async })), ctx, hooks);
    assert.equal(ctx.response.status, 599);
    assert.deepEqual(JSON.parse(ctx.response.body?.toString() ?? ''), { c: 'BOOM', n: 'f' });
  });

  test(`run loop (${mode}): without edge or handler the generic 500 answers`, async () => {
    const ctx = context();
    await runPolicy(policyOf(failing({ edge: false, handler: false, async })), ctx, hooks);
    assert.equal(ctx.response.status, 500);
    assert.deepEqual(JSON.parse(ctx.response.body?.toString() ?? ''), {
      error: 'internal_error',
      message: 'Unhandled error in routing policy',
    });
    assert.equal(ctx.errors.length, 1);
  });
}

test('run loop: node errors are reported to the nodeError hook; outcomes are not', async () => {
  const seen: string[] = [];
  const counting = {
    logger: silentLogger,
    nodeError: (p: string, n: string, c: string) => seen.push(`${p}/${n}/${c}`),
  };
  await runPolicy(policyOf(failing({ edge: true, handler: false })), context(), counting);
  assert.equal(runPolicy(policyOf(chain(false)), context({ 'x-deny': '1' }), counting), undefined);
  assert.deepEqual(seen, ['p/f/BOOM']);
});

test('run loop: the trace recorder sees every step with its port and edge kind', async () => {
  const steps: [string, string, EdgeKind][] = [];
  const recorder = {
    step: (n: CompiledNode, port: string, edge: EdgeKind) => steps.push([n.id, port, edge]),
  };
  await runPolicy(policyOf(failing({ edge: false, handler: true })), context(), hooks, recorder);
  assert.deepEqual(steps, [
    ['f', 'error', 'catch_all'],
    ['eh', 'success', 'success'],
    ['out', 'in', 'terminal'],
  ]);
  steps.length = 0;
  await runPolicy(policyOf(failing({ edge: false, handler: false })), context(), hooks, recorder);
  assert.deepEqual(steps, [['f', 'error', 'unhandled']]);
});

test('context: query, cookies and form fields are parsed lazily from the raw request', () => {
  const ctx = new Context(
    {
      method: 'POST',
      url: '/p?a=1&a=2&b=x%20y',
      host: 'h',
      scheme: 'http',
      protocol: 'http1',
      headers: { cookie: 'sid=abc; theme="dark"', 'content-type': 'application/x-www-form-urlencoded' },
      remoteAddress: '10.0.0.1',
      remotePort: 1234,
      body: Buffer.from('f=1&g=two'),
    },
    new AbortController().signal,
  );
  assert.deepEqual(ctx.request.query.get('a'), ['1', '2']);
  assert.deepEqual(ctx.request.query.get('b'), ['x y']);
  assert.equal(ctx.request.cookies.get('theme'), 'dark');
  assert.deepEqual(ctx.request.form.get('g'), ['two']);
  assert.equal(ctx.request.remoteAddr, '10.0.0.1:1234');
  assert.equal(ctx.response.status, 0);
  ctx.request.rawQuery = 'z=9';
  assert.equal(ctx.request.url, '/p?z=9');
  assert.deepEqual(ctx.request.query.get('z'), ['9']);
});
