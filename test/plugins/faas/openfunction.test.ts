import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ConfigRejected } from '../../../src/config/schema-validate.js';
import { openfunction } from '../../../src/plugins/faas/openfunction.js';
import { deadPort, gate } from '../../support/origins.js';
import { requestContext } from '../../support/plugin-env.js';
import { closeAll, createNode, echoed, echoRequest, startFunction } from './helpers.js';
import { failsWith, runOk } from '../../support/node-run.js';

after(closeAll);

const CODE = 'OPENFUNCTION_CALLOUT_ERROR';

test('openfunction: function_uri is required and non-empty', () => {
  assert.throws(() => createNode(openfunction, {}), ConfigRejected);
  assert.throws(() => createNode(openfunction, { function_uri: '' }), ConfigRejected);
});

test('openfunction: service_token replaces the client Authorization with Basic base64(token)', async () => {
  const fn = await startFunction(echoRequest);
  const { node } = createNode(openfunction, {
    function_uri: `http://127.0.0.1:${fn.port}/default/hello`,
    authorization: { service_token: 'user:pass' },
  });
  const ctx = requestContext({ url: '/?a=1', headers: { host: 'gw', authorization: 'Bearer client' } });
  await runOk(node, ctx);
  const seen = echoed(ctx);
  assert.equal(seen.url, '/default/hello?a=1');
  assert.equal(seen.headers.authorization, 'Basic dXNlcjpwYXNz');
});

test('openfunction: without a token the client Authorization is forwarded untouched', async () => {
  const fn = await startFunction(echoRequest);
  const { node } = createNode(openfunction, { function_uri: `http://127.0.0.1:${fn.port}/fn` });
  const ctx = requestContext({ headers: { host: 'gw', authorization: 'Bearer client' } });
  await runOk(node, ctx);
  assert.equal(echoed(ctx).headers.authorization, 'Bearer client');
});

test('openfunction: status passes through; timeout 504, refused 503, invalid rendered URI 502', async () => {
  const failing = await startFunction((_req, res) => {
    res.writeHead(500);
    res.end('boom');
  });
  const ctx = requestContext();
  await runOk(createNode(openfunction, { function_uri: `http://127.0.0.1:${failing.port}/` }).node, ctx);
  assert.equal(ctx.response.status, 500);
  assert.equal(ctx.response.body?.toString(), 'boom');

  const hold = gate();
  const slow = await startFunction(async (_req, res) => {
    await hold.wait;
    res.end();
  });
  const timed = createNode(openfunction, {
    function_uri: `http://127.0.0.1:${slow.port}/`,
    timeout: 150,
  }).node;
  await failsWith(timed, requestContext(), CODE, 504);
  hold.release();
  const dead = createNode(openfunction, { function_uri: `http://127.0.0.1:${await deadPort()}/` }).node;
  await failsWith(dead, requestContext(), CODE, 503);
  const bad = createNode(openfunction, { function_uri: 'http://{{request.headers.x-host}}:99999/' }).node;
  await failsWith(bad, requestContext(), CODE, 502);
});
