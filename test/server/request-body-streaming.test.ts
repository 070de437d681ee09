/**
 * Request bodies are streamed to the upstream unless a node of the policy reads them
 * (docs/routing.md#request-bodies): on the lean HTTP/1.1 front, the node:http front and HTTP/2.
 * Real gateway processes, a real node:http upstream. The big upload sends up to
 * UPLOAD_STREAM_BYTES (default 1 GiB), chunked, and ends early after UPLOAD_STREAM_BUDGET_MS
 * (default 45 s) on a machine too busy for 1 GiB; it logs how much went through.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect as h2connect, type ClientHttp2Session, type OutgoingHttpHeaders } from 'node:http2';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { freePort } from '../support/free-port.js';
import { waitFor } from '../support/wait.js';
import { spawnDataPlane, type SpawnedGateway } from './raw-http.js';

const LIMIT = 1024 * 1024;
const BIG = Number(process.env['UPLOAD_STREAM_BYTES'] ?? 1024 * 1024 * 1024);
const BUDGET_MS = Number(process.env['UPLOAD_STREAM_BUDGET_MS'] ?? 45_000);
// A gateway that buffered the body would grow by at least what was sent (256 MiB or more, below);
// 128 MiB leaves room for the buffers V8 frees lazily when the machine is loaded.
const RSS_GROWTH_MAX = 128 * 1024 * 1024;
const MIN_SENT = 256 * 1024 * 1024;

interface Seen {
  headers: IncomingHttpHeaders;
  bytes: number;
  ended: boolean;
  aborted: boolean;
}

let upstream: Server;
const seen = new Map<string, Seen>();
const gateways: Record<'lean' | 'node' | 'big', SpawnedGateway | undefined> = {
  lean: undefined,
  node: undefined,
  big: undefined,
};
let adminPort = 0;

function policies(port: number) {
  const up = { id: 'up', type: 'upstream', config: { targets: [{ host: '127.0.0.1', port }] } };
  const ends = [
    { id: 'in', type: 'listener' },
    { id: 'out', type: 'client' },
  ];
  return {
    stream: {
      name: 'stream',
      nodes: [...ends, up],
      edges: [
        { from: 'in.out', to: 'up.in' },
        { from: 'up.success', to: 'out.in' },
      ],
    },
    buffer: {
      name: 'buffer',
      nodes: [
        ...ends,
        {
          id: 'check',
          type: 'request-validation',
          config: { body_schema: { type: 'object', required: ['name'] } },
        },
        up,
      ],
      edges: [
        { from: 'in.out', to: 'check.in' },
        { from: 'check.success', to: 'up.in' },
        { from: 'check.denied', to: 'out.in' },
        { from: 'up.success', to: 'out.in' },
      ],
    },
  };
}

/** An origin that takes the first body bytes and then cuts the connection. */
let cutter: Server;

function gatewayYaml(port: number): string {
  const p = policies(port);
  const cutterPort = (cutter.address() as AddressInfo).port;
  // The first upstream fails mid-body; its error edge leads to a second upstream.
  const failover = {
    name: 'failover',
    nodes: [
      { id: 'in', type: 'listener' },
      { id: 'a', type: 'upstream', config: { targets: [{ host: '127.0.0.1', port: cutterPort }] } },
      { id: 'b', type: 'upstream', config: { targets: [{ host: '127.0.0.1', port }] } },
      { id: 'out', type: 'client' },
    ],
    edges: [
      { from: 'in.out', to: 'a.in' },
      { from: 'a.success', to: 'out.in' },
      { from: 'a.error', to: 'b.in' },
      { from: 'b.success', to: 'out.in' },
    ],
  };
  // Header-only nodes: key-auth and a header rewrite leave the body to the upstream.
  const guarded = {
    name: 'guarded',
    nodes: [
      { id: 'in', type: 'listener' },
      { id: 'auth', type: 'key-auth', config: { use_consumers: true } },
      {
        id: 'tag',
        type: 'proxy-rewrite',
        config: { headers: { set: { 'x-user': '{{request.headers.x-api-key}}' } } },
      },
      { id: 'up', type: 'upstream', config: { targets: [{ host: '127.0.0.1', port }] } },
      { id: 'out', type: 'client' },
    ],
    edges: [
      { from: 'in.out', to: 'auth.in' },
      { from: 'auth.success', to: 'tag.in' },
      { from: 'auth.denied', to: 'out.in' },
      { from: 'tag.success', to: 'up.in' },
      { from: 'up.success', to: 'out.in' },
    ],
  };
  return `
consumers:
  - { name: alice, credentials: { key-auth: { key: alice-key } } }
routes:
  - { name: guarded, match: { path: /guarded/* }, policy: guarded }
  - { name: stream, match: { path: /stream/* }, policy: stream }
  - { name: buffer, match: { path: /buffer/* }, policy: buffer }
  - { name: failover, match: { path: /failover/* }, policy: failover }
policies: ${JSON.stringify([p.stream, p.buffer, failover, guarded])}
`;
}

