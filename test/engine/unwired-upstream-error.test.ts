/**
 * An upstream failure with nothing wired to catch it (no error edge, no
 * error_handler) answers 502/504 with its code, as operators of other
 * gateways expect; other unhandled failures keep the generic 500
 * (docs/configuration.md "Errors at run time").
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { deadPort, gate, startOrigin, type Origin } from '../support/origins.js';

let slow: Origin;
let held = gate();
let dead = 0;
let gw: RunningGateway;

const upstreamPolicy = (name: string, port: number, extra = '') => `
  - name: ${name}
    nodes:
      - { id: listener, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }]${extra} } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: up.in }
      - { from: up.success, to: client.in }`;

before(async () => {
  slow = await startOrigin(async (_req, res) => {
    await held.wait;
    res.end('late');
  });
  dead = await deadPort();
  gw = await startGateway(`
routes:
  - { name: dead, match: { path: /dead }, policy: dead-policy }
  - { name: slow, match: { path: /slow }, policy: slow-policy }
  - { name: script, match: { path: /script }, policy: script-policy }
policies:${upstreamPolicy('dead-policy', dead)}${upstreamPolicy('slow-policy', slow.port, ', timeout_ms: 300')}
  - name: script-policy
    nodes:
      - { id: listener, type: listener }
      - { id: boom, type: serverless-pre-function, config: { functions: ['function execute(ctx) error("boom") end'] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: boom.in }
      - { from: boom.success, to: client.in }
`);
});

after(async () => {
  held.release();
  await gw.stop();
  await slow.close();
});

test('an unreachable upstream with its error port unwired answers 502 bad_gateway, not 500', async () => {
  const res = await fetch(`${gw.url}/dead`);
  assert.equal(res.status, 502);
  assert.deepEqual(await res.json(), {
    error: 'bad_gateway',
    code: 'UPSTREAM_CONNECTION_ERROR',
    message: 'Unhandled error in routing policy',
  });
});

test('an upstream that exceeds timeout_ms with nothing wired answers 504 gateway_timeout', async () => {
  const res = await fetch(`${gw.url}/slow`);
  assert.equal(res.status, 504);
  assert.deepEqual(await res.json(), {
    error: 'gateway_timeout',
    code: 'UPSTREAM_TIMEOUT',
    message: 'Unhandled error in routing policy',
  });
  held.release();
  held = gate();
});

test('a failure that is not an upstream one still answers the generic 500', async () => {
  const res = await fetch(`${gw.url}/script`);
  assert.equal(res.status, 500);
  assert.deepEqual(await res.json(), {
    error: 'internal_error',
    message: 'Unhandled error in routing policy',
  });
});
