/**
 * Idle and slow clients against a real gateway process (security review H2, M5):
 * with `timeouts.connection_seconds: 1` and `read_seconds: 1`, every stage a
 * client can stall in ends within a few seconds, on the data plane and the admin listener.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, constants, type ClientHttp2Session } from 'node:http2';
import { once } from 'node:events';
import {
  PARTIAL_PREFACE,
  rawClient,
  startAbuseGateway,
  waitClosed,
  type AbuseGateway,
} from './abuse-harness.js';

/** Generous upper bound for a 1 s timeout: the timers are checked at most every second. */
const BOUND_MS = 6000;

let gw: AbuseGateway;

before(async () => {
  gw = await startAbuseGateway();
});

after(async () => {
  await gw.stop();
});

test('slow clients: a data-plane connection that sends nothing gets 408 and is closed (HTTP/2 on)', async () => {
  const started = Date.now();
  const c = await rawClient(gw.dataPort);
  await waitClosed(c, BOUND_MS, 'the silent connection to be closed');
  assert.match(c.received(), /^HTTP\/1\.1 408/);
  assert.ok(Date.now() - started >= 900, 'closed before connection_seconds elapsed');
});

test('slow clients: a partial HTTP/2 preface is cut after connection_seconds', async () => {
  const c = await rawClient(gw.dataPort, PARTIAL_PREFACE);
  await waitClosed(c, BOUND_MS, 'the partial preface connection to be closed');
});

test('slow clients: an admin-listener connection that sends nothing is closed', async () => {
  const c = await rawClient(gw.adminPort);
  await waitClosed(c, BOUND_MS, 'the silent admin connection to be closed');
  const p = await rawClient(gw.adminPort, PARTIAL_PREFACE);
  await waitClosed(p, BOUND_MS, 'the partial preface admin connection to be closed');
});

test('slow clients: HTTP/1.1 headers sent a byte at a time get 408', async () => {
  const c = await rawClient(gw.dataPort, 'GET /hello HTTP/1.1\r\n');
  const drip = setInterval(() => c.socket.write('X'), 200);
  try {
    await waitClosed(c, BOUND_MS, 'the slow-header client to be closed');
  } finally {
    clearInterval(drip);
  }
  assert.match(c.received(), /^HTTP\/1\.1 408/);
});

test('slow clients: an HTTP/1.1 body trickled a byte at a time gets 408 and is closed', async () => {
  const started = Date.now();
  const c = await rawClient(
    gw.dataPort,
    'POST /hello HTTP/1.1\r\nHost: slow.test\r\nContent-Length: 100\r\n\r\n',
  );
  const drip = setInterval(() => c.socket.write('x'), 200);
  try {
    await waitClosed(c, 2 * BOUND_MS, 'the slow-body client to be closed');
  } finally {
    clearInterval(drip);
  }
  assert.match(c.received(), /^HTTP\/1\.1 408/);
  assert.ok(Date.now() - started >= 1900, 'closed before connection_seconds + read_seconds elapsed');
});

test('slow clients: an HTTP/2 session that never opens a stream is closed after connection_seconds', async () => {
  const session = connect(`http://127.0.0.1:${gw.dataPort}`);
  session.on('error', () => undefined);
  const started = Date.now();
  await within(once(session, 'close'), 4 * BOUND_MS, 'the stream-less session to close');
  const elapsed = Date.now() - started;
  assert.ok(elapsed < BOUND_MS, `session closed after ${elapsed} ms`);
});

/** Opens a POST stream announcing 100 bytes and sends one byte every 200 ms; resolves how it ended. */
async function trickle(
  session: ClientHttp2Session,
  path = '/hello',
  headers: Record<string, string> = {},
): Promise<{ status: number; rst: number; ms: number }> {
  const started = Date.now();
  const stream = session.request({ ':method': 'POST', ':path': path, 'content-length': '100', ...headers });
  stream.on('error', () => undefined);
  let status = 0;
  stream.on('response', (headers) => (status = Number(headers[':status'])));
  stream.resume();
  const drip = setInterval(() => {
    if (!stream.closed && !stream.destroyed) stream.write('x');
  }, 200);
  await within(once(stream, 'close'), 4 * BOUND_MS, `trickled stream (status ${status}) to close`);
  clearInterval(drip);
  return { status, rst: stream.rstCode ?? -1, ms: Date.now() - started };
}

/** `promise`, or a failure naming `what` after `ms`: a stuck stream fails its test instead of the whole file. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`waited ${ms} ms for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

test('slow clients: HTTP/2 streams trickling their body get 408 then RST_STREAM within connection + read seconds', async () => {
  const session = connect(`http://127.0.0.1:${gw.dataPort}`);
  session.on('error', () => undefined);
  try {
    const results = await Promise.all(Array.from({ length: 5 }, () => trickle(session)));
    for (const r of results) {
      assert.equal(r.status, 408);
      assert.equal(r.rst, constants.NGHTTP2_NO_ERROR);
      assert.ok(r.ms < 2 * BOUND_MS, `stream ended after ${r.ms} ms`);
    }
    // The session itself survives its timed-out streams.
    const ok = session.request({ ':path': '/hello' });
    const [headers] = (await within(
      once(ok, 'response'),
      2 * BOUND_MS,
      'a response on the session after its timed-out streams',
    )) as [Record<string, string>];
    ok.resume();
    assert.equal(Number(headers[':status']), 200);
  } finally {
    session.close();
  }
});

test('slow clients: a trickling HTTP/2 body on the admin listener does not hold its stream open', async () => {
  const session = connect(`http://127.0.0.1:${gw.adminPort}`);
  session.on('error', () => undefined);
  try {
    const r = await trickle(session, '/api/routes', {
      authorization: `Basic ${Buffer.from('admin:correct horse').toString('base64')}`,
      'content-type': 'application/json',
    });
    assert.ok(r.ms < 2 * BOUND_MS, `admin stream ended after ${r.ms} ms (status ${r.status})`);
    assert.ok(r.status === 408 || r.status >= 400, `status ${r.status}`);
  } finally {
    session.close();
  }
});