before(async () => {
  upstream = createServer((req, res) => {
    const s: Seen = { headers: req.headers, bytes: 0, ended: false, aborted: false };
    seen.set(req.url ?? '', s);
    req.on('data', (c: Buffer) => (s.bytes += c.length));
    req.on('end', () => {
      s.ended = true;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ bytes: s.bytes }));
    });
    req.on('close', () => {
      if (!s.ended) s.aborted = true;
    });
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  cutter = createServer((req) => req.once('data', () => req.socket.destroy()));
  cutter.listen(0, '127.0.0.1');
  await once(cutter, 'listening');
  const port = (upstream.address() as AddressInfo).port;
  adminPort = await freePort();
  const admin = `admin: { bind: 127.0.0.1, port: ${adminPort}, username: admin, password: "correct horse" }\n`;
  const limit = `max_request_body_bytes: ${LIMIT}`;
  [gateways.lean, gateways.node, gateways.big] = await Promise.all([
    spawnDataPlane(
      gatewayYaml(port),
      `http2: { enabled: true }\n${admin}debug: { enabled: true, capture_bodies: true }\n`,
      limit,
    ),
    spawnDataPlane(gatewayYaml(port), '', `http1_server: node, ${limit}`),
    spawnDataPlane(gatewayYaml(port), '', `max_request_body_bytes: ${4 * BIG}`),
  ]);
});

after(async () => {
  await Promise.all(Object.values(gateways).map((g) => g?.stop() ?? Promise.resolve()));
  upstream.closeAllConnections();
  upstream.close();
  cutter.close();
});

function portOf(front: keyof typeof gateways): number {
  const g = gateways[front];
  assert.ok(g, `${front} gateway running`);
  return g.port;
}

/** A raw HTTP/1.1 connection: write the bytes you want, read what comes back, see how it closed. */
async function rawClient(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let data = '';
  let error: NodeJS.ErrnoException | undefined;
  socket.on('data', (c: Buffer) => (data += c.toString('latin1')));
  socket.on('error', (err) => (error = err));
  // Not events.once: an 'error' (the reset this file provokes) would reject it.
  const closed = new Promise((resolve) => socket.once('close', resolve));
  return { socket, text: () => data, error: () => error, closed };
}

async function statusOf(client: Awaited<ReturnType<typeof rawClient>>): Promise<number> {
  await waitFor(() => /\r\n\r\n/.test(client.text()), { timeoutMs: 20000, what: 'an answer' });
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(client.text())?.[1]);
}

const waitSeen = (url: string, what: (s: Seen) => boolean, label: string) =>
  waitFor(
    () => {
      const s = seen.get(url);
      return s !== undefined && what(s);
    },
    { timeoutMs: 20000, what: label },
  );

