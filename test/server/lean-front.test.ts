/**
 * Behaviour of the lean HTTP/1.1 front (listener.http1_server: lean) that the
 * differential test cannot show with one request per connection: ordering of
 * pipelined answers behind a slow one, keep-alive idle close, streamed
 * answers, and a client leaving mid-request.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { waitFor } from '../support/wait.js';

let origin: Server;
let gateway: RunningGateway;
const big = Buffer.alloc(300 * 1024, 'z');

before(async () => {
  origin = createServer((req, res) => {
    req.resume();
    const url = req.url ?? '';
    if (url === '/slow') {
      setTimeout(() => res.end('slow'), 300);
      return;
    }
    if (url === '/big') {
      // No content-length: the gateway relays it as a stream, chunked to the client.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.write(big.subarray(0, 1000));
      setTimeout(() => res.end(big.subarray(1000)), 20);
      return;
    }
    res.end(`fast ${url}`);
  });
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  const port = (origin.address() as AddressInfo).port;
  gateway = await startGateway(
    `
routes:
  - { name: all, match: { path: /* }, policy: proxy }
policies:
  - name: proxy
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`,
    {
      systemYaml:
        'listener: { bind: 127.0.0.1, port: 0, http1_server: lean }\n' +
        'timeouts: { shutdown_timeout_seconds: 2, idle_seconds: 1 }\n',
    },
  );
});

after(async () => {
  await gateway.stop();
  origin.close();
});

async function open(): Promise<{ socket: Socket; text: () => string; closed: () => boolean }> {
  const socket = connect(gateway.port, '127.0.0.1');
  await once(socket, 'connect');
  let data = '';
  let closed = false;
  socket.on('data', (c: Buffer) => (data += c.toString('latin1')));
  socket.on('close', () => (closed = true));
  return { socket, text: () => data, closed: () => closed };
}

test('lean front: pipelined answers come back in request order even when the first is the slowest', async () => {
  const c = await open();
  c.socket.write(
    'GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n',
  );
  await waitFor(() => c.text().includes('fast /b'), { timeoutMs: 10_000, what: 'three answers' });
  const order = ['slow', 'fast /a', 'fast /b'].map((body) => c.text().indexOf(body));
  assert.ok(order[0]! < order[1]! && order[1]! < order[2]!, `answers out of order:\n${c.text()}`);
  assert.equal(c.closed(), false);
  c.socket.destroy();
});

test('lean front: an idle keep-alive connection is closed after timeouts.idle_seconds', async () => {
  const c = await open();
  c.socket.write('GET /a HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitFor(() => c.text().includes('fast /a'), { what: 'the answer' });
  assert.match(c.text(), /Keep-Alive: timeout=1/);
  await waitFor(c.closed, { timeoutMs: 10_000, what: 'the idle close' });
});

test('lean front: a streamed answer without a length is relayed chunked, whole, and the connection stays usable', async () => {
  const c = await open();
  c.socket.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitFor(() => c.text().includes('\r\n0\r\n\r\n'), { timeoutMs: 10_000, what: 'the last chunk' });
  assert.match(c.text(), /Transfer-Encoding: chunked/);
  const body = c.text().slice(c.text().indexOf('\r\n\r\n') + 4);
  let size = 0;
  for (let at = 0; ;) {
    const eol = body.indexOf('\r\n', at);
    const n = parseInt(body.slice(at, eol), 16);
    if (n === 0) break;
    size += n;
    at = eol + 2 + n + 2;
  }
  assert.equal(size, big.length);
  c.socket.write('GET /after HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitFor(() => c.text().includes('fast /after'), { what: 'the next answer' });
  c.socket.destroy();
});

test('lean front: HTTP/1.0 gets a close-delimited streamed answer', async () => {
  const c = await open();
  c.socket.write('GET /big HTTP/1.0\r\n\r\n');
  await waitFor(c.closed, { timeoutMs: 10_000, what: 'the close that ends the body' });
  assert.doesNotMatch(c.text(), /Transfer-Encoding/i);
  assert.equal(c.text().length - (c.text().indexOf('\r\n\r\n') + 4), big.length);
});

test('lean front: a client that leaves with its body half sent does not hold the connection slot', async () => {
  const c = await open();
  c.socket.write('POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nhalf');
  c.socket.destroy();
  const res = await fetch(`${gateway.url}/ok`);
  assert.equal(await res.text(), 'fast /ok');
});
