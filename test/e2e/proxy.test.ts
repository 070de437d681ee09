/** End-to-end proxying through the real data plane: the shipped policy shape against real local origins. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { freePort } from '../support/free-port.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let origin: Server;
let originPort: number;
let gw: RunningGateway;
let deadPort: number;
const seen: Seen[] = [];
/** Resolves the streaming origin's second chunk when the test says so. */
let releaseStream: () => void = () => undefined;

before(async () => {
  origin = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      });
      if (req.url === '/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: first\n\n');
        releaseStream = () => res.end('data: last\n\n');
        return;
      }
      if (req.url === '/slow') {
        setTimeout(() => res.end('late'), 2000).unref();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-powered-by': 'origin', 'x-origin': 'yes' });
      res.end(JSON.stringify({ path: req.url }));
    });
  });
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  originPort = (origin.address() as AddressInfo).port;
  deadPort = await freePort();
  gw = await startGateway(`
routes:
  - { name: api, match: { path: /api/* }, policy: api }
  - { name: dead, match: { path: /dead/* }, policy: dead }
  - { name: tight, match: { path: /tight/* }, policy: tight }
  - { name: pre, match: { path: /pre/* }, policy: pre }
policies:
  - name: pre
    nodes:
      - { id: in, type: listener }
      - { id: tag, type: echo, config: { headers: { x-pre: yes, x-origin: from-gateway } } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${originPort} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: tag.in }
      - { from: tag.success, to: up.in }
      - { from: up.success, to: out.in }
${policy('api', originPort)}
${policy('dead', deadPort)}
${policy('tight', originPort, 300)}
`);
});

after(() => {
  origin.closeAllConnections();
  origin.close();
});

const policy = (name: string, port: number, timeoutMs = 5000) => `
  - name: ${name}
    error_handler: error-handler
    nodes:
      - { id: listener, type: listener }
      - { id: rewrite-request, type: proxy-rewrite, config: { phase: request, strip_path_prefix: /${name} } }
      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }], timeout_ms: ${timeoutMs} } }
      - { id: rewrite-response, type: proxy-rewrite, config: { phase: response, remove_headers: [x-powered-by] } }
      - id: error-handler
        type: error-handler
        config: { status_code: 502, body_template: '{"error": "{{error.code}}", "message": "{{error.message}}"}' }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: rewrite-request.in }
      - { from: rewrite-request.success, to: backend.in }
      - { from: backend.success, to: rewrite-response.in }
      - { from: rewrite-response.success, to: client.in }
      - { from: backend.error, to: error-handler.in }
      - { from: error-handler.success, to: client.in }
`;

after(async () => {
  await gw.stop();
});

test('proxy: GET /api/hello reaches the upstream as /hello (E2E-DP-01)', async () => {
  const res = await fetch(`${gw.url}/api/hello?x=1`);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { path: '/hello?x=1' });
  assert.equal(res.headers.get('x-origin'), 'yes');
  assert.equal(res.headers.get('x-powered-by'), null, 'response-phase proxy-rewrite removed the header');
  const last = seen.at(-1);
  assert.equal(last?.url, '/hello?x=1');
  assert.equal(last?.headers['x-forwarded-for'], '127.0.0.1');
  assert.equal(last?.headers['x-forwarded-proto'], 'http');
});

test('proxy: POST body and method reach the upstream (E2E-DP-04)', async () => {
  const res = await fetch(`${gw.url}/api/items`, { method: 'POST', body: '{"name":"widget"}' });
  assert.equal(res.status, 200);
  const last = seen.at(-1);
  assert.equal(last?.method, 'POST');
  assert.equal(last?.body, '{"name":"widget"}');
});

test('proxy: a dead upstream becomes the error-handler 502 JSON (E2E-DP-08)', async () => {
  const res = await fetch(`${gw.url}/dead/x`);
  assert.equal(res.status, 502);
  const body = (await res.json()) as { error: string; message: string };
  assert.equal(body.error, 'UPSTREAM_CONNECTION_ERROR');
  assert.ok(body.message.length > 0);
});

test('proxy: a slow upstream past timeout_ms is an UPSTREAM_TIMEOUT through the error handler', async () => {
  const res = await fetch(`${gw.url}/tight/slow`);
  assert.equal(res.status, 502);
  assert.equal(((await res.json()) as { error: string }).error, 'UPSTREAM_TIMEOUT');
});

test('proxy: a streaming origin reaches the client chunk by chunk (E2E-STREAM-01)', async () => {
  const res = await fetch(`${gw.url}/api/stream`);
  assert.equal(res.status, 200);
  const reader = (res.body as ReadableStream<Uint8Array> | null)?.getReader();
  assert.ok(reader);
  const first = await reader.read();
  assert.match(new TextDecoder().decode(first.value), /data: first/);
  // The origin has not finished: it only ends when released, after the client saw the first event.
  releaseStream();
  let rest = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    rest += new TextDecoder().decode(value);
  }
  assert.match(rest, /data: last/);
});

test('proxy: response headers set before the upstream survive unless the backend sets them too', async () => {
  const res = await fetch(`${gw.url}/pre/x`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-pre'), 'yes');
  assert.equal(res.headers.get('x-origin'), 'yes');
});