for (const front of ['lean', 'node'] as const) {
  test(`request streaming (${front} front): the upstream gets the first bytes before the client sent the rest`, async () => {
    const url = `/stream/${front}-first-bytes`;
    const c = await rawClient(portOf(front));
    c.socket.write(`POST ${url} HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n${'a'.repeat(1000)}`);
    await waitSeen(url, (s) => s.bytes === 1000, 'the first 1000 bytes upstream');
    assert.equal(seen.get(url)?.ended, false);
    assert.equal(seen.get(url)?.headers['content-length'], '2000');
    c.socket.write('b'.repeat(1000));
    assert.equal(await statusOf(c), 200);
    assert.match(c.text(), /\{"bytes":2000\}$/);
    c.socket.destroy();
  });

  test(`request streaming (${front} front): an announced oversize gets 413 and the upstream is never contacted`, async () => {
    const url = `/stream/${front}-announced`;
    const c = await rawClient(portOf(front));
    c.socket.write(`POST ${url} HTTP/1.1\r\nHost: x\r\nContent-Length: ${LIMIT + 1}\r\n\r\nxyz`);
    assert.equal(await statusOf(c), 413);
    assert.match(c.text(), /payload_too_large/);
    c.socket.destroy();
    // The same route still reaches the upstream: the oversize one never did.
    const ok = await fetch(`http://127.0.0.1:${portOf(front)}/stream/${front}-after`, {
      method: 'POST',
      body: 'small',
    });
    assert.equal(ok.status, 200);
    assert.equal(seen.has(url), false);
  });

  test(`request streaming (${front} front): passing the limit mid-stream aborts the upstream request and resets the client`, async () => {
    const url = `/stream/${front}-midstream`;
    const c = await rawClient(portOf(front));
    const chunk = (size: number) => `${size.toString(16)}\r\n${'z'.repeat(size)}\r\n`;
    c.socket.write(
      `POST ${url} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${chunk(320 * 1024)}`,
    );
    await waitSeen(url, (s) => s.bytes > 0, 'the upload reaching the upstream');
    for (let sent = 320 * 1024; sent <= LIMIT && !c.socket.destroyed; sent += 64 * 1024) {
      c.socket.write(chunk(64 * 1024));
    }
    await c.closed;
    assert.equal(c.text(), '', 'no answer, the connection is cut');
    await waitSeen(url, (s) => s.aborted, 'the upstream request aborted');
    assert.equal(seen.get(url)?.ended, false);
    assert.ok((seen.get(url)?.bytes ?? 0) <= LIMIT);
  });
}

test('request streaming: an auth and header-rewrite chain streams the body; a traced request is buffered and its trace shows the body', async () => {
  const url = '/guarded/first-bytes';
  const c = await rawClient(portOf('lean'));
  c.socket.write(
    `POST ${url} HTTP/1.1\r\nHost: x\r\nx-api-key: alice-key\r\nContent-Length: 2000\r\n\r\n${'a'.repeat(1000)}`,
  );
  await waitSeen(url, (s) => s.bytes === 1000, 'the first 1000 bytes upstream');
  assert.equal(seen.get(url)?.ended, false);
  assert.equal(seen.get(url)?.headers['x-user'], 'alice-key');
  c.socket.write('b'.repeat(1000));
  assert.equal(await statusOf(c), 200);
  c.socket.destroy();

  // Without the key the chain answers 401 itself; the unread body is dropped.
  const denied = await fetch(`http://127.0.0.1:${portOf('lean')}/guarded/denied`, {
    method: 'POST',
    body: 'x'.repeat(5000),
  });
  assert.equal(denied.status, 401);
  assert.equal(seen.has('/guarded/denied'), false);

  const traced = await fetch(`http://127.0.0.1:${portOf('lean')}/guarded/traced`, {
    method: 'POST',
    headers: { 'x-api-key': 'alice-key', 'x-switchyard-debug': '1', 'content-type': 'text/plain' },
    body: 'traced body',
  });
  assert.equal(traced.status, 200);
  assert.equal(seen.get('/guarded/traced')?.bytes, 11);
  const id = traced.headers.get('x-switchyard-trace-id');
  assert.ok(id, 'the traced answer names its trace');
  const auth = `Basic ${Buffer.from('admin:correct horse').toString('base64')}`;
  const trace = (await (
    await fetch(`http://127.0.0.1:${adminPort}/api/debug/traces/${id}`, { headers: { authorization: auth } })
  ).json()) as { initial: { request: { body: { len: number; text?: string } } } };
  assert.deepEqual(
    { len: trace.initial.request.body.len, text: trace.initial.request.body.text },
    { len: 11, text: 'traced body' },
  );
});

