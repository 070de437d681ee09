import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { ConfigRejected } from '../../../src/config/schema-validate.js';
import { ConfigError } from '../../../src/core/plugin.js';
import { awsLambda, cloudFunction } from '../../../src/plugins/faas/cloud-function.js';
import { createTestPki, deadPort, gate, startOrigin } from '../../support/origins.js';
import { pluginEnv, requestContext } from '../../support/plugin-env.js';
import {
  closeAll,
  createNode,
  echoed,
  echoRequest,
  sha256Hex,
  startFunction,
  verifyingEndpoint,
  type SigningExpectation,
} from './helpers.js';
import { failsWith, runOk } from '../../support/node-run.js';

after(closeAll);

const IAM = { accesskey: 'AKIDEXAMPLE', secretkey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const CLOUD_NAMES = { dateHeader: 'x-cloud-date', tokenHeader: 'x-cloud-security-token' };
const AMZ_NAMES = { dateHeader: 'x-amz-date', tokenHeader: 'x-amz-security-token' };

function expectation(names: typeof CLOUD_NAMES, extra: Partial<SigningExpectation> = {}): SigningExpectation {
  return {
    accessKey: IAM.accesskey,
    secretKey: IAM.secretkey,
    region: 'us-east-1',
    service: 'lambda',
    ...names,
    ...extra,
  };
}

// --- configuration ------------------------------------------------------------

test('cloud-function: config without function_uri, or with an empty one, is rejected', () => {
  assert.throws(() => createNode(cloudFunction, {}), ConfigRejected);
  assert.throws(() => createNode(cloudFunction, { function_uri: '' }), ConfigRejected);
});

test('cloud-function: authorization with both apikey and iam is rejected', () => {
  assert.throws(
    () =>
      createNode(cloudFunction, {
        function_uri: 'http://fn.test/',
        authorization: { apikey: 'k', iam: IAM },
      }),
    (err: unknown) => err instanceof ConfigError && err.path === 'authorization',
  );
});

test('cloud-function: an iam block without accesskey or secretkey is rejected', () => {
  for (const iam of [{ secretkey: 's' }, { accesskey: 'a' }, { accesskey: '', secretkey: 's' }]) {
    assert.throws(
      () => createNode(cloudFunction, { function_uri: 'http://fn.test/', authorization: { iam } }),
      ConfigRejected,
      JSON.stringify(iam),
    );
  }
});

test('cloud-function: unknown keys are rejected; keepalive keys are accepted with a warning', () => {
  assert.throws(
    () => createNode(cloudFunction, { function_uri: 'http://fn.test/', retries: 2 }),
    ConfigRejected,
  );
  const { env } = createNode(
    cloudFunction,
    { function_uri: 'http://fn.test/', keepalive: false },
    pluginEnv(),
  );
  assert.deepEqual(
    env.warnings.map((w) => w.key),
    ['keepalive'],
  );
});

test('cloud-function: a request-derived function_uri loads with an SSRF warning', () => {
  const { env } = createNode(cloudFunction, { function_uri: 'http://{{request.headers.x-fn}}/' });
  assert.ok(env.warnings.some((w) => w.key === 'function_uri' && /SSRF/.test(w.message)));
});

// --- forwarding -----------------------------------------------------------------

test('cloud-function: no auth forwards method, headers, query and body, with Host set to the endpoint', async () => {
  const fn = await startFunction(echoRequest);
  const { node } = createNode(cloudFunction, {
    function_uri: `http://127.0.0.1:${fn.port}/fn/run?stage=prod`,
  });
  const body = Buffer.from('{"hello":"world"}');
  const ctx = requestContext({
    method: 'PUT',
    url: '/gateway/path?b=2&a=x%20y',
    headers: {
      host: 'gateway.test',
      'x-custom': 'kept',
      'content-type': 'application/json',
      connection: 'x-hop',
      'x-hop': '1',
    },
    body,
  });
  ctx.message.tenant = 'acme';
  await runOk(node, ctx);
  const seen = echoed(ctx);
  assert.equal(seen.method, 'PUT');
  assert.equal(seen.url, '/fn/run?stage=prod&b=2&a=x%20y');
  assert.equal(seen.headers.host, `127.0.0.1:${fn.port}`);
  assert.equal(seen.headers['x-custom'], 'kept');
  assert.equal(seen.headers['x-hop'], undefined);
  assert.equal(seen.headers.authorization, undefined);
  assert.equal(seen.headers['x-api-key'], undefined);
  assert.equal(seen.bodySha256, sha256Hex(body));
  assert.equal(ctx.response.status, 200);
  assert.equal(ctx.response.headers['x-function'], 'echo');
  assert.deepEqual(ctx.message, { tenant: 'acme' }, 'the node never touches ctx.message');
});

test('cloud-function: apikey mode sends x-api-key and does not sign', async () => {
  const fn = await startFunction(echoRequest);
  const { node } = createNode(cloudFunction, {
    function_uri: `http://127.0.0.1:${fn.port}/`,
    authorization: { apikey: 'secret-key' },
  });
  const ctx = requestContext();
  await runOk(node, ctx);
  const seen = echoed(ctx);
  assert.equal(seen.headers['x-api-key'], 'secret-key');
  assert.equal(seen.headers.authorization, undefined);
  assert.equal(seen.headers['x-cloud-date'], undefined);
});

test('cloud-function: iam mode signs with x-cloud-date and x-cloud-security-token; the endpoint verifies it', async () => {
  const fn = await startFunction(
    verifyingEndpoint(expectation(CLOUD_NAMES, { sessionToken: 'session-tok' })),
  );
  const { node } = createNode(cloudFunction, {
    function_uri: `http://127.0.0.1:${fn.port}/2015-03-31/functions/my%20fn/invocations?Qualifier=live`,
    authorization: { iam: { ...IAM, session_token: 'session-tok' } },
  });
  const ctx = requestContext({
    method: 'POST',
    url: '/x?b=2&a=1&a=0&sp=a+b&uni=%E1%88%B4&plus=%2B',
    headers: {
      host: 'gateway.test',
      authorization: 'Bearer client-token',
      'x-cloud-date': '19990101T000000Z',
      'x-unsigned': 'forwarded',
    },
    body: Buffer.from('payload'),
  });
  await runOk(node, ctx);
  assert.equal(ctx.response.status, 200, ctx.response.body?.toString());
  const seen = echoed(ctx);
  assert.equal(seen.headers['x-cloud-security-token'], 'session-tok');
  assert.equal(seen.headers['x-unsigned'], 'forwarded');
  assert.equal(seen.headers['x-amz-date'], undefined);
  assert.match(String(seen.headers.authorization), /SignedHeaders=host;x-cloud-date;x-cloud-security-token,/);
  assert.match(String(seen.headers['x-cloud-date']), /^\d{8}T\d{6}Z$/);
  assert.notEqual(seen.headers['x-cloud-date'], '19990101T000000Z');
});

test('aws-lambda: signs with x-amz-date (no token: host;x-amz-date) and reports under its own code', async () => {
  const fn = await startFunction(verifyingEndpoint(expectation(AMZ_NAMES, { region: 'eu-west-1' })));
  const { node } = createNode(awsLambda, {
    function_uri: `http://127.0.0.1:${fn.port}/`,
    authorization: { iam: { ...IAM, aws_region: 'eu-west-1' } },
  });
  const ctx = requestContext({ url: '/?z=1' });
  await runOk(node, ctx);
  assert.equal(ctx.response.status, 200, ctx.response.body?.toString());
  const seen = echoed(ctx);
  assert.match(String(seen.headers.authorization), /SignedHeaders=host;x-amz-date,/);
  assert.equal(seen.headers['x-cloud-date'], undefined);

  const dead = createNode(awsLambda, { function_uri: `http://127.0.0.1:${await deadPort()}/` }).node;
  await failsWith(dead, requestContext(), 'CLOUD_FUNCTION_CALLOUT_ERROR', 503);
});

test('cloud-function: a wrong secret is caught by the verifying endpoint (the check is real)', async () => {
  const fn = await startFunction(verifyingEndpoint(expectation(CLOUD_NAMES)));
  const { node } = createNode(cloudFunction, {
    function_uri: `http://127.0.0.1:${fn.port}/`,
    authorization: { iam: { ...IAM, secretkey: 'not-the-secret' } },
  });
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(ctx.response.status, 403);
});

test('cloud-function: the function status passes through unchanged (418 and 500 leave on success)', async () => {
  for (const status of [418, 500]) {
    const fn = await startFunction((_req, res) => {
      res.writeHead(status, { 'content-type': 'text/plain', 'x-status': String(status) });
      res.end(`status ${status}`);
    });
    const { node } = createNode(cloudFunction, { function_uri: `http://127.0.0.1:${fn.port}/` });
    const ctx = requestContext();
    await runOk(node, ctx);
    assert.equal(ctx.response.status, status);
    assert.equal(ctx.response.headers['x-status'], String(status));
    assert.equal(ctx.response.body?.toString(), `status ${status}`);
    assert.equal(ctx.errors.length, 0);
  }
});

test('cloud-function: bodies over 1 MiB go out signed and come back whole', async () => {
  const big = Buffer.alloc(1024 * 1024 + 4099, 'a');
  const reply = Buffer.alloc(2 * 1024 * 1024 + 17, 'z');
  const verify = verifyingEndpoint(expectation(CLOUD_NAMES));
  const fn = await startFunction((req, res, body) => {
    if (req.url === '/download') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(reply);
    } else void verify(req, res, body);
  });
  const { node } = createNode(cloudFunction, {
    function_uri: `http://127.0.0.1:${fn.port}/upload`,
    authorization: { iam: IAM },
  });
  const ctx = requestContext({ method: 'POST', body: big });
  await runOk(node, ctx);
  assert.equal(ctx.response.status, 200, ctx.response.body?.toString().slice(0, 300));
  assert.equal(echoed(ctx).bodyLength, big.length);
  assert.equal(echoed(ctx).bodySha256, sha256Hex(big));

  const down = createNode(cloudFunction, { function_uri: `http://127.0.0.1:${fn.port}/download` }).node;
  const ctx2 = requestContext();
  await runOk(down, ctx2);
  assert.equal(ctx2.response.body?.length, reply.length);
  assert.ok(ctx2.response.body?.equals(reply));
});

