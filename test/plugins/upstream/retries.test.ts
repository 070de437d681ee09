import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { classifyFailure } from '../../../src/outbound/classify.js';
import { ClientAbortedError, DeadlineExceededError, ExchangeError } from '../../../src/outbound/errors.js';
import { deadPort, echo, gate, startOrigin, type Origin } from '../../support/origins.js';
import { requestContext } from '../../support/plugin-env.js';
import { answeredBy, closeAll, createUpstream, echoed } from './helpers.js';
import { failsWith, runOk } from '../../support/node-run.js';

const origins: Origin[] = [];
after(async () => {
  await closeAll();
  await Promise.all(origins.map((o) => o.close()));
});

test('upstream retries: a refused connection is retried on another target, body included', async () => {
  const dead = await deadPort();
  const a = await startOrigin(echo('a'), { name: 'a' });
  origins.push(a);
  const { node } = createUpstream({ targets: [{ host: '127.0.0.1', port: dead }, a.target] });
  const ctx = requestContext({ method: 'POST', url: '/submit', body: Buffer.from('payload') });
  await runOk(node, ctx);
  assert.equal(answeredBy(ctx), 'a');
  assert.equal(echoed(ctx).body, 'payload');
});

test('upstream retries: 0 disables retrying', async () => {
  const dead = await deadPort();
  const a = await startOrigin(echo('a'), { name: 'a' });
  origins.push(a);
  const { node } = createUpstream({ targets: [{ host: '127.0.0.1', port: dead }, a.target], retries: 0 });
  const err = await failsWith(node, requestContext(), 'UPSTREAM_CONNECTION_ERROR', 502);
  assert.deepEqual(err.metadata, { target: `127.0.0.1:${dead}` });
  assert.equal(a.requests.length, 0);
});

test('upstream retries: a connection reset after the request was sent is not retried', async () => {
  const resetting = await startOrigin((req) => req.socket.destroy(), { name: 'reset' });
  const a = await startOrigin(echo('a'), { name: 'a' });
  origins.push(resetting, a);
  const { node } = createUpstream({ targets: [resetting.target, a.target] });
  await failsWith(
    node,
    requestContext({ method: 'POST', body: Buffer.from('not idempotent') }),
    'UPSTREAM_CONNECTION_ERROR',
    502,
  );
  assert.equal(resetting.requests.length, 1);
  assert.equal(a.requests.length, 0, 'the request reached a target once; it must not be replayed');
});

test('upstream retries: a response timeout is not retried', async () => {
  const hold = gate();
  const slow = await startOrigin(async (_req, res) => {
    await hold.wait;
    res.end();
  });
  const a = await startOrigin(echo('a'), { name: 'a' });
  origins.push(slow, a);
  const { node } = createUpstream({ targets: [slow.target, a.target], timeout_ms: 800 });
  await Promise.all([failsWith(node, requestContext(), 'UPSTREAM_TIMEOUT', 504), slow.received(1)]);
  assert.equal(a.requests.length, 0);
  hold.release();
});

test('upstream retries: every target refusing → 502 naming the last one tried', async () => {
  const ports = [await deadPort(), await deadPort()];
  const { node } = createUpstream({ targets: ports.map((port) => ({ host: '127.0.0.1', port })) });
  const err = await failsWith(node, requestContext(), 'UPSTREAM_CONNECTION_ERROR', 502);
  assert.equal(err.metadata.target, `127.0.0.1:${ports[1]}`);
});

test('upstream classification: only failures before the request reached a socket are retryable', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  assert.deepEqual(pick(classifyFailure(new ExchangeError('connect', refused))), [
    'UPSTREAM_CONNECTION_ERROR',
    true,
  ]);
  assert.deepEqual(pick(classifyFailure(new ExchangeError('request', refused))), [
    'UPSTREAM_CONNECTION_ERROR',
    false,
  ]);
  const connectTimeout = Object.assign(new Error('Connect Timeout'), { code: 'UND_ERR_CONNECT_TIMEOUT' });
  assert.deepEqual(pick(classifyFailure(new ExchangeError('connect', connectTimeout))), [
    'UPSTREAM_TIMEOUT',
    true,
  ]);
  assert.deepEqual(pick(classifyFailure(new ExchangeError('connect', new DeadlineExceededError(10)))), [
    'UPSTREAM_TIMEOUT',
    true,
  ]);
  assert.deepEqual(pick(classifyFailure(new ExchangeError('request', new DeadlineExceededError(10)))), [
    'UPSTREAM_TIMEOUT',
    false,
  ]);
  const reset = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
  assert.deepEqual(pick(classifyFailure(new ExchangeError('body', reset))), [
    'UPSTREAM_BODY_READ_ERROR',
    false,
  ]);
  const invalid = Object.assign(new Error('invalid header'), { code: 'UND_ERR_INVALID_ARG' });
  assert.deepEqual(pick(classifyFailure(new ExchangeError('connect', invalid))), [
    'UPSTREAM_REQUEST_BUILD_ERROR',
    false,
  ]);
  const aborted = classifyFailure(new ExchangeError('request', new ClientAbortedError()));
  assert.deepEqual(
    [aborted.code, aborted.retryable, aborted.targetFault],
    ['UPSTREAM_CLIENT_ABORTED', false, false],
  );
});

function pick(c: { code: string; retryable: boolean }): [string, boolean] {
  return [c.code, c.retryable];
}