test('request streaming: a streamed body is never replayed to a second upstream after bytes left', async () => {
  const url = '/failover/once';
  const res = await fetch(`http://127.0.0.1:${portOf('lean')}${url}`, {
    method: 'POST',
    body: 'q'.repeat(300 * 1024),
  });
  assert.equal(res.status, 502);
  assert.equal(((await res.json()) as { code: string }).code, 'UPSTREAM_REQUEST_BUILD_ERROR');
  assert.equal(seen.has(url), false, 'the second upstream never got the request');
});

test('request streaming: a node that reads the body keeps it buffered, and validate names it', async () => {
  const port = portOf('lean');
  const body = JSON.stringify({ name: 'n', pad: 'p'.repeat(400 * 1024) });
  const send = async (url: string) => {
    const c = await rawClient(port);
    const half = body.length >> 1;
    const chunk = (s: string) => `${s.length.toString(16)}\r\n${s}\r\n`;
    c.socket.write(
      `POST ${url} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    c.socket.write(chunk(body.slice(0, half)));
    c.socket.write(`${chunk(body.slice(half))}0\r\n\r\n`);
    assert.equal(await statusOf(c), 200);
    c.socket.destroy();
    return seen.get(url);
  };
  // Buffered: the upstream gets the whole body with its length, as before streaming existed.
  const buffered = await send('/buffer/reads');
  assert.equal(buffered?.headers['content-length'], String(body.length));
  assert.equal(buffered?.headers['transfer-encoding'], undefined);
  assert.equal(buffered?.bytes, body.length);
  // Streamed: a chunked body longer than the first 256 KiB buffer goes on chunked.
  const streamed = await send('/stream/chunked');
  assert.equal(streamed?.headers['transfer-encoding'], 'chunked');
  assert.equal(streamed?.bytes, body.length);

  const auth = { authorization: `Basic ${Buffer.from('admin:correct horse').toString('base64')}` };
  const validate = async (policy: object) => {
    const res = await fetch(`http://127.0.0.1:${adminPort}/api/policies/validate`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(policy),
    });
    return (await res.json()) as { valid: boolean; buffering: unknown[]; request_buffering: unknown[] };
  };
  const p = policies((upstream.address() as AddressInfo).port);
  const reads = await validate(p.buffer);
  assert.equal(reads.valid, true);
  assert.deepEqual(reads.request_buffering, [{ upstream: 'up', blocked_by: 'check' }]);
  assert.deepEqual(reads.buffering, []);
  const streams = await validate(p.stream);
  assert.deepEqual(streams.request_buffering, []);
});

async function h2(
  session: ClientHttp2Session,
  headers: OutgoingHttpHeaders,
  steps: (write: (data: string) => void) => Promise<void>,
) {
  const stream = session.request(headers, { endStream: false });
  let status: number | undefined;
  let body = '';
  stream.on('response', (h) => (status = h[':status']));
  stream.on('data', (d: Buffer) => (body += d.toString()));
  stream.on('error', () => undefined);
  const closed = new Promise((resolve) => stream.once('close', resolve));
  await steps((data) => {
    if (!stream.destroyed) stream.write(data);
  });
  if (!stream.destroyed) stream.end();
  await closed;
  return { status, body, rstCode: stream.rstCode };
}

