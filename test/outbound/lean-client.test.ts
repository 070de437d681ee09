import assert from 'node:assert/strict';
import { once } from 'node:events';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import {
  createServer as createNetServer,
  type AddressInfo,
  type Server as NetServer,
  type Socket,
} from 'node:net';
import { after, before, test } from 'node:test';
import { Pool } from 'undici';
import { classifyFailure } from '../../src/outbound/classify.js';
import { exchange, type ExchangeLimits, type ExchangeResult } from '../../src/outbound/exchange.js';
import { LeanPool } from '../../src/outbound/lean/lean-pool.js';
import type { OutboundDispatcher } from '../../src/outbound/pool-registry.js';
import { RequestBodyStream } from '../../src/outbound/request-stream.js';
import { freePort } from '../support/free-port.js';

/**
 * The lean HTTP/1.1 upstream client (src/outbound/lean/) against real servers, each case run
 * through the same exchange() the gateway uses, once on a LeanPool and once on an undici Pool:
 * both clients must give the caller the same answer or the same catalog error.
 */
const BUFFERED: ExchangeLimits = { deadlineMs: 5_000, idleMs: 5_000, streaming: false };

let server: Server;
let origin: string;
/** Sockets the origin accepted, so a test can count connections. */
const accepted = new Set<Socket>();
let acceptedTotal = 0;

function handle(req: IncomingMessage, res: ServerResponse): void {
  if (req.url === '/echo' && onEchoHead !== null) {
    const release = onEchoHead;
    onEchoHead = null;
    release();
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://x');
    switch (url.pathname) {
      case '/echo':
        res.writeHead(200, {
          'content-type': 'application/json',
          'x-seen-te': req.headers['transfer-encoding'] ?? '',
          'x-seen-length': req.headers['content-length'] ?? '',
          'x-seen-host': req.headers.host ?? '',
        });
        res.end(JSON.stringify({ method: req.method, body: body.toString(), trailer: null }));
        return;
      case '/head':
        res.writeHead(200, { 'content-length': '1234', 'x-kind': 'head' });
        res.end(req.method === 'HEAD' ? undefined : Buffer.alloc(1234, 'h'));
        return;
      case '/early-hints':
        res.writeEarlyHints({ link: '</style.css>; rel=preload' }, () => {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end('after hints');
        });
        return;
      case '/chunked-trailer':
        res.writeHead(200, { trailer: 'x-checksum' });
        res.write('part one, ');
        res.addTrailers({ 'x-checksum': 'abc123' });
        res.end('part two');
        return;
      case '/stall-body':
        res.writeHead(200, { 'content-length': '100' });
        res.write('only some');
        return; // never ends
      case '/cut-body':
        res.writeHead(200, { 'content-length': '100' });
        res.write('only some', () => res.socket?.destroy());
        return;
      case '/slow':
        setTimeout(() => res.end('slow'), Number(url.searchParams.get('ms') ?? 50));
        return;
      case '/close':
        res.writeHead(200, { connection: 'close', 'content-type': 'text/plain' });
        res.end('bye');
        return;
      default:
        res.writeHead(404);
        res.end();
    }
  });
}