// --- errors ---------------------------------------------------------------------

test('cloud-function: no response headers within timeout → 504', async () => {
  const hold = gate();
  const fn = await startFunction(async (_req, res) => {
    await hold.wait;
    res.end('late');
  });
  const { node } = createNode(cloudFunction, { function_uri: `http://127.0.0.1:${fn.port}/`, timeout: 150 });
  const started = Date.now();
  const err = await failsWith(node, requestContext(), 'CLOUD_FUNCTION_CALLOUT_ERROR', 504);
  hold.release();
  assert.equal(err.error, 'gateway_timeout');
  assert.ok(Date.now() - started < 2000);
});

test('cloud-function: the timeout covers the response body too → 504 when the body stalls', async () => {
  const hold = gate();
  const fn = await startFunction(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('partial');
    await hold.wait;
    res.end();
  });
  const { node } = createNode(cloudFunction, { function_uri: `http://127.0.0.1:${fn.port}/`, timeout: 150 });
  await failsWith(node, requestContext(), 'CLOUD_FUNCTION_CALLOUT_ERROR', 504);
  hold.release();
});

test('cloud-function: connection refused → 503', async () => {
  const { node } = createNode(cloudFunction, { function_uri: `http://127.0.0.1:${await deadPort()}/` });
  const err = await failsWith(node, requestContext(), 'CLOUD_FUNCTION_CALLOUT_ERROR', 503);
  assert.equal(err.error, 'service_unavailable');
  assert.match(err.message, /connection refused/);
});

