import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { deadPort, gate, type Origin } from '../../support/origins.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { closeAll, echoRequest, sha256Hex, startFunction, verifyingEndpoint, type Echo } from './helpers.js';

// End to end: a real gateway in front of local function endpoints; the signing
// endpoint recomputes the signature from the request it received.

const IAM = { accesskey: 'AKIDEXAMPLE', secretkey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const hold = gate();
let gw: RunningGateway;
let signing: Origin;
let amzSigning: Origin;
let plain: Origin;

function policy(name: string, type: string, config: Record<string, unknown>): string {
  return `
  - name: ${name}
    nodes:
      - { id: listener, type: listener }
      - id: fn
        type: ${type}
        config: ${JSON.stringify(config)}
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: fn.in }
      - { from: fn.success, to: client.in }
      - { from: fn.error, to: client.in }`;
}

function route(name: string, path: string): string {
  return `
  - name: ${name}
    match: { path: ${path} }
    policy: ${name}`;
}

before(async () => {
  signing = await startFunction(
    verifyingEndpoint({
      ...{ accessKey: IAM.accesskey, secretKey: IAM.secretkey, region: 'us-east-1', service: 'lambda' },
      dateHeader: 'x-cloud-date',
      tokenHeader: 'x-cloud-security-token',
      sessionToken: 'tok',
    }),
  );
  amzSigning = await startFunction(
    verifyingEndpoint({
      ...{ accessKey: IAM.accesskey, secretKey: IAM.secretkey, region: 'us-east-1', service: 'lambda' },
      dateHeader: 'x-amz-date',
      tokenHeader: 'x-amz-security-token',
    }),
  );
  plain = await startFunction((req, res, body) => {
    if (req.url?.startsWith('/status/')) {
      const status = Number(req.url.slice('/status/'.length));
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(`function said ${status}`);
    } else if (req.url === '/slow') {
      void hold.wait.then(() => res.end('late'));
    } else echoRequest(req, res, body);
  });
  const dead = await deadPort();
  const policies: [string, string, string, Record<string, unknown>][] = [
    [
      'iam',
      '/iam/*',
      'cloud-function',
      {
        function_uri: `http://127.0.0.1:${signing.port}/invoke`,
        authorization: { iam: { ...IAM, session_token: 'tok' } },
      },
    ],
    [
      'lambda',
      '/lambda/*',
      'aws-lambda',
      { function_uri: `http://127.0.0.1:${amzSigning.port}/invoke`, authorization: { iam: IAM } },
    ],
    [
      'key',
      '/key/*',
      'cloud-function',
      { function_uri: `http://127.0.0.1:${plain.port}/echo`, authorization: { apikey: 'k-1' } },
    ],
    ['none', '/none/*', 'cloud-function', { function_uri: `http://127.0.0.1:${plain.port}/echo` }],
    ['teapot', '/teapot', 'cloud-function', { function_uri: `http://127.0.0.1:${plain.port}/status/418` }],
    ['broken', '/broken', 'cloud-function', { function_uri: `http://127.0.0.1:${plain.port}/status/500` }],
    [
      'slow',
      '/slow',
      'cloud-function',
      { function_uri: `http://127.0.0.1:${plain.port}/slow`, timeout: 200 },
    ],
    ['dead', '/dead', 'cloud-function', { function_uri: `http://127.0.0.1:${dead}/` }],
    ['bad', '/bad', 'cloud-function', { function_uri: 'http://127.0.0.1:{{request.headers.x-port}}/' }],
  ];
  const yaml = `routes:${policies.map(([name, path]) => route(name, path)).join('')}
policies:${policies.map(([name, , type, config]) => policy(name, type, config)).join('')}
`;
  gw = await startGateway(yaml);
});

after(async () => {
  hold.release();
  await gw?.stop();
  await closeAll();
});

function echo(body: string): Echo {
  return JSON.parse(body) as Echo;
}

test('e2e cloud-function iam: the endpoint verifies the signature of a POST with query and body', async () => {
  const res = await request(`${gw.url}/iam/orders?b=2&a=x%20y`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-extra': 'unsigned' },
    body: '{"order":42}',
  });
  assert.equal(res.status, 200, res.body);
  const seen = echo(res.body);
  assert.equal(seen.url, '/invoke?a=x%20y&b=2');
  assert.equal(seen.headers['x-cloud-security-token'], 'tok');
  assert.equal(seen.headers['x-extra'], 'unsigned');
  assert.equal(seen.bodySha256, sha256Hex(Buffer.from('{"order":42}')));
});

test('e2e aws-lambda iam: signed with x-amz-date, verified by the endpoint', async () => {
  const res = await request(`${gw.url}/lambda/x?q=1`);
  assert.equal(res.status, 200, res.body);
  assert.match(String(echo(res.body).headers.authorization), /SignedHeaders=host;x-amz-date,/);
});

test('e2e cloud-function iam: a request body over 1 MiB is signed and delivered whole', async () => {
  const big = Buffer.alloc(1024 * 1024 + 1, 'b');
  const res = await request(`${gw.url}/iam/upload`, { method: 'POST', body: big });
  assert.equal(res.status, 200, res.body.slice(0, 300));
  assert.equal(echo(res.body).bodyLength, big.length);
  assert.equal(echo(res.body).bodySha256, sha256Hex(big));
});

test('e2e cloud-function apikey and no auth: x-api-key only when configured', async () => {
  const keyed = await request(`${gw.url}/key/a`);
  assert.equal(keyed.status, 200);
  assert.equal(echo(keyed.body).headers['x-api-key'], 'k-1');
  const open = await request(`${gw.url}/none/a?x=1`);
  assert.equal(open.status, 200);
  assert.equal(echo(open.body).headers['x-api-key'], undefined);
  assert.equal(echo(open.body).url, '/echo?x=1');
});

test('e2e cloud-function: the function status reaches the client unchanged (418, 500)', async () => {
  const teapot = await request(`${gw.url}/teapot`);
  assert.equal(teapot.status, 418);
  assert.equal(teapot.body, 'function said 418');
  const broken = await request(`${gw.url}/broken`);
  assert.equal(broken.status, 500);
  assert.equal(broken.body, 'function said 500');
});

test('e2e cloud-function: callout failures answer 504 / 503 / 502 through the error port', async () => {
  const cases = [
    ['/slow', {}, 504, 'gateway_timeout'],
    ['/dead', {}, 503, 'service_unavailable'],
    ['/bad', { 'x-port': 'nope' }, 502, 'bad_gateway'],
  ] as const;
  for (const [path, headers, status, error] of cases) {
    const res = await request(`${gw.url}${path}`, { headers });
    assert.equal(res.status, status, `${path}: ${res.body}`);
    assert.equal((JSON.parse(res.body) as { error: string }).error, error, path);
  }
});
