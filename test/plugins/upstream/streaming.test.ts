import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, test } from 'node:test';
import { gate, startOrigin, type Origin } from '../../support/origins.js';
import { requestContext } from '../../support/plugin-env.js';
import { waitFor } from '../../support/wait.js';
import { closeAll, createUpstream, readAll } from './helpers.js';
import { failsWith, runOk } from '../../support/node-run.js';

const origins: Origin[] = [];
after(async () => {
  await closeAll();
  await Promise.all(origins.map((o) => o.close()));
});

/** An origin that sends `first`, waits for the test's go, then sends `rest` and ends. */
async function chunkedOrigin(): Promise<{
  origin: Origin;
  go: () => void;
  ended: () => boolean;
  closed: () => boolean;
}> {
  const hold = gate();
  let ended = false;
  let closed = false;
  const origin = await startOrigin(async (_req, res) => {
    res.on('close', () => (closed = true));
    res.writeHead(200, { 'content-type': 'text/plain', 'x-stream': 'yes' });
    res.write('first chunk;');
    await hold.wait;
    if (res.destroyed) return;
    res.write('second chunk;');
    res.end('last chunk');
    ended = true;
  });
  origins.push(origin);
  return { origin, go: hold.release, ended: () => ended, closed: () => closed };
}

test('upstream streaming: the node returns at the headers and the first chunk is readable before the origin ends', async () => {
  const { origin, go, ended } = await chunkedOrigin();
  const { node } = createUpstream({ targets: [origin.target] }, { streaming: true });
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(ctx.response.status, 200);
  assert.equal(ctx.response.headers['x-stream'], 'yes');
  assert.equal(ctx.response.body, null);
  const stream = ctx.response.stream;
  assert.ok(stream !== null, 'streaming mode leaves the body in ctx.response.stream');
  assert.equal(ended(), false, 'the node returned before the origin finished');

  const [first] = (await once(stream, 'data')) as [Buffer];
  assert.equal(first.toString(), 'first chunk;');
  assert.equal(ended(), false, 'the first chunk arrived while the origin was still sending');

  go();
  const rest = await readAll(stream);
  assert.equal(rest.toString(), 'second chunk;last chunk');
  assert.equal(ended(), true);
});

test('upstream streaming: a stalled body is cut by stream_idle_timeout_ms while piping', async () => {
  const { origin, go } = await chunkedOrigin();
  const { node } = createUpstream(
    { targets: [origin.target], stream_idle_timeout_ms: 200 },
    { streaming: true },
  );
  const ctx = requestContext();
  await runOk(node, ctx);
  const stream = ctx.response.stream!;
  await assert.rejects(readAll(stream), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'UND_ERR_BODY_TIMEOUT');
    return true;
  });
  assert.equal(stream.destroyed, true);
  go();
});

test('upstream streaming: destroying the stream (client gone) aborts the upstream request', async () => {
  const { origin, go, closed } = await chunkedOrigin();
  const { node } = createUpstream({ targets: [origin.target] }, { streaming: true });
  const ctx = requestContext();
  await runOk(node, ctx);
  const stream = ctx.response.stream!;
  await once(stream, 'data');
  stream.destroy();
  await waitFor(closed, { what: 'the origin to see its response closed' });
  go();
});

test('upstream streaming: ctx.signal aborting mid-body aborts the upstream request', async () => {
  const { origin, go, closed } = await chunkedOrigin();
  const { node } = createUpstream({ targets: [origin.target] }, { streaming: true });
  const client = new AbortController();
  const ctx = requestContext({}, client.signal);
  await runOk(node, ctx);
  const stream = ctx.response.stream!;
  stream.on('error', () => {});
  await once(stream, 'data');
  client.abort();
  await waitFor(closed, { what: 'the origin to see its response closed' });
  assert.equal(stream.destroyed, true);
  go();
});

test('upstream buffered: the node waits for the whole body and sets ctx.response.body', async () => {
  const { origin, go, ended } = await chunkedOrigin();
  const { node } = createUpstream({ targets: [origin.target] }, { streaming: false });
  const ctx = requestContext();
  const running = runOk(node, ctx);
  await origin.received(1);
  go();
  await running;
  assert.equal(ended(), true);
  assert.equal(ctx.response.stream, null);
  assert.equal(ctx.response.body?.toString(), 'first chunk;second chunk;last chunk');
});

test('upstream streaming: a failure before the headers is still an error exit', async () => {
  const origin = await startOrigin((req) => req.socket.destroy());
  origins.push(origin);
  const { node } = createUpstream({ targets: [origin.target] }, { streaming: true });
  await failsWith(node, requestContext(), 'UPSTREAM_CONNECTION_ERROR', 502);
});
