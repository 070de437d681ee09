// The benchmark's minimal proxy must be a correct proxy, or beating it means nothing:
// a real upstream, the real proxy process, checked for what it forwards (never for speed).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/free-port.js';
import { request } from '../support/http.js';
import { waitFor } from '../support/wait.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

interface Seen {
  /** Lowercased names → values, as the upstream received them. */
  headers: Map<string, string[]>;
  body: string;
}

let upstream: Server;
const seen: Seen[] = [];
const proxies: ChildProcess[] = [];
// Should the file end without its after hook (a timeout), no proxy outlives it.
process.on('exit', () => proxies.forEach((child) => child.kill('SIGKILL')));

async function startProxy(upstreamPort: number): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/minimal-proxy.ts'], {
    cwd: root,
    env: { ...process.env, UPSTREAM_PORT: String(upstreamPort) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proxies.push(child);
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  await waitFor(() => /listening \d+/.test(out) || child.exitCode !== null, {
    timeoutMs: 60_000,
    what: 'the minimal proxy to listen',
  });
  const port = /listening (\d+)/.exec(out)?.[1];
  assert.ok(port !== undefined, `minimal proxy did not start: ${out}`);
  return `http://127.0.0.1:${port}`;
}

let proxy: string;

before(async () => {
  upstream = createServer((req, res) => {
    const headers = new Map<string, string[]>();
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i]!.toLowerCase();
      headers.set(name, [...(headers.get(name) ?? []), req.rawHeaders[i + 1]!]);
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ headers, body: Buffer.concat(chunks).toString() });
      if (req.url === '/hop-by-hop') {
        // No length, so node:http lets the upstream announce a Trailer (the proxy must not relay it).
        res.writeHead(200, [
          'Connection',
          'keep-alive, X-Up-Private',
          'X-Up-Private',
          'secret',
          'Keep-Alive',
          'timeout=123',
          'Proxy-Connection',
          'keep-alive',
          'Upgrade',
          'h2c',
          'Trailer',
          'x-checksum',
          'X-End-To-End',
          'kept',
        ]);
        res.end('ok');
        return;
      }
      // No length: the upstream answers chunked, and the proxy must re-frame it, not copy the coding.
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first,');
      res.end('second');
    });
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  proxy = await startProxy((upstream.address() as AddressInfo).port);
});

after(async () => {
  for (const child of proxies) {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  }
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
});

/** Sends `head` (which asks for Connection: close) verbatim and returns the whole response text. */
async function raw(head: string): Promise<string> {
  const socket = connect(Number(new URL(proxy).port), '127.0.0.1');
  await once(socket, 'connect');
  // Not end(): node:http aborts a request whose client half-closes.
  socket.write(head);
  let text = '';
  for await (const chunk of socket) text += (chunk as Buffer).toString('latin1');
  return text;
}

test(
  'minimal proxy: drops hop-by-hop request fields and the fields Connection lists, keeps the rest',
  { timeout: 60_000 },
  async () => {
    seen.length = 0;
    const response = await raw(
      'GET /plain HTTP/1.1\r\n' +
        'Host: bench.example\r\n' +
        'Connection: close, X-Private\r\n' +
        'X-Private: secret\r\n' +
        'Keep-Alive: timeout=5\r\n' +
        'Proxy-Connection: keep-alive\r\n' +
        'TE: trailers\r\n' +
        'Trailer: x-checksum\r\n' +
        'Upgrade: h2c\r\n' +
        'Expect: 100-continue\r\n' +
        'X-End-To-End: kept\r\n' +
        '\r\n',
    );
    // Expect: 100-continue was answered by node:http before the request reached the proxy's handler.
    assert.match(response, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    const headers = seen[0]?.headers;
    assert.ok(headers !== undefined);
    for (const name of ['x-private', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'expect'])
      assert.equal(headers.has(name), false, `${name} reached the upstream`);
    // undici states its own keep-alive; the client's "close, X-Private" must not travel.
    assert.deepEqual(headers.get('connection'), ['keep-alive']);
    assert.deepEqual(headers.get('x-end-to-end'), ['kept']);
    assert.deepEqual(headers.get('host'), ['bench.example']);
    // A GET without a body goes out without one.
    assert.equal(headers.has('content-length'), false);
    assert.equal(headers.has('transfer-encoding'), false);
  },
);

test(
  'minimal proxy: drops hop-by-hop response fields and the fields Connection lists',
  { timeout: 60_000 },
  async () => {
    const res = await request(`${proxy}/hop-by-hop`);
    assert.equal(res.status, 200);
    assert.equal(res.body, 'ok');
    assert.equal(res.headers['x-end-to-end'], 'kept');
    for (const name of ['x-up-private', 'proxy-connection', 'upgrade', 'trailer'])
      assert.equal(res.headers[name], undefined, `${name} reached the client`);
    // node:http states its own Connection and Keep-Alive; the upstream's must not show through.
    assert.notEqual(res.headers['keep-alive'], 'timeout=123');
    assert.doesNotMatch(String(res.headers.connection), /x-up-private/i);
  },
);

test('minimal proxy: relays a chunked upstream response whole', { timeout: 60_000 }, async () => {
  const res = await request(`${proxy}/chunked`);
  assert.equal(res.status, 200);
  assert.equal(res.body, 'first,second');
  assert.equal(res.headers['transfer-encoding'], 'chunked');
});

test('minimal proxy: streams a request body sent with a length', { timeout: 60_000 }, async () => {
  seen.length = 0;
  const res = await request(`${proxy}/upload`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: 'hello upstream',
  });
  assert.equal(res.status, 200);
  assert.equal(seen[0]?.body, 'hello upstream');
  assert.deepEqual(seen[0]?.headers.get('content-length'), ['14']);
});

test('minimal proxy: streams a chunked request body', { timeout: 60_000 }, async () => {
  seen.length = 0;
  const status = await new Promise<number>((resolve, reject) => {
    const req = httpRequest(
      `${proxy}/upload`,
      { method: 'POST', headers: { 'transfer-encoding': 'chunked' }, agent: false },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.write('part one, ');
    req.end('part two');
  });
  assert.equal(status, 200);
  assert.equal(seen[0]?.body, 'part one, part two');
  // undici frames it afresh: chunked, or with a length when the whole body had already arrived.
  const framing = ['content-length', 'transfer-encoding'].filter((name) => seen[0]?.headers.has(name));
  assert.equal(framing.length, 1, `framing headers upstream: ${framing.join(', ')}`);
});

test('minimal proxy: answers 502 when the upstream refuses the connection', { timeout: 60_000 }, async () => {
  const closed = await startProxy(await freePort());
  const res = await request(`${closed}/anything`);
  assert.equal(res.status, 502);
});