before(async () => {
  server = createHttpServer(handle);
  server.on('connection', (socket: Socket) => {
    acceptedTotal++;
    accepted.add(socket);
    socket.once('close', () => accepted.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

const clients: Record<string, (target: string, connections?: number) => OutboundDispatcher> = {
  lean: (target, connections = 16) => new LeanPool(target, { connections, connectTimeoutMs: 2_000 }),
  undici: (target, connections = 16) =>
    new Pool(target, { connections, headersTimeout: 0, bodyTimeout: 0, connect: { timeout: 2_000 } }),
};

/** Runs `run` on each client and returns both outcomes, keyed by client name. */
async function onBoth<T>(
  run: (pool: OutboundDispatcher) => Promise<T>,
  target = origin,
): Promise<Record<string, T>> {
  const out: Record<string, T> = {};
  for (const [name, make] of Object.entries(clients)) {
    const pool = make(target);
    try {
      out[name] = await run(pool);
    } finally {
      await pool.close();
    }
  }
  return out;
}

async function text(result: ExchangeResult): Promise<string> {
  if (result.stream === null) return result.body?.toString() ?? '';
  const chunks: Buffer[] = [];
  for await (const chunk of result.stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

/** A request body stream as the data plane makes one; its source has nothing to pause. */
function bodyStream(announced: number | undefined): RequestBodyStream {
  return new RequestBodyStream({ resumeBody() {}, bodyDestroyed() {} }, announced);
}

/** Called when the origin has the head of a request for /echo: lets a body held back go on. */
let onEchoHead: (() => void) | null = null;

/** A body whose first part is there when the request goes out and the rest once the origin has the head. */
function arriving(parts: string[], announced?: number): RequestBodyStream {
  const stream = bodyStream(announced);
  stream.push(Buffer.from(parts[0]!));
  onEchoHead = () => {
    for (const part of parts.slice(1)) stream.push(Buffer.from(part));
    stream.push(null);
  };
  return stream;
}

/** The catalog code (and retryability) a failed exchange maps to. */
async function failure(promise: Promise<unknown>): Promise<{ code: string; retryable: boolean }> {
  try {
    const result = await promise;
    const r = result as ExchangeResult;
    if (r.stream !== null) await text(r);
  } catch (err) {
    const c = classifyFailure(err);
    return { code: c.code, retryable: c.retryable };
  }
  return { code: 'none', retryable: false };
}

test('lean client: a GET gets status, headers and body; the Host field names the target', async () => {
  const both = await onBoth(async (pool) => {
    const r = await exchange(
      pool,
      { method: 'GET', path: '/echo', headers: ['x-a', '1'], body: null },
      BUFFERED,
      null,
      null,
    );
    return {
      status: r.status,
      host: r.headers['x-seen-host'],
      te: r.headers['x-seen-te'],
      body: await text(r),
    };
  });
  assert.deepEqual(both.lean, both.undici);
  assert.equal(both.lean!.status, 200);
  assert.equal(both.lean!.host, new URL(origin).host);
  assert.deepEqual(JSON.parse(both.lean!.body), { method: 'GET', body: '', trailer: null });
});

test('lean client: sequential requests reuse one keep-alive connection', async () => {
  const pool = clients.lean!(origin);
  const before = acceptedTotal;
  for (let i = 0; i < 5; i++) {
    const r = await exchange(
      pool,
      { method: 'GET', path: '/echo', headers: [], body: null },
      BUFFERED,
      null,
      null,
    );
    assert.equal(r.status, 200);
  }
  assert.equal(acceptedTotal - before, 1, 'five requests, one connection');
  await pool.close();
});

test('lean client: buffered and streamed request bodies arrive whole, framed by length or chunked', async () => {
  const both = await onBoth(async (pool) => {
    const buffered = await exchange(
      pool,
      { method: 'POST', path: '/echo', headers: [], body: Buffer.from('buffered body') },
      BUFFERED,
      null,
      null,
    );
    // Still arriving when sent: chunked, or with the client's announced length.
    const chunked = await exchange(
      pool,
      { method: 'PUT', path: '/echo', headers: [], body: arriving(['streamed ', 'body']) },
      BUFFERED,
      null,
      null,
    );
    const sized = await exchange(
      pool,
      { method: 'POST', path: '/echo', headers: [], body: arriving(['12345', '678'], 8) },
      BUFFERED,
      null,
      null,
    );
    // Whole before it is sent: measured, so it goes with a Content-Length.
    const whole = bodyStream(undefined);
    whole.push(Buffer.from('all here'));
    whole.push(null);
    const ended = await exchange(
      pool,
      { method: 'POST', path: '/echo', headers: [], body: whole },
      BUFFERED,
      null,
      null,
    );
    const empty = await exchange(
      pool,
      { method: 'POST', path: '/echo', headers: [], body: null },
      BUFFERED,
      null,
      null,
    );
    return [buffered, chunked, sized, ended, empty].map((r) => ({
      te: r.headers['x-seen-te'],
      length: r.headers['x-seen-length'],
      body: (JSON.parse(r.body!.toString()) as { body: string }).body,
    }));
  });
  assert.deepEqual(both.lean, both.undici);
  assert.deepEqual(both.lean, [
    { te: '', length: '13', body: 'buffered body' },
    { te: 'chunked', length: '', body: 'streamed body' },
    { te: '', length: '8', body: '12345678' },
    { te: '', length: '8', body: 'all here' },
    { te: '', length: '0', body: '' },
  ]);
});

test('lean client: a HEAD answer has no body whatever its Content-Length, and the connection is reused', async () => {
  const pool = clients.lean!(origin);
  const before = acceptedTotal;
  const head = await exchange(
    pool,
    { method: 'HEAD', path: '/head', headers: [], body: null },
    BUFFERED,
    null,
    null,
  );
  assert.equal(head.status, 200);
  assert.equal(head.headers['content-length'], '1234');
  assert.equal(head.body?.length ?? 0, 0);
  const get = await exchange(
    pool,
    { method: 'GET', path: '/head', headers: [], body: null },
    BUFFERED,
    null,
    null,
  );
  assert.equal(get.body?.length, 1234);
  assert.equal(acceptedTotal - before, 1);
  await pool.close();
});

test('lean client: 103 Early Hints are skipped and the final answer is delivered', async () => {
  const both = await onBoth(async (pool) => {
    const r = await exchange(
      pool,
      { method: 'GET', path: '/early-hints', headers: [], body: null },
      BUFFERED,
      null,
      null,
    );
    return { status: r.status, body: await text(r) };
  });
  assert.deepEqual(both.lean, both.undici);
  assert.deepEqual(both.lean, { status: 200, body: 'after hints' });
});

test('lean client: a chunked answer with trailers streams its body and hands over the trailers', async () => {
  const limits: ExchangeLimits = { ...BUFFERED, streaming: true };
  const both = await onBoth(async (pool) => {
    const r = await exchange(
      pool,
      { method: 'GET', path: '/chunked-trailer', headers: [], body: null },
      limits,
      null,
      null,
    );
    const body = await text(r);
    return { body, trailers: (r.stream as unknown as { trailers?: unknown } | null)?.trailers };
  });
  assert.deepEqual(both.lean, both.undici);
  assert.deepEqual(both.lean, { body: 'part one, part two', trailers: { 'x-checksum': 'abc123' } });
});

test('lean client: an answer with Connection: close is read whole and its connection not reused', async () => {
  const pool = clients.lean!(origin);
  const before = acceptedTotal;
  for (let i = 0; i < 2; i++) {
    const r = await exchange(
      pool,
      { method: 'GET', path: '/close', headers: [], body: null },
      BUFFERED,
      null,
      null,
    );
    assert.equal(r.body?.toString(), 'bye');
  }
  assert.equal(acceptedTotal - before, 2);
  await pool.close();
});

test('lean client: a body ended by the connection closing (no length, no chunks) is read whole', async () => {
  const raw: NetServer = createNetServer((socket) => {
    socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end'));
  });
  raw.listen(0, '127.0.0.1');
  await once(raw, 'listening');
  const target = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
  const both = await onBoth(async (pool) => {
    const r = await exchange(
      pool,
      { method: 'GET', path: '/', headers: [], body: null },
      BUFFERED,
      null,
      null,
    );
    return { status: r.status, body: await text(r) };
  }, target);
  raw.close();
  assert.deepEqual(both.lean, both.undici);
  assert.deepEqual(both.lean, { status: 200, body: 'until the end' });
});

test('lean client: answers written in pieces (a head split across reads, a body in several) arrive whole, and keep-alive holds', async () => {
  const body = 'b'.repeat(5000);
  const pieces = [
    ['HTTP/1.1 200 OK\r\ncontent-le', `ngth: ${body.length}\r\n\r\n${body.slice(0, 100)}`, body.slice(100)],
    [
      `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n`,
      body.slice(0, 10),
      body.slice(10, 3000),
      body.slice(3000),
    ],
  ];
  let connections = 0;
  const raw: NetServer = createNetServer((socket) => {
    connections++;
    let answer = 0;
    socket.on('data', () => {
      const parts = pieces[answer++ % pieces.length]!;
      // Each piece once the previous one has been flushed, so most reach the client as reads of their own.
      const next = (i: number): void => {
        if (i < parts.length) socket.write(parts[i]!, () => setTimeout(next, 5, i + 1));
      };
      next(0);
    });
  });
  raw.listen(0, '127.0.0.1');
  await once(raw, 'listening');
  const target = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
  const get = (pool: OutboundDispatcher) =>
    exchange(pool, { method: 'GET', path: '/', headers: [], body: null }, BUFFERED, null, null);
  const lean = clients.lean!(target);
  const texts: string[] = [];
  for (let i = 0; i < 4; i++) texts.push(await text(await get(lean)));
  await lean.close();
  assert.deepEqual(texts, [body, body, body, body]);
  assert.equal(connections, 1, 'one connection, reused for all four answers');
  const both = await onBoth(
    async (pool) => [await text(await get(pool)), await text(await get(pool))],
    target,
  );
  raw.close();
  assert.deepEqual(both.lean, both.undici);
});

test('lean client: a header value with CR LF is refused before anything is sent (UPSTREAM_REQUEST_BUILD_ERROR)', async () => {
  const before = acceptedTotal;
  const both = await onBoth((pool) =>
    failure(
      exchange(
        pool,
        { method: 'GET', path: '/echo', headers: ['x-evil', 'a\r\nx-injected: 1'], body: null },
        BUFFERED,
        null,
        null,
      ),
    ),
  );
  assert.deepEqual(both.lean, both.undici);
  assert.deepEqual(both.lean, { code: 'UPSTREAM_REQUEST_BUILD_ERROR', retryable: false });
  // undici connects first; the lean client too, but neither writes the request.
  assert.ok(acceptedTotal - before <= 2);
});

test('lean client: a request path with a space, a control character or no leading slash is refused like undici refuses it', async () => {
  for (const path of ['/a b', '/a\u0000b', 'relative', '/caf\u20ac']) {
    const both = await onBoth((pool) =>
      failure(exchange(pool, { method: 'GET', path, headers: [], body: null }, BUFFERED, null, null)),
    );
    assert.deepEqual(both.lean, both.undici, path);
    assert.deepEqual(both.lean, { code: 'UPSTREAM_REQUEST_BUILD_ERROR', retryable: false }, path);
  }
});

test('lean client: an answer head over 16 KiB is refused as undici refuses it', async () => {
  const raw: NetServer = createNetServer((socket) => {
    socket.once('data', () =>
      socket.end(`HTTP/1.1 200 OK\r\nx-big: ${'b'.repeat(20 * 1024)}\r\ncontent-length: 2\r\n\r\nok`),
    );
  });
  raw.listen(0, '127.0.0.1');
  await once(raw, 'listening');
  const target = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
  const both = await onBoth(
    (pool) =>
      failure(exchange(pool, { method: 'GET', path: '/', headers: [], body: null }, BUFFERED, null, null)),
    target,
  );
  raw.close();
  assert.deepEqual(both.lean, both.undici);
  assert.deepEqual(both.lean, { code: 'UPSTREAM_CONNECTION_ERROR', retryable: false });
});

test('F-14: lean client: a status line below 100 (HTTP/1.1 099) fails at once as undici fails it, not at the deadline', async () => {
  const raw: NetServer = createNetServer((socket) => {
    socket.on('data', () => socket.write('HTTP/1.1 099 Weird\r\ncontent-length: 5\r\n\r\nhello'));
  });
  raw.listen(0, '127.0.0.1');
  await once(raw, 'listening');
  const target = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
  const both = await onBoth(
    (pool) =>
      failure(exchange(pool, { method: 'GET', path: '/', headers: [], body: null }, BUFFERED, null, null)),
    target,
  );
  raw.close();
  assert.deepEqual(both.lean, both.undici);
  // Waiting for a final answer would end in UPSTREAM_TIMEOUT at BUFFERED's deadline.
  assert.deepEqual(both.lean, { code: 'UPSTREAM_CONNECTION_ERROR', retryable: false });
});

test('lean client: thousands of queued requests refused before sending leave the pool working', async () => {
  const pool = clients.lean!(origin, 1);
  // A generous deadline: only how each request ends is under test, not how fast a loaded machine is.
  const limits: ExchangeLimits = { ...BUFFERED, deadlineMs: 120_000 };
  const bad = Array.from({ length: 5_000 }, () =>
    failure(
      exchange(
        pool,
        { method: 'GET', path: '/echo', headers: ['x-bad', 'a\nb'], body: null },
        limits,
        null,
        null,
      ),
    ),
  );
  const outcomes = await Promise.all(bad);
  assert.deepEqual([...new Set(outcomes.map((o) => o.code))], ['UPSTREAM_REQUEST_BUILD_ERROR']);
  const good = await exchange(
    pool,
    { method: 'GET', path: '/echo', headers: [], body: null },
    BUFFERED,
    null,
    null,
  );
  assert.equal(good.status, 200);
  await pool.close();
});

test('lean client: a refused connection is a retryable connection error', async () => {
  const closed = `http://127.0.0.1:${await freePort()}`;
  const both = await onBoth(
    (pool) =>
      failure(exchange(pool, { method: 'GET', path: '/', headers: [], body: null }, BUFFERED, null, null)),
    closed,
  );
  assert.deepEqual(both.lean, both.undici);
  assert.deepEqual(both.lean, { code: 'UPSTREAM_CONNECTION_ERROR', retryable: true });
});

test('lean client: a body cut by the target is a body read error; a silent one hits the idle timeout', async () => {
  const cut = await onBoth((pool) =>
    failure(
      exchange(pool, { method: 'GET', path: '/cut-body', headers: [], body: null }, BUFFERED, null, null),
    ),
  );
  assert.deepEqual(cut.lean, cut.undici);
  assert.deepEqual(cut.lean, { code: 'UPSTREAM_BODY_READ_ERROR', retryable: false });
  const limits: ExchangeLimits = { deadlineMs: 5_000, idleMs: 150, streaming: false };
  const stalled = await onBoth((pool) =>
    failure(
      exchange(pool, { method: 'GET', path: '/stall-body', headers: [], body: null }, limits, null, null),
    ),
  );
  assert.deepEqual(stalled.lean, stalled.undici);
  assert.deepEqual(stalled.lean, { code: 'UPSTREAM_TIMEOUT', retryable: false });
});

test('lean client: at most `connections` sockets to a target; the rest queue and are all answered', async () => {
  const pool = clients.lean!(origin, 2);
  // Sockets of earlier tests may still be closing on the origin's side: only new ones count.
  const earlier = new Set(accepted);
  const open = () => [...accepted].filter((socket) => !earlier.has(socket)).length;
  let peak = 0;
  const watch = setInterval(() => (peak = Math.max(peak, open())), 1);
  const answers = await Promise.all(
    Array.from({ length: 8 }, () =>
      exchange(pool, { method: 'GET', path: '/slow?ms=30', headers: [], body: null }, BUFFERED, null, null),
    ),
  );
  clearInterval(watch);
  assert.deepEqual(
    answers.map((r) => r.body?.toString()),
    Array.from({ length: 8 }, () => 'slow'),
  );
  assert.ok(open() <= 2 && peak <= 2, `at most 2 connections (peak ${peak})`);
  await pool.close();
});

test('lean client: close() lets a request in flight finish, then closes the connections', async () => {
  const pool = clients.lean!(origin);
  const inFlight = exchange(
    pool,
    { method: 'GET', path: '/slow?ms=100', headers: [], body: null },
    BUFFERED,
    null,
    null,
  );
  await new Promise((resolve) => setTimeout(resolve, 20));
  const closing = pool.close();
  assert.equal((await inFlight).body?.toString(), 'slow');
  await closing;
  const late = await failure(
    exchange(pool, { method: 'GET', path: '/echo', headers: [], body: null }, BUFFERED, null, null),
  );
  assert.equal(late.code, 'UPSTREAM_CONNECTION_ERROR');
});
