/**
 * HTTP/2 clients that go away (security review 3, F-3): a RST_STREAM, a
 * GOAWAY or a plain TCP disconnect must abort the upstream exchange at once,
 * whatever phase it is in — waiting for the upstream's headers, relaying the
 * client's request body, or relaying a response body paused under
 * backpressure. The origin records when each upstream socket closes; the
 * gateway's upstream timeouts are 60 s, so only the abort can close it in 1 s.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect as connectH2, constants, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { connect as connectTcp, type Socket } from 'node:net';
import { once } from 'node:events';
import { waitFor } from '../support/wait.js';
import { get, rapidResetBytes, rawClient } from './abuse-harness.js';
import {
  startClientGoneGateway,
  startRecordingOrigin,
  type ClientGoneGateway,
  type OriginSocket,
  type RecordingOrigin,
} from './h2-client-gone-harness.js';

let origin: RecordingOrigin;
let gw: ClientGoneGateway;

before(async () => {
  origin = await startRecordingOrigin();
  // A pool as small as the pinning test's streams: pinned connections would block every other client.
  gw = await startClientGoneGateway(origin.port, { system: 'upstream: { max_connections_per_target: 64 }' });
});

after(async () => {
  await gw?.stop();
  await origin?.close();
});

/** An h2c session over a socket the test owns, so it can be cut without GOAWAY or RST_STREAM. */
async function h2c(): Promise<{ session: ClientHttp2Session; socket: Socket }> {
  const socket = connectTcp(gw.dataPort, '127.0.0.1');
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  const session = connectH2(`http://127.0.0.1:${gw.dataPort}`, { createConnection: () => socket });
  session.on('error', () => undefined);
  await once(session, 'remoteSettings');
  return { session, socket };
}

type Phase = 'before response headers' | 'mid request body' | 'mid response body' | 'mid slow response body';
type Leave = 'RST_STREAM CANCEL' | 'GOAWAY' | 'TCP disconnect';

let probes = 0;

/** Opens one exchange in `phase`, waits until the origin holds it there, and returns its upstream socket. */
async function openExchange(
  session: ClientHttp2Session,
  phase: Phase,
): Promise<{ stream: ClientHttp2Stream; upstream: OriginSocket }> {
  const probe = `p${++probes}`;
  let stream: ClientHttp2Stream;
  if (phase === 'mid request body') {
    stream = session.request(
      { ':method': 'POST', ':path': `/up/hang?probe=${probe}`, 'content-length': '100000' },
      { endStream: false },
    );
    // A client sending its body slowly: the first piece, and the rest never.
    stream.write(Buffer.alloc(1000, 'b'));
  } else {
    const path =
      phase === 'mid response body'
        ? '/up/stream'
        : phase === 'mid slow response body'
          ? '/up/slow'
          : '/up/hang';
    stream = session.request({ ':path': `${path}?probe=${probe}` });
  }
  stream.on('error', () => undefined);
  let received = 0;
  if (phase === 'mid slow response body') {
    // Reads part of the body as it trickles in, then stops reading.
    stream.on('data', (d: Buffer) => (received += d.length));
    await waitFor(() => received >= 64 * 1024, { timeoutMs: 10_000, what: '64 KiB of the slow body' });
  }
  // The client stops reading: a response body fills the stream's window and the relay pauses.
  stream.pause();
  let upstream: OriginSocket | undefined;
  await waitFor(() => (upstream = origin.socketOf(probe)) !== undefined, {
    timeoutMs: 10_000,
    what: `the ${probe} request to reach the origin`,
  });
  const held = upstream as OriginSocket;
  if (phase === 'mid request body')
    await waitFor(() => held.bodyBytes >= 1000, { timeoutMs: 10_000, what: 'the first body piece upstream' });
  if (phase === 'mid response body')
    // Backpressure reaches the origin only once the gateway stopped reading the upstream (relay paused).
    await waitFor(() => held.blockedSince !== 0 && Date.now() - held.blockedSince > 300, {
      timeoutMs: 20_000,
      intervalMs: 50,
      what: 'the relay to pause under backpressure',
    });
  assert.equal(held.closed, false, 'the upstream socket is open while the exchange runs');
  return { stream, upstream: held };
}

async function assertUpstreamClosedWithin1s(upstream: OriginSocket, leftAt: number, what: string) {
  // Polled for longer than the bound, so a late close is reported with its delay.
  await waitFor(() => upstream.closed, { timeoutMs: 5000, intervalMs: 20, what }).catch(() => undefined);
  assert.ok(upstream.closed, `${what}: the upstream socket is still open 5 s after the client left`);
  const ms = upstream.closedAt - leftAt;
  assert.ok(ms <= 1000, `${what}: the upstream socket closed ${ms} ms after the client left`);
}

