import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { once } from 'node:events';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { request } from '../support/http.js';

const config = `
routes:
  - name: hello
    match: { path: /hello, methods: [GET, HEAD] }
    policy: mock
  - name: upload
    match: { path: /upload, methods: [POST] }
    policy: echo-body
  - name: api
    match: { path: /api/*, host: "*.example.test", headers: { x-tenant: acme } }
    policy: mock
policies:
  - name: mock
    nodes:
      - { id: in, type: listener }
      - id: m
        type: mocking
        config:
          response_status: 201
          content_type: text/plain
          response_example: "hi $uri"
          response_headers: { x-from: mock }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
  - name: echo-body
    nodes:
      - { id: in, type: listener }
      - { id: e, type: echo, config: { body: "got it" } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: e.in }
      - { from: e.success, to: out.in }
`;

let gw: RunningGateway;

before(async () => {
  gw = await startGateway(config, {
    systemYaml: 'listener: { bind: 127.0.0.1, port: 0, max_request_body_bytes: 1024 }\n',
  });
});

after(async () => {
  await gw.stop();
});

/** Sends raw bytes and returns everything the server answers before closing or `idleMs`. */
async function raw(bytes: string): Promise<string> {
  const socket = connect(gw.port, '127.0.0.1');
  await once(socket, 'connect');
  socket.end(bytes);
  let out = '';
  socket.on('data', (d: Buffer) => (out += d.toString()));
  await once(socket, 'close');
  return out;
}

test('data plane: a routed request runs its policy and gets the prepared response', async () => {
  const res = await fetch(`${gw.url}/hello`);
  assert.equal(res.status, 201);
  assert.equal(res.headers.get('x-from'), 'mock');
  assert.equal(res.headers.get('content-type'), 'text/plain');
  assert.equal(res.headers.get('x-mock-by'), 'switchyard-mocking');
  assert.equal(await res.text(), 'hi /hello');
});

test('data plane: HEAD gets the headers with the body length but no body', async () => {
  const res = await fetch(`${gw.url}/hello`, { method: 'HEAD' });
  assert.equal(res.status, 201);
  assert.equal(res.headers.get('content-length'), String('hi /hello'.length));
  assert.equal(await res.text(), '');
});

test('data plane: an unmatched path gets the COMPAT 404 JSON body (E2E-DP-02)', async () => {
  const res = await fetch(`${gw.url}/nope`);
  assert.equal(res.status, 404);
  assert.equal(res.headers.get('content-type'), 'application/json');
  assert.deepEqual(await res.json(), { error: 'not_found', message: 'No route matched' });
});

test('data plane: a method the route does not allow is a 404 (E2E-DP-03)', async () => {
  const res = await fetch(`${gw.url}/hello`, { method: 'DELETE' });
  assert.equal(res.status, 404);
});

test('data plane: host wildcard and header criteria must all hold', async () => {
  const ok = await request(`${gw.url}/api/x`, {
    headers: { host: 'a.example.test:8080', 'x-tenant': 'acme' },
  });
  assert.equal(ok.status, 201);
  const wrongHeader = await request(`${gw.url}/api/x`, {
    headers: { host: 'a.example.test', 'x-tenant': 'other' },
  });
  assert.equal(wrongHeader.status, 404);
  const wrongHost = await request(`${gw.url}/api/x`, {
    headers: { host: 'example.test', 'x-tenant': 'acme' },
  });
  assert.equal(wrongHost.status, 404);
});

test('data plane: a request body within the limit is accepted', async () => {
  const res = await fetch(`${gw.url}/upload`, { method: 'POST', body: 'x'.repeat(1024) });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'got it');
});

test('data plane: a body over listener.max_request_body_bytes gets 413', async () => {
  const res = await fetch(`${gw.url}/upload`, { method: 'POST', body: 'x'.repeat(1025) });
  assert.equal(res.status, 413);
  assert.equal(((await res.json()) as { error: string }).error, 'payload_too_large');
});

test('data plane: a chunked body over the limit gets 413 too', async () => {
  const answer = await raw(
    `POST /upload HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n800\r\n${'y'.repeat(2048)}\r\n0\r\n\r\n`,
  );
  assert.match(answer, /^HTTP\/1\.1 413 /);
});

test('data plane: a malformed request line gets 400, and the server keeps serving', async () => {
  const answer = await raw('THIS IS NOT HTTP\r\n\r\n');
  assert.match(answer, /^HTTP\/1\.1 400 /);
  const res = await fetch(`${gw.url}/hello`);
  assert.equal(res.status, 201);
});

test('data plane: an absolute-form request target is routed by its path', async () => {
  const answer = await raw(`GET http://gw.test/hello HTTP/1.1\r\nhost: gw.test\r\nconnection: close\r\n\r\n`);
  assert.match(answer, /^HTTP\/1\.1 201 /);
  assert.match(answer, /hi \/hello$/);
});

test('data plane: an asterisk request target is a 400, not a crash', async () => {
  const answer = await raw('OPTIONS * HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
  assert.match(answer, /^HTTP\/1\.1 400 /);
});

test('metrics: per-node executions and run time are exported at scrape time', async () => {
  await fetch(`${gw.url}/hello`);
  await fetch(`${gw.url}/hello`);
  const { body } = await gw.gateway.metrics.render();
  const runs = /gateway_node_executions_total\{policy="mock",node_id="m",type="mocking"\} (\d+)/.exec(body);
  assert.ok(runs, body);
  assert.ok(Number(runs[1]) >= 2);
  assert.match(
    body,
    /gateway_node_duration_seconds_total\{policy="mock",node_id="m",type="mocking"\} [\d.e-]+/,
  );
});