test('request streaming (HTTP/2): first bytes upstream before the end; 413 when announced; reset mid-stream', async () => {
  const session = h2connect(`http://127.0.0.1:${portOf('lean')}`);
  session.on('error', () => undefined);
  try {
    const first = await h2(
      session,
      { ':method': 'POST', ':path': '/stream/h2-first', 'content-length': '2000' },
      async (write) => {
        write('a'.repeat(1000));
        await waitSeen('/stream/h2-first', (s) => s.bytes === 1000, 'the first h2 bytes upstream');
        assert.equal(seen.get('/stream/h2-first')?.ended, false);
        write('b'.repeat(1000));
      },
    );
    assert.equal(first.status, 200);
    assert.equal(first.body, '{"bytes":2000}');

    // Nothing is sent after the headers: an early end would break the announced length.
    const announcedStream = session.request(
      { ':method': 'POST', ':path': '/stream/h2-announced', 'content-length': String(LIMIT + 1) },
      { endStream: false },
    );
    announcedStream.on('error', () => undefined);
    const [headers] = (await once(announcedStream, 'response')) as [Record<string, unknown>];
    announcedStream.close();
    const announced = { status: headers[':status'] };
    assert.equal(announced.status, 413);
    assert.equal(seen.has('/stream/h2-announced'), false);

    const mid = await h2(session, { ':method': 'POST', ':path': '/stream/h2-mid' }, async (write) => {
      write('z'.repeat(320 * 1024));
      await waitSeen('/stream/h2-mid', (s) => s.bytes > 0, 'the h2 upload reaching the upstream');
      for (let sent = 320 * 1024; sent <= LIMIT; sent += 64 * 1024) write('z'.repeat(64 * 1024));
    });
    assert.equal(mid.status, undefined, 'no answer: the stream is reset');
    assert.notEqual(mid.rstCode, 0);
    await waitSeen('/stream/h2-mid', (s) => s.aborted, 'the upstream request aborted');

    // Only that stream was reset: the session serves the next request.
    const next = await h2(session, { ':method': 'POST', ':path': '/stream/h2-next' }, (w) =>
      Promise.resolve(w('ok')),
    );
    assert.equal(next.status, 200);
    assert.equal(next.body, '{"bytes":2}');
  } finally {
    session.close();
  }
});

function rssOf(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(line?.[1] ?? 0) * 1024;
}

/** A chunked PUT of 1 MiB pieces, up to `max` bytes or until `budgetMs` passed; resolves with the bytes sent. */
async function chunkedUpload(port: number, url: string, max: number, budgetMs: number): Promise<number> {
  const c = await rawClient(port);
  const startedAt = performance.now();
  let sent = 0;
  try {
    const piece = Buffer.concat([
      Buffer.from('100000\r\n'),
      Buffer.alloc(1 << 20, 0x61),
      Buffer.from('\r\n'),
    ]);
    c.socket.write(`PUT ${url} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
    while (sent < max && performance.now() - startedAt < budgetMs && !c.socket.destroyed) {
      sent += 1 << 20;
      if (!c.socket.write(piece)) await once(c.socket, 'drain');
    }
    c.socket.write('0\r\n\r\n');
    assert.equal(await statusOf(c), 200);
    assert.match(c.text(), new RegExp(`\\{"bytes":${sent}\\}$`));
    return sent;
  } finally {
    c.socket.destroy();
  }
}

test(`request streaming: an upload of up to ${BIG >> 20} MiB through a 1-node policy grows the gateway's RSS by less than 128 MiB`, async () => {
  const g = gateways.big;
  assert.ok(g);
  const pid = g.process.child.pid;
  assert.ok(pid !== undefined);
  const sample = (from: number) => {
    let peak = from;
    const timer = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);
    return () => {
      clearInterval(timer);
      return Math.max(peak, rssOf(pid)) - from;
    };
  };
  // A warm-up upload first: V8 frees socket buffers only after tens of MiB of them, so the
  // first upload lifts RSS to its steady level; the big one must not grow it further.
  const cold = rssOf(pid);
  const stopCold = sample(cold);
  await chunkedUpload(g.port, '/stream/warm', 64 << 20, BUDGET_MS);
  const coldGrowth = stopCold();
  const baseline = rssOf(pid);
  const stop = sample(baseline);
  const startedAt = performance.now();
  const sent = await chunkedUpload(g.port, '/stream/big', BIG, BUDGET_MS);
  const growth = stop();
  const seconds = (performance.now() - startedAt) / 1000;
  const mib = (n: number) => (n / (1 << 20)).toFixed(1);
  console.log(
    `# ${sent >> 20} of ${BIG >> 20} MiB uploaded in ${seconds.toFixed(1)} s (${(sent / seconds / (1 << 20)).toFixed(0)} MiB/s); gateway RSS growth ${mib(growth)} MiB after a 64 MiB warm-up (${mib(coldGrowth)} MiB during it)`,
  );
  assert.ok(sent >= Math.min(MIN_SENT, BIG), `only ${sent} bytes uploaded in ${BUDGET_MS} ms`);
  assert.ok(growth < RSS_GROWTH_MAX, `RSS grew by ${growth} bytes`);
});