test('cloud-function: the endpoint dropping the connection mid-exchange → 503', async () => {
  const fn = await startFunction((req) => {
    req.socket.destroy();
  });
  const { node } = createNode(cloudFunction, { function_uri: `http://127.0.0.1:${fn.port}/` });
  await failsWith(node, requestContext(), 'CLOUD_FUNCTION_CALLOUT_ERROR', 503);
});

test('cloud-function: a function_uri that renders to an invalid URI → 502', async () => {
  const { node } = createNode(cloudFunction, {
    function_uri: 'http://127.0.0.1:{{request.headers.x-port}}/',
  });
  const err = await failsWith(
    node,
    requestContext({ headers: { host: 'gw', 'x-port': '99999' } }),
    'CLOUD_FUNCTION_CALLOUT_ERROR',
    502,
  );
  assert.equal(err.error, 'bad_gateway');
  await failsWith(
    node,
    requestContext({ headers: { host: 'gw', 'x-port': 'abc' } }),
    'CLOUD_FUNCTION_CALLOUT_ERROR',
    502,
  );
});

test('cloud-function: a static invalid function_uri loads with a warning and every request fails 502', async () => {
  for (const uri of ['not a uri', 'ftp://fn.test/x', 'http://user:pw@fn.test/']) {
    const { node, env } = createNode(cloudFunction, { function_uri: uri }, pluginEnv());
    assert.equal(env.warnings[0]?.key, 'function_uri', uri);
    await failsWith(node, requestContext(), 'CLOUD_FUNCTION_CALLOUT_ERROR', 502);
  }
});

test('cloud-function: the client going away aborts the callout (499, nobody sees it)', async () => {
  const hold = gate();
  const fn = await startFunction(async (_req, res) => {
    await hold.wait;
    res.end('late');
  });
  const { node } = createNode(cloudFunction, { function_uri: `http://127.0.0.1:${fn.port}/`, timeout: 5000 });
  const client = new AbortController();
  const ctx = requestContext({}, client.signal);
  const run = failsWith(node, ctx, 'CLOUD_FUNCTION_CALLOUT_ERROR', 499);
  await fn.received(1);
  client.abort();
  await run;
  hold.release();
});

// --- TLS ------------------------------------------------------------------------

test('cloud-function: ssl_verify defaults to true (a self-signed endpoint is refused, 503); false accepts it', async () => {
  const pki = createTestPki();
  try {
    const fn = await startOrigin(echoRequest, {
      https: { cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey) },
    });
    try {
      const strict = createNode(cloudFunction, { function_uri: `https://127.0.0.1:${fn.port}/` }).node;
      const err = await failsWith(strict, requestContext(), 'CLOUD_FUNCTION_CALLOUT_ERROR', 503);
      assert.match(err.message, /certificate/);
      const lax = createNode(cloudFunction, {
        function_uri: `https://127.0.0.1:${fn.port}/`,
        ssl_verify: false,
      }).node;
      const ctx = requestContext();
      await runOk(lax, ctx);
      assert.equal(ctx.response.status, 200);
    } finally {
      await fn.close();
    }
  } finally {
    pki.remove();
  }
});