const phases: Phase[] = [
  'before response headers',
  'mid request body',
  'mid response body',
  'mid slow response body',
];
const leaves: Leave[] = ['RST_STREAM CANCEL', 'GOAWAY', 'TCP disconnect'];

for (const phase of phases) {
  for (const leave of leaves) {
    test(`F-3: ${leave} ${phase} closes the upstream socket within 1 s`, async () => {
      const { session, socket } = await h2c();
      try {
        const { stream, upstream } = await openExchange(session, phase);
        const leftAt = Date.now();
        if (leave === 'RST_STREAM CANCEL') stream.close(constants.NGHTTP2_CANCEL);
        else if (leave === 'GOAWAY') session.destroy(undefined, constants.NGHTTP2_NO_ERROR);
        else socket.destroy();
        await assertUpstreamClosedWithin1s(upstream, leftAt, `${leave} ${phase}`);
      } finally {
        session.destroy();
        socket.destroy();
      }
    });
  }
}

test('F-3: a reset stream leaves the other streams of its connection running', async () => {
  const { session, socket } = await h2c();
  try {
    const kept = await openExchange(session, 'before response headers');
    const reset = await openExchange(session, 'before response headers');
    const leftAt = Date.now();
    reset.stream.close(constants.NGHTTP2_CANCEL);
    await assertUpstreamClosedWithin1s(reset.upstream, leftAt, 'the reset stream');
    assert.equal(kept.upstream.closed, false, 'the stream that was not reset keeps its upstream exchange');
    const hello = session.request({ ':path': '/hello' });
    const [headers] = (await once(hello, 'response')) as [Record<string, string>];
    hello.resume();
    assert.equal(headers[':status'], 200);
  } finally {
    session.destroy();
    socket.destroy();
  }
});

test('F-3: h2pin: 2 connections x 32 streams to a hanging route, closed once they started, leave no upstream connection behind', async () => {
  // The review's reproduction (redteam/h2pin.mjs), scaled to the 64-connection pool of this gateway:
  // raw HEADERS frames, then the TCP connection is closed without RST_STREAM or GOAWAY.
  const clients = [];
  for (let c = 0; c < 2; c++) {
    const paths = Array.from({ length: 32 }, (_, i) => `/up/hang?probe=pin-${c}-${i}`);
    clients.push(await rawClient(gw.dataPort, rapidResetBytes(0, '', paths)));
  }
  const pinned = () => origin.sockets.filter((s) => s.probe?.startsWith('pin-') === true);
  await waitFor(() => pinned().length === 64, { timeoutMs: 20_000, what: '64 streams at the origin' });
  const leftAt = Date.now();
  for (const client of clients) client.socket.destroy();
  const started = Date.now();
  // Same target, same pool: it would wait for a pinned connection (timeout_ms 60 s) before the fix.
  assert.equal(await get(gw.dataPort, '/up/ok', 5000), 200);
  const ms = Date.now() - started;
  assert.ok(ms < 2000, `a normal request to the same upstream took ${ms} ms`);
  await waitFor(() => pinned().every((s) => s.closed), {
    timeoutMs: 5000,
    what: 'the pinned upstream sockets to close',
  });
  const latest = Math.max(...pinned().map((s) => s.closedAt)) - leftAt;
  assert.ok(latest <= 1000, `the last pinned upstream socket closed ${latest} ms after the clients left`);
});

test('F-3: an HTTP/2 WebSocket (extended CONNECT) reset before the upstream answered its handshake closes the upstream socket within 1 s', async () => {
  for (const leave of leaves) {
    const { session, socket } = await h2c();
    try {
      const probe = `ws${++probes}`;
      const stream = session.request({
        ':method': 'CONNECT',
        ':protocol': 'websocket',
        ':scheme': 'http',
        ':path': `/up/hang?probe=${probe}`,
        'sec-websocket-version': '13',
      });
      stream.on('error', () => undefined);
      let upstream: OriginSocket | undefined;
      await waitFor(() => (upstream = origin.socketOf(probe)) !== undefined, {
        timeoutMs: 10_000,
        what: `the ${probe} handshake to reach the origin`,
      });
      const leftAt = Date.now();
      if (leave === 'RST_STREAM CANCEL') stream.close(constants.NGHTTP2_CANCEL);
      else if (leave === 'GOAWAY') session.destroy(undefined, constants.NGHTTP2_NO_ERROR);
      else socket.destroy();
      await assertUpstreamClosedWithin1s(upstream as OriginSocket, leftAt, `WebSocket handshake, ${leave}`);
    } finally {
      session.destroy();
      socket.destroy();
    }
  }
});
