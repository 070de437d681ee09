/**
 * Connection caps against a real gateway process (security review H2):
 * `listener.max_connections` refuses the connection over the cap on accept while
 * existing connections keep working and the admin listener (its own cap) keeps
 * answering; `upstream.max_connections_per_target` bounds the outbound pool.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  get,
  hangingUpstream,
  rawClient,
  startAbuseGateway,
  waitClosed,
  type AbuseGateway,
  type HangingUpstream,
  type RawClient,
} from './abuse-harness.js';
import { waitFor } from '../support/wait.js';

let upstream: HangingUpstream;
let gw: AbuseGateway;

before(async () => {
  upstream = await hangingUpstream();
  gw = await startAbuseGateway({
    upstreamPort: upstream.port,
    system: 'upstream: { max_connections_per_target: 4 }',
    admin: ', max_connections: 8',
    timeouts: 'connection_seconds: 30, read_seconds: 30, idle_seconds: 60',
  });
});

after(async () => {
  await gw.stop();
  await upstream.close();
});

/** Sends one keep-alive GET on `client` and resolves the status line. */
async function getOn(client: RawClient, path: string): Promise<string> {
  const start = client.received().length;
  client.socket.write(`GET ${path} HTTP/1.1\r\nHost: cap.test\r\n\r\n`);
  await waitFor(() => /\r\n\r\nhello/.test(client.received().slice(start)) || client.closed, {
    what: `the answer to ${path}`,
  });
  return client.received().slice(start).split('\r\n')[0] ?? '';
}

test('connection cap: the connection over listener.max_connections is closed at once; existing ones keep working', async () => {
  // A gateway of its own: its cap is small and nothing else holds its connections.
  const g = await startAbuseGatewayWithCap(4);
  try {
    const keepAlive = await rawClient(g.dataPort);
    assert.match(await getOn(keepAlive, '/hello'), / 200 /);
    const idle = await Promise.all([1, 2, 3].map(() => rawClient(g.dataPort)));
    const started = Date.now();
    const extra = await rawClient(g.dataPort);
    await waitClosed(extra, 3000, 'the connection over the cap to be closed');
    assert.ok(Date.now() - started < 3000);
    assert.equal(extra.received(), '', 'nothing is served over the cap');
    assert.match(await getOn(keepAlive, '/hello'), / 200 /, 'an existing connection still works');
    assert.equal(await get(g.adminPort, '/healthz'), 200, 'the admin listener has its own cap');
    // A slot freed is a slot usable again.
    idle[0]?.socket.destroy();
    await waitFor(async () => (await get(g.dataPort, '/hello').catch(() => 0)) === 200, {
      what: 'a new connection after one closed',
    });
    for (const c of [keepAlive, ...idle]) c.socket.destroy();
  } finally {
    await g.stop();
  }
});

async function startAbuseGatewayWithCap(max: number): Promise<AbuseGateway> {
  return startAbuseGateway({
    timeouts: 'connection_seconds: 30, read_seconds: 30, idle_seconds: 60',
    listenerExtra: `, max_connections: ${max}`,
  });
}

test('connection cap: the admin listener refuses connections over admin.max_connections', async () => {
  const held = await Promise.all(Array.from({ length: 8 }, () => rawClient(gw.adminPort)));
  const extra = await rawClient(gw.adminPort);
  await waitClosed(extra, 3000, 'the admin connection over the cap to be closed');
  assert.equal(await get(gw.dataPort, '/hello'), 200, 'the data plane is unaffected');
  for (const c of held) c.socket.destroy();
  await waitFor(async () => (await get(gw.adminPort, '/healthz').catch(() => 0)) === 200, {
    what: 'the admin listener to accept again',
  });
});

test('connection cap: upstream.max_connections_per_target bounds the outbound pool', async () => {
  const before = upstream.accepted;
  const clients = await Promise.all(Array.from({ length: 12 }, () => rawClient(gw.dataPort)));
  for (const [i, c] of clients.entries()) c.socket.write(`GET /up/${i} HTTP/1.1\r\nHost: cap.test\r\n\r\n`);
  await waitFor(() => upstream.accepted - before >= 4, { what: '4 upstream connections' });
  await sleep(500);
  assert.equal(upstream.accepted - before, 4);
  // The queued requests end within their timeout_ms (3 s) with the error handler's 502.
  await Promise.all(clients.map((c) => waitFor(() => / 502 /.test(c.received()), { timeoutMs: 15_000 })));
  for (const c of clients) c.socket.destroy();
});
