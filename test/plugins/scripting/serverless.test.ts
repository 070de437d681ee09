import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigRejected } from '../../../src/config/schema-validate.js';
import { serverlessPostFunction } from '../../../src/plugins/serverless/serverless-post-function.js';
import { serverlessPreFunction } from '../../../src/plugins/serverless/serverless-pre-function.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { echo, startOrigin } from '../../support/origins.js';
import { instantiate, pluginEnv, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, deployment, nodeError } from './helpers.js';

const STEP_ONE = 'function execute(ctx) ctx.request.headers["x-step"] = { "one" } return ctx end';
const STEP_TWO =
  'function execute(ctx) ctx.message.seen = ctx.request.headers["x-step"][1] .. "+two" return ctx end';

for (const plugin of [serverlessPreFunction, serverlessPostFunction]) {
  const type = plugin.type;

  test(`${type}: functions run in order, each seeing the previous one's changes`, async () => {
    const node = instantiate(plugin, { functions: [STEP_ONE, STEP_TWO], phase: 'access' });
    const ctx = requestContext();
    assert.equal(await node.run(ctx), 'success');
    assert.equal(ctx.request.headers['x-step'], 'one');
    assert.equal(ctx.message['seen'], 'one+two');
  });

  test(`${type}: a second return value of "success" is accepted`, async () => {
    const node = instantiate(plugin, { functions: ['function execute(ctx) return ctx, "success" end'] });
    assert.equal(await node.run(requestContext()), 'success');
  });

  test(`${type}: any other second return value, "respond" included, is LUA_BAD_PORT`, async () => {
    for (const port of ['"respond"', '"client"', '1']) {
      const node = instantiate(plugin, { functions: [`function execute(ctx) return ctx, ${port} end`] });
      assert.equal((await nodeError(() => node.run(requestContext()))).code, 'LUA_BAD_PORT');
    }
  });

  test(`${type}: a failing function leaves the context as it was before the node`, async () => {
    const node = instantiate(plugin, {
      functions: [STEP_ONE, 'function execute(ctx) error("two failed") end'],
    });
    const ctx = requestContext();
    const err = await nodeError(() => node.run(ctx));
    assert.equal(err.code, 'LUA_EXECUTION_ERROR');
    assert.deepEqual(err.metadata, { script: 'functions[1]' });
    assert.equal(ctx.request.headers['x-step'], undefined);
  });

  test(`${type}: LUA_UNMARSHAL_ERROR for a non-table return`, async () => {
    const node = instantiate(plugin, { functions: ['function execute(ctx) return nil end'] });
    assert.equal((await nodeError(() => node.run(requestContext()))).code, 'LUA_UNMARSHAL_ERROR');
  });

  test(`${type}: LUA_TIMEOUT applies per function`, async () => {
    const node = instantiate(plugin, {
      functions: [STEP_ONE, 'function execute(ctx) while true do end end'],
      timeout_ms: 60,
    });
    const started = performance.now();
    assert.equal((await nodeError(() => node.run(requestContext()))).code, 'LUA_TIMEOUT');
    // Generous: the first run on a worker also compiles the program; the 2x bound is asserted end to end.
    assert.ok(performance.now() - started < 1000);
  });

  test(`${type}: config rejections`, () => {
    assert.throws(() => instantiate(plugin, { functions: [] }), ConfigRejected);
    assert.throws(() => instantiate(plugin, {}), ConfigRejected);
    assert.throws(() => instantiate(plugin, { functions: [{}] }), ConfigRejected);
    assertConfigError(
      () => instantiate(plugin, { functions: [STEP_ONE, 'function execute(ctx'] }),
      'functions[1]',
      /LUA_LOAD_ERROR/,
    );
    assertConfigError(
      () => instantiate(plugin, { functions: ['x = 1'] }),
      'functions[0]',
      /LUA_MISSING_EXECUTE/,
    );
  });

  test(`${type}: require reads modules from the plugins/ folder`, async () => {
    const d = deployment({ 'greet.lua': 'return { hi = function() return "hi" end }' });
    try {
      const node = instantiate(
        plugin,
        {
          functions: [
            'local g = require("greet")\nfunction execute(ctx) ctx.message.g = g.hi() return ctx end',
          ],
        },
        pluginEnv({ configDir: d.configDir }),
      );
      const ctx = requestContext();
      assert.equal(await node.run(ctx), 'success');
      assert.equal(ctx.message['g'], 'hi');
    } finally {
      d.remove();
    }
  });
}

test('serverless: pre and post functions around an upstream change the request and the response', async () => {
  const origin = await startOrigin(echo('origin'));
  const pre = 'function execute(ctx) ctx.request.headers["x-pre"] = { "1" } return ctx end';
  const post =
    'function execute(ctx) ctx.response.headers["x-post"] = { tostring(#ctx.response.body) } return ctx end';
  let gw: RunningGateway | undefined;
  try {
    gw = await startGateway(`
routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: pre, type: serverless-pre-function, config: { functions: [${JSON.stringify(pre)}] } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: post, type: serverless-post-function, config: { functions: [${JSON.stringify(post)}] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: pre.in }
      - { from: pre.success, to: up.in }
      - { from: up.success, to: post.in }
      - { from: post.success, to: out.in }
`);
    const res = await request(`${gw.url}/x`);
    assert.equal(res.status, 200);
    assert.equal(origin.requests[0]?.headers['x-pre'], '1');
    assert.equal(res.headers['x-post'], String(Buffer.byteLength(res.body)));
  } finally {
    await gw?.stop();
    await origin.close();
  }
});
