/**
 * Descriptors at a small `ulimit -n` (security review 3, F-6):
 * `listener.max_connections: auto` keeps a reserve for the process and the
 * admin listener, and in-flight HTTP/2 streams count against the same budget,
 * so neither 200 HTTP/1.1 clients nor 2 h2c connections of 128 streams each,
 * all waiting on a hanging upstream, exhaust the gateway's descriptors: admin
 * `/healthz` answers throughout, and the data plane recovers afterwards.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  AUTO_MAX_CONNECTIONS,
  FD_RESERVE,
  resolveMaxConnections,
  softFdLimit,
} from '../../src/server/connection-limit.js';
import { fdCount, get, rapidResetBytes, rawClient, type RawClient } from './abuse-harness.js';
import {
  startClientGoneGateway,
  startRecordingOrigin,
  type ClientGoneGateway,
  type RecordingOrigin,
} from './h2-client-gone-harness.js';
import { waitFor } from '../support/wait.js';

const LIMIT = 256;
/** auto at 256 descriptors: floor((256 - 64) / 2). */
const BUDGET = 96;

let origin: RecordingOrigin;
let gw: ClientGoneGateway;
let pid: number;

before(async () => {
  origin = await startRecordingOrigin();
  gw = await startClientGoneGateway(origin.port, { fdLimit: LIMIT });
  pid = gw.process.child.pid ?? 0;
});

after(async () => {
  await gw?.stop();
  await origin?.close();
});

test('F-6: auto = max(16, floor((RLIMIT_NOFILE - 64) / 2)), at most 10000', () => {
  assert.equal(FD_RESERVE, 64);
  assert.equal(resolveMaxConnections('auto', 256), BUDGET);
  assert.equal(resolveMaxConnections('auto', 1024), 480);
  assert.equal(resolveMaxConnections('auto', 64), 16);
  assert.equal(resolveMaxConnections('auto', 1_048_576), AUTO_MAX_CONNECTIONS);
  assert.equal(resolveMaxConnections(7, 256), 7);
  assert.equal(
    softFdLimit('Max open files            256                  256                  files\n'),
    256,
  );
});

/** Admin /healthz, several times on fresh connections: every answer must be 200. */
async function healthzEachTime(times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    const status = await get(gw.adminPort, '/healthz', 5000).catch((err: Error) => err.message);
    assert.equal(status, 200, `admin /healthz during the flood (fds ${fdCount(pid)} of ${LIMIT})`);
  }
}

/** RST_STREAM frames with REFUSED_STREAM (7) among the bytes a server sent. */
function refusedStreams(received: Buffer): number {
  let count = 0;
  for (let at = 0; at + 9 <= received.length;) {
    const length = received.readUIntBE(at, 3);
    if (received[at + 3] === 0x3 && at + 13 <= received.length && received.readUInt32BE(at + 9) === 7)
      count++;
    at += 9 + length;
  }
  return count;
}

async function recovers(): Promise<void> {
  await waitFor(() => origin.open() === 0, { timeoutMs: 10_000, what: 'the upstream sockets to close' });
  await waitFor(async () => (await get(gw.dataPort, '/hello', 2000).catch(() => 0)) === 200, {
    timeoutMs: 10_000,
    what: 'the data plane to answer again',
  });
  assert.equal(await get(gw.dataPort, '/hello'), 200);
}

test('F-6: the gateway runs under ulimit -n 256', () => {
  const limits = readFileSync(`/proc/${pid}/limits`, 'utf8');
  assert.equal(softFdLimit(limits), LIMIT);
});

test('F-6: 200 HTTP/1.1 clients on a hanging upstream at ulimit -n 256: admin /healthz answers, the data plane recovers', async (t) => {
  const clients: RawClient[] = [];
  try {
    for (let i = 0; i < 200; i++)
      clients.push(
        await rawClient(gw.dataPort, `GET /up/hang?probe=h1-${i} HTTP/1.1\r\nHost: fd.test\r\n\r\n`),
      );
    // The budget's worth reach the upstream; the rest were closed on accept.
    await waitFor(() => origin.open() >= BUDGET - 4, {
      timeoutMs: 20_000,
      what: 'the budget of upstream exchanges',
    });
    await healthzEachTime(10);
    await waitFor(() => clients.filter((c) => c.closed).length >= 200 - BUDGET, {
      timeoutMs: 10_000,
      what: 'the connections over the budget to be closed',
    });
    t.diagnostic(`gateway fds ${fdCount(pid)} of ${LIMIT}, upstream connections ${origin.open()}`);
    assert.ok(fdCount(pid) < LIMIT, `gateway fds ${fdCount(pid)}`);
    assert.ok(origin.open() <= BUDGET, `${origin.open()} upstream connections`);
  } finally {
    for (const c of clients) c.socket.destroy();
  }
  await recovers();
});

test('F-6: 2 h2c connections x 128 streams on a hanging upstream at ulimit -n 256: streams over the budget are refused, admin /healthz answers', async (t) => {
  const clients: RawClient[] = [];
  try {
    // Both connections open before either sends its streams, so the two compete for the budget.
    for (let c = 0; c < 2; c++) clients.push(await rawClient(gw.dataPort));
    clients.forEach((client, c) => {
      const paths = Array.from({ length: 128 }, (_, i) => `/up/hang?probe=h2-${c}-${i}`);
      client.socket.write(rapidResetBytes(0, '', paths));
    });
    const refused = () =>
      clients.reduce((n, c) => n + refusedStreams(Buffer.from(c.received(), 'latin1')), 0);
    // Two connections and 94 extra streams fill the 96 units; the other 160 streams are refused.
    await waitFor(() => refused() >= 256 - BUDGET, {
      timeoutMs: 20_000,
      what: 'REFUSED_STREAM for the streams over the budget',
    });
    await waitFor(() => origin.open() >= BUDGET - 4, {
      timeoutMs: 20_000,
      what: 'the budget of upstream exchanges',
    });
    assert.ok(origin.open() <= BUDGET, `${origin.open()} upstream connections`);
    await healthzEachTime(10);
    // HTTP/1.1 on top: closed on accept while the streams hold the budget; the admin listener still answers.
    const extra = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        rawClient(gw.dataPort, `GET /up/hang?probe=mix-${i} HTTP/1.1\r\nHost: fd.test\r\n\r\n`),
      ),
    );
    clients.push(...extra);
    await waitFor(() => extra.every((c) => c.closed), {
      timeoutMs: 10_000,
      what: 'the extra connections to be closed',
    });
    await healthzEachTime(5);
    t.diagnostic(
      `gateway fds ${fdCount(pid)} of ${LIMIT}, upstream connections ${origin.open()}, refused streams ${refused()}`,
    );
    assert.ok(fdCount(pid) < LIMIT, `gateway fds ${fdCount(pid)}`);
  } finally {
    for (const c of clients) c.socket.destroy();
  }
  await recovers();
});
