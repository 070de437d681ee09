/**
 * HTTP/2 limits against a real gateway process (security review M5): the stream
 * cap is advertised and enforced, rapid reset (CVE-2023-44487) gets GOAWAY, and
 * a stream the client cancels before it is dispatched never reaches the upstream.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, constants, type ClientHttp2Session } from 'node:http2';
import { once } from 'node:events';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import {
  hangingUpstream,
  goawayCode,
  rapidResetBytes,
  rawClient,
  waitClosed,
  startAbuseGateway,
  type AbuseGateway,
  type HangingUpstream,
} from './abuse-harness.js';
import { waitFor } from '../support/wait.js';

let upstream: HangingUpstream;
let gw: AbuseGateway;

before(async () => {
  upstream = await hangingUpstream();
  gw = await startAbuseGateway({
    upstreamPort: upstream.port,
    // Long enough that no timeout ends a stream during these tests.
    timeouts: 'connection_seconds: 10, read_seconds: 10, idle_seconds: 30',
  });
});

after(async () => {
  await gw.stop();
  await upstream.close();
});

function h2(): ClientHttp2Session {
  const session = connect(`http://127.0.0.1:${gw.dataPort}`);
  session.on('error', () => undefined);
  return session;
}

async function hello(): Promise<number> {
  const session = h2();
  try {
    const stream = session.request({ ':path': '/hello' });
    const [headers] = (await once(stream, 'response')) as [Record<string, string>];
    stream.resume();
    return Number(headers[':status']);
  } finally {
    session.close();
  }
}

test('h2 limits: SETTINGS advertise max concurrent streams 128', async () => {
  const session = h2();
  try {
    await once(session, 'remoteSettings');
    assert.equal(session.remoteSettings.maxConcurrentStreams, 128);
  } finally {
    session.close();
  }
});

test('h2 limits: streams reset in the same packet as their HEADERS open no upstream connection', async () => {
  const before = upstream.accepted;
  // Below http2.max_reset_streams (100): this is about dispatch, not the rapid-reset cut-off.
  // The last stream is not reset: it does reach the upstream, so zero for the others means something.
  const client = await rawClient(gw.dataPort, rapidResetBytes(60, '/up/cancelled', ['/up/live']));
  try {
    await waitFor(() => upstream.accepted > before, { what: 'the live stream to reach the upstream' });
    await sleep(300);
    assert.equal(upstream.accepted - before, 1, 'only the live stream opened an upstream connection');
  } finally {
    client.socket.destroy();
  }
});

// Node 22 and 24 keep the streams that one read opens and resets until the event loop turns, and
// refuse new streams beyond the 128 of SETTINGS (in force once the client acknowledged them); the
// 101st refusal in a row used to end the session with Node's GOAWAY INTERNAL_ERROR before the
// guard heard of any reset. 230 pairs in one read sufficed; a Node client's resets arrive in such
// reads after the gateway's loop was busy for a moment. The first rapid-reset test, so its WARN is
// not throttled (one per 10 s).
test('h2 limits: 400 resets in one read after SETTINGS are acknowledged get GOAWAY ENHANCE_YOUR_CALM', async () => {
  const logged = gw.process.output().length;
  const resets = rapidResetBytes(400, '/up/burst');
  const PREFACE_AND_SETTINGS = 24 + 9;
  const SETTINGS_ACK = Buffer.from([0, 0, 0, 0x4, 0x1, 0, 0, 0, 0]);
  const client = await rawClient(
    gw.dataPort,
    Buffer.concat([
      resets.subarray(0, PREFACE_AND_SETTINGS),
      SETTINGS_ACK,
      resets.subarray(PREFACE_AND_SETTINGS),
    ]),
  );
  await waitClosed(client, 5000, 'the gateway to close the rapid-reset connection');
  const code = goawayCode(Buffer.from(client.received(), 'latin1'));
  assert.equal(code, constants.NGHTTP2_ENHANCE_YOUR_CALM, `GOAWAY code ${code}`);
  await waitFor(() => gw.process.output().slice(logged).includes('(rapid reset); GOAWAY ENHANCE_YOUR_CALM'), {
    what: "the gateway's rapid-reset WARN",
  });
  assert.equal(upstream.requests('/up/burst-'), 0, 'no reset stream reached the upstream');
  assert.equal(await hello(), 200);
});

test('h2 limits: rapid reset gets GOAWAY ENHANCE_YOUR_CALM and the gateway keeps serving', async () => {
  const before = upstream.accepted;
  // 150 resets in one packet: over http2.max_reset_streams (100) within the window.
  const client = await rawClient(gw.dataPort, rapidResetBytes(150, '/up/hang'));
  await waitClosed(client, 5000, 'the gateway to close the rapid-reset connection');
  const code = goawayCode(Buffer.from(client.received(), 'latin1'));
  assert.equal(code, constants.NGHTTP2_ENHANCE_YOUR_CALM, `GOAWAY code ${code}`);
  assert.equal(upstream.accepted - before, 0, 'no reset stream opened an upstream connection');
  assert.equal(await hello(), 200);
});

test('h2 limits: a Node client doing rapid reset is sent GOAWAY ENHANCE_YOUR_CALM', async () => {
  const session = h2();
  let goaway: number | undefined;
  session.on('goaway', (code: number) => (goaway = code));
  await once(session, 'remoteSettings');
  let sent = 0;
  while (goaway === undefined && !session.destroyed && !session.closed && sent < 20_000) {
    try {
      for (let i = 0; i < 50; i++) {
        const stream = session.request({ ':path': '/up/hang' });
        stream.on('error', () => undefined);
        stream.close(constants.NGHTTP2_CANCEL);
        sent++;
      }
    } catch {
      break;
    }
    await nextTurn();
  }
  await waitFor(() => goaway !== undefined || session.destroyed, { what: 'the GOAWAY' });
  session.destroy();
  assert.equal(goaway, constants.NGHTTP2_ENHANCE_YOUR_CALM, `GOAWAY code after ${sent} resets`);
  assert.ok(sent <= 5000, `${sent} streams were reset before the GOAWAY`);
  assert.equal(await hello(), 200);
});

// Counts requests, not connections: undici re-dials a connection for each in-flight exchange
// that a test above aborted.
test('h2 limits: one session cannot hold more than 128 upstream requests at once', async () => {
  const session = h2();
  try {
    for (let i = 0; i < 300; i++) session.request({ ':path': `/up/many-${i}` }).on('error', () => undefined);
    await waitFor(() => upstream.requests('/up/many-') >= 128, {
      timeoutMs: 15_000,
      what: '128 upstream connections',
    });
    await sleep(500);
    assert.equal(upstream.requests('/up/many-'), 128);
  } finally {
    session.destroy();
  }
});
