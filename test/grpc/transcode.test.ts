/**
 * The grpc-transcode node (docs/plugins/grpc-transcode.md): JSON over HTTP in,
 * a protobuf call of a real @grpc/grpc-js server out, the answer back as JSON;
 * gRPC errors become HTTP statuses, and a config naming an unknown service,
 * method or a broken proto fails the load with the key's path.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { freePort } from '../support/free-port.js';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { FAIL, FAIL_MESSAGE, PROTO, startEchoServer } from './echo-server.js';

let origin: Awaited<ReturnType<typeof startEchoServer>>;
let gw: RunningGateway;
const inline = readFileSync(PROTO, 'utf8');

function policy(name: string, port: number, transcode: string): string {
  return `
  - name: ${name}
    nodes:
      - { id: in, type: listener }
      - id: tc
        type: grpc-transcode
        config: ${transcode}
      - { id: up, type: upstream, config: { scheme: grpc, timeout_ms: 5000, targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: tc.in }
      - { from: tc.success, to: up.in }
      - { from: tc.invalid, to: out.in }
      - { from: up.success, to: out.in }
      - { from: up.error, to: out.in }`;
}

before(async () => {
  origin = await startEchoServer();
  const dead = await freePort();
  const file = JSON.stringify(PROTO);
  gw = await startGateway(`
routes:
  - { name: unary, match: { path: /echo }, policy: unary }
  - { name: query, match: { path: /query }, policy: query }
  - { name: stream, match: { path: /stream }, policy: stream }
  - { name: small, match: { path: /small }, policy: small }
  - { name: dead, match: { path: /dead }, policy: dead }
policies:${policy('unary', origin.port, `{ proto_file: ${file}, service: demo.Echo, method: Unary }`)}${policy(
    'query',
    origin.port,
    `{ proto: ${JSON.stringify(inline)}, service: demo.Echo, method: ServerStream, query_params: true }`,
  )}${policy('stream', origin.port, `{ proto_file: ${file}, service: demo.Echo, method: ServerStream }`)}${policy(
    'small',
    origin.port,
    `{ proto_file: ${file}, service: demo.Echo, method: ServerStream, max_response_bytes: 64 }`,
  )}${policy('dead', dead, `{ proto_file: ${file}, service: demo.Echo, method: Unary }`)}
`);
});

after(async () => {
  await gw?.stop();
  await origin?.stop();
});

async function post(
  path: string,
  body: string,
): Promise<{ status: number; json: unknown; type: string | null }> {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text) as unknown, type: res.headers.get('content-type') };
}

test('grpc-transcode: a JSON body calls the unary method and the reply comes back as JSON', async () => {
  const res = await post('/echo', JSON.stringify({ message: 'héllo json' }));
  assert.equal(res.status, 200);
  assert.equal(res.type, 'application/json');
  assert.deepEqual(res.json, { message: 'héllo json', index: 0 });
});

test('grpc-transcode: an empty body is the default request message', async () => {
  const res = await post('/echo', '');
  assert.equal(res.status, 200);
  assert.deepEqual(res.json, { message: '', index: 0 });
});

test('grpc-transcode: a server-streaming method answers a JSON array of every message', async () => {
  const res = await post('/stream', JSON.stringify({ message: 's', count: 3 }));
  assert.equal(res.status, 200);
  assert.deepEqual(res.json, [
    { message: 's-0', index: 0 },
    { message: 's-1', index: 1 },
    { message: 's-2', index: 2 },
  ]);
});

test('grpc-transcode: with query_params, a GET fills the request from the query (inline proto)', async () => {
  const res = await fetch(`${gw.url}/query?message=q&count=2`);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), [
    { message: 'q-0', index: 0 },
    { message: 'q-1', index: 1 },
  ]);
  const bad = await fetch(`${gw.url}/query?count=two`);
  assert.equal(bad.status, 400);
  assert.match(((await bad.json()) as { message: string }).message, /count/);
});

test('grpc-transcode: a gRPC NOT_FOUND is HTTP 404 with the grpc-message in the JSON', async () => {
  const res = await post('/echo', JSON.stringify({ message: FAIL }));
  assert.equal(res.status, 404);
  assert.deepEqual(res.json, {
    error: 'not_found',
    grpc_status: 5,
    grpc_code: 'NOT_FOUND',
    message: FAIL_MESSAGE,
  });
});

test('grpc-transcode: a body that is not a JSON object, or does not fit the message, is a 400', async () => {
  const notJson = await post('/echo', '{nope');
  assert.equal(notJson.status, 400);
  assert.match((notJson.json as { message: string }).message, /not JSON/);
  const array = await post('/echo', '[1]');
  assert.equal(array.status, 400);
  const misfit = await post('/echo', JSON.stringify({ message: { nested: true } }));
  assert.equal(misfit.status, 400, JSON.stringify(misfit.json));
});

test('grpc-transcode: an answer larger than max_response_bytes is a 502, not decoded', async () => {
  const res = await post('/small', JSON.stringify({ message: 'big', count: 100 }));
  assert.equal(res.status, 502);
  assert.match((res.json as { message: string }).message, /max_response_bytes/);
});

test('grpc-transcode: a dead upstream is the upstream error (502) in JSON', async () => {
  const res = await post('/dead', JSON.stringify({ message: 'x' }));
  assert.equal(res.status, 502);
  assert.equal(res.type, 'application/json');
});

async function rejectsAt(config: string, key: string, pattern: RegExp): Promise<void> {
  await assert.rejects(
    startGateway(`
routes: [{ name: r, match: { path: /x }, policy: p }]
policies:${policy('p', 1, config)}
`),
    (err: unknown) => {
      assert.ok(err instanceof ConfigRejected, String(err));
      const issue = err.issues.find((i) => i.path === `policies[0].nodes[1].config.${key}`);
      assert.ok(issue !== undefined, JSON.stringify(err.issues));
      assert.match(issue.message, pattern);
      return true;
    },
  );
}

test('grpc-transcode: an unknown service, an unknown method or a broken proto fails the load, naming the key', async () => {
  const file = JSON.stringify(PROTO);
  await rejectsAt(`{ proto_file: ${file}, service: demo.Nope, method: Unary }`, 'service', /demo\.Echo/);
  await rejectsAt(`{ proto_file: ${file}, service: demo.Echo, method: Nope }`, 'method', /Unary/);
  await rejectsAt(
    `{ proto_file: ${file}, service: demo.Echo, method: ClientStream }`,
    'method',
    /client-streaming/,
  );
  await rejectsAt(`{ proto: "syntax = \\"proto3\\"; message {", service: a.B, method: C }`, 'proto', /parse/);
  await rejectsAt(`{ proto_file: /nonexistent/x.proto, service: a.B, method: C }`, 'proto_file', /ENOENT/);
  await rejectsAt(`{ service: a.B, method: C }`, 'proto', /exactly one/);
});
