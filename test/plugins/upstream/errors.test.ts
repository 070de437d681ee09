import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { deadPort, gate, startOrigin, type Origin } from '../../support/origins.js';
import { requestContext } from '../../support/plugin-env.js';
import { waitFor } from '../../support/wait.js';
import { closeAll, createUpstream, stateOf } from './helpers.js';
import { failsWith } from '../../support/node-run.js';

const origins: Origin[] = [];
after(async () => {
  await closeAll();
  await Promise.all(origins.map((o) => o.close()));
});

test('upstream: slow origin → 504 UPSTREAM_TIMEOUT with the target in metadata', async () => {
  const hold = gate();
  const slow = await startOrigin(async (_req, res) => {
    await hold.wait;
    res.end('too late');
  });
  origins.push(slow);
  const { node } = createUpstream({ targets: [slow.target], timeout_ms: 800 });
  const started = Date.now();
  // The origin must have the request before the deadline: this is a response timeout, not a connect one.
  const [err] = await Promise.all([
    failsWith(node, requestContext(), 'UPSTREAM_TIMEOUT', 504),
    slow.received(1),
  ]);
  assert.ok(Date.now() - started >= 790, 'failed before the deadline');
  assert.deepEqual(err.metadata, { target: `127.0.0.1:${slow.port}` });
  assert.equal(slow.requests.length, 1, 'a timeout after the request was sent is not retried');
  hold.release();
});

test('upstream: dead port → 502 UPSTREAM_CONNECTION_ERROR', async () => {
  const port = await deadPort();
  const { node } = createUpstream({ targets: [{ host: '127.0.0.1', port }] });
  const err = await failsWith(node, requestContext(), 'UPSTREAM_CONNECTION_ERROR', 502);
  assert.deepEqual(err.metadata, { target: `127.0.0.1:${port}` });
  assert.match(err.message, /refused/);
});

test('upstream: unresolvable host → 502 UPSTREAM_CONNECTION_ERROR', async () => {
  const { node } = createUpstream({ targets: [{ host: 'no-such-host.invalid', port: 80 }] });
  await failsWith(node, requestContext(), 'UPSTREAM_CONNECTION_ERROR', 502);
});

test('upstream: buffered body stalling past stream_idle_timeout_ms → 504 UPSTREAM_TIMEOUT', async () => {
  const hold = gate();
  const stalling = await startOrigin(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('first part');
    await hold.wait;
    res.end();
  });
  origins.push(stalling);
  const { node } = createUpstream({ targets: [stalling.target], stream_idle_timeout_ms: 200 });
  await failsWith(node, requestContext(), 'UPSTREAM_TIMEOUT', 504);
  hold.release();
});

test('upstream: buffered body cut by the origin → 502 UPSTREAM_BODY_READ_ERROR', async () => {
  const cutting = await startOrigin((_req, res) => {
    res.writeHead(200, { 'content-length': '100' });
    res.write('only ten b');
    setImmediate(() => res.destroy());
  });
  origins.push(cutting);
  const { node } = createUpstream({ targets: [cutting.target] });
  await failsWith(node, requestContext(), 'UPSTREAM_BODY_READ_ERROR', 502);
});

test('upstream: client gone before the answer → UPSTREAM_CLIENT_ABORTED and the outbound request is aborted', async () => {
  const hold = gate();
  let closedEarly = false;
  const origin = await startOrigin(async (_req, res) => {
    res.on('close', () => (closedEarly = !res.writableEnded));
    await hold.wait;
    if (!res.destroyed) res.end('late');
  });
  origins.push(origin);
  const { node } = createUpstream({ targets: [origin.target] });
  const client = new AbortController();
  const running = failsWith(node, requestContext({}, client.signal), 'UPSTREAM_CLIENT_ABORTED', 499);
  await origin.received(1);
  client.abort();
  await running;
  // The origin sees its connection dropped, so it stops working for nobody.
  await waitFor(() => closedEarly, { what: 'the origin to see the connection closed' });
  hold.release();
  assert.equal(
    stateOf(node, `127.0.0.1:${origin.port}`).consecutiveFailures,
    0,
    'a client abort is not a target failure',
  );
});

test('upstream: an already aborted client signal sends nothing', async () => {
  const origin = await startOrigin((_req, res) => res.end('x'));
  origins.push(origin);
  const { node } = createUpstream({ targets: [origin.target] });
  const client = new AbortController();
  client.abort();
  await failsWith(node, requestContext({}, client.signal), 'UPSTREAM_CLIENT_ABORTED', 499);
  assert.equal(origin.requests.length, 0);
});
