import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ConfigRejected } from '../../../src/config/schema-validate.js';
import { azureFunctions } from '../../../src/plugins/faas/azure-functions.js';
import { deadPort, gate } from '../../support/origins.js';
import { requestContext } from '../../support/plugin-env.js';
import { closeAll, createNode, echoed, echoRequest, startFunction } from './helpers.js';
import { failsWith, runOk } from '../../support/node-run.js';

after(closeAll);

const CODE = 'AZURE_FUNCTIONS_CALLOUT_ERROR';

test('azure-functions: function_uri is required and non-empty; unknown keys are rejected', () => {
  assert.throws(() => createNode(azureFunctions, {}), ConfigRejected);
  assert.throws(() => createNode(azureFunctions, { function_uri: '' }), ConfigRejected);
  assert.throws(
    () => createNode(azureFunctions, { function_uri: 'http://f.test/', apikey: 'k' }),
    ConfigRejected,
  );
});

test('azure-functions: forwards the request with x-functions-key / x-functions-clientid, keeping the URI query', async () => {
  const fn = await startFunction(echoRequest);
  const { node } = createNode(azureFunctions, {
    function_uri: `http://127.0.0.1:${fn.port}/api/HttpTrigger?code=uri-key`,
    authorization: { apikey: 'fn-key', clientid: 'client-1' },
    keepalive: true,
  });
  const ctx = requestContext({ method: 'POST', url: '/x?name=ada', body: Buffer.from('hi') });
  await runOk(node, ctx);
  const seen = echoed(ctx);
  assert.equal(seen.method, 'POST');
  assert.equal(seen.url, '/api/HttpTrigger?code=uri-key&name=ada');
  assert.equal(seen.headers['x-functions-key'], 'fn-key');
  assert.equal(seen.headers['x-functions-clientid'], 'client-1');
  assert.equal(seen.headers.host, `127.0.0.1:${fn.port}`);
  assert.equal(seen.bodyLength, 2);
});

test('azure-functions: a client that sends its own function key keeps it (no configured key added)', async () => {
  const fn = await startFunction(echoRequest);
  const { node } = createNode(azureFunctions, {
    function_uri: `http://127.0.0.1:${fn.port}/api/f`,
    authorization: { apikey: 'fn-key', clientid: 'client-1' },
  });
  const ctx = requestContext({ headers: { host: 'gw', 'x-functions-key': 'client-key' } });
  await runOk(node, ctx);
  const seen = echoed(ctx);
  assert.equal(seen.headers['x-functions-key'], 'client-key');
  assert.equal(seen.headers['x-functions-clientid'], undefined);
});

test('azure-functions: status passes through; timeout 504, refused 503, invalid rendered URI 502', async () => {
  const teapot = await startFunction((_req, res) => {
    res.writeHead(418);
    res.end('teapot');
  });
  const ctx = requestContext();
  await runOk(createNode(azureFunctions, { function_uri: `http://127.0.0.1:${teapot.port}/` }).node, ctx);
  assert.equal(ctx.response.status, 418);

  const hold = gate();
  const slow = await startFunction(async (_req, res) => {
    await hold.wait;
    res.end();
  });
  const timed = createNode(azureFunctions, {
    function_uri: `http://127.0.0.1:${slow.port}/`,
    timeout: 150,
  }).node;
  await failsWith(timed, requestContext(), CODE, 504);
  hold.release();
  const dead = createNode(azureFunctions, { function_uri: `http://127.0.0.1:${await deadPort()}/` }).node;
  await failsWith(dead, requestContext(), CODE, 503);
  const bad = createNode(azureFunctions, { function_uri: '{{request.headers.x-target}}' }).node;
  await failsWith(bad, requestContext(), CODE, 502);
});
