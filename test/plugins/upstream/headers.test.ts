import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { echo, startOrigin, type Origin } from '../../support/origins.js';
import { requestContext } from '../../support/plugin-env.js';
import { closeAll, createUpstream, echoed } from './helpers.js';
import { failsWith, runOk } from '../../support/node-run.js';

const origins: Origin[] = [];
after(async () => {
  await closeAll();
  await Promise.all(origins.map((o) => o.close()));
});

async function echoOrigin(): Promise<Origin> {
  const origin = await startOrigin(echo('e'), { name: 'e' });
  origins.push(origin);
  return origin;
}

test('upstream request: method, path, query and body are forwarded; Content-Length follows the body', async () => {
  const origin = await echoOrigin();
  const { node } = createUpstream({ targets: [origin.target] });
  const ctx = requestContext({
    method: 'PUT',
    url: '/items/7?expand=a&expand=b',
    headers: { host: 'gw', 'content-type': 'text/plain', 'content-length': '5' },
    body: Buffer.from('hello'),
  });
  // A plugin rewrote the body after the client sent it; the stale length must not leak.
  ctx.request.body = Buffer.from('hello, world');
  await runOk(node, ctx);
  const seen = echoed(ctx);
  assert.equal(seen.method, 'PUT');
  assert.equal(seen.url, '/items/7?expand=a&expand=b');
  assert.equal(seen.body, 'hello, world');
  assert.equal(seen.headers['content-length'], '12');
  assert.equal(seen.headers['content-type'], 'text/plain');
});

test('upstream request: hop-by-hop headers and those Connection lists are stripped, end-to-end ones kept', async () => {
  const origin = await echoOrigin();
  const { node } = createUpstream({ targets: [origin.target] });
  const ctx = requestContext({
    headers: {
      host: 'gw',
      connection: 'keep-alive, X-Private-Hop',
      'keep-alive': 'timeout=5',
      'proxy-connection': 'keep-alive',
      te: 'trailers',
      trailer: 'x-checksum',
      'transfer-encoding': 'chunked',
      upgrade: 'h2c',
      'x-private-hop': 'secret',
      'proxy-authorization': 'Basic Zm9vOmJhcg==',
      'x-custom': ['one', 'two'],
    },
  });
  await runOk(node, ctx);
  const headers = echoed(ctx).headers;
  for (const name of [
    'keep-alive',
    'proxy-connection',
    'te',
    'trailer',
    'transfer-encoding',
    'upgrade',
    'x-private-hop',
  ]) {
    assert.equal(headers[name], undefined, `${name} was forwarded`);
  }
  assert.notEqual(headers.connection, 'keep-alive, X-Private-Hop');
  assert.equal(headers['proxy-authorization'], 'Basic Zm9vOmJhcg==');
  assert.equal(headers['x-custom'], 'one, two');
});

test('upstream request: X-Forwarded-For is appended to, X-Forwarded-Proto and -Host are set', async () => {
  const origin = await echoOrigin();
  const { node } = createUpstream({ targets: [origin.target] });
  const ctx = requestContext({
    scheme: 'https',
    host: 'shop.example',
    remoteAddress: '198.51.100.4',
    headers: {
      host: 'shop.example',
      'x-forwarded-for': '203.0.113.9',
      'x-forwarded-proto': 'gopher',
      'x-forwarded-host': 'spoofed.example',
    },
  });
  await runOk(node, ctx);
  const headers = echoed(ctx).headers;
  assert.equal(headers['x-forwarded-for'], '203.0.113.9, 198.51.100.4');
  assert.equal(headers['x-forwarded-proto'], 'https');
  assert.equal(headers['x-forwarded-host'], 'shop.example');
});

test('upstream request: X-Forwarded-For is created when absent', async () => {
  const origin = await echoOrigin();
  const { node } = createUpstream({ targets: [origin.target] });
  const ctx = requestContext({ remoteAddress: '2001:db8::1' });
  await runOk(node, ctx);
  assert.equal(echoed(ctx).headers['x-forwarded-for'], '2001:db8::1');
});

test('upstream pass_host: node (default) sends host:port of the target', async () => {
  const origin = await echoOrigin();
  const { node } = createUpstream({ targets: [origin.target] });
  const ctx = requestContext({ host: 'api.example', headers: { host: 'api.example' } });
  await runOk(node, ctx);
  assert.equal(echoed(ctx).headers.host, `127.0.0.1:${origin.port}`);
});

test('upstream pass_host: pass keeps the client Host', async () => {
  const origin = await echoOrigin();
  const { node } = createUpstream({ targets: [origin.target], pass_host: 'pass' });
  const ctx = requestContext({ host: 'api.example:8443', headers: { host: 'api.example:8443' } });
  await runOk(node, ctx);
  assert.equal(echoed(ctx).headers.host, 'api.example:8443');
});

test('upstream pass_host: rewrite sends upstream_host', async () => {
  const origin = await echoOrigin();
  const { node } = createUpstream({
    targets: [origin.target],
    pass_host: 'rewrite',
    upstream_host: 'internal.svc',
  });
  const ctx = requestContext({ host: 'api.example', headers: { host: 'api.example' } });
  await runOk(node, ctx);
  assert.equal(echoed(ctx).headers.host, 'internal.svc');
});

test('upstream response: hop-by-hop headers are stripped, Set-Cookie is always a list, status kept', async () => {
  const origin = await startOrigin((_req, res) => {
    res.writeHead(201, [
      'Connection',
      'keep-alive, X-Hop',
      'Keep-Alive',
      'timeout=5',
      'X-Hop',
      'internal',
      'Trailer',
      'X-Checksum',
      'Proxy-Connection',
      'keep-alive',
      'Set-Cookie',
      'session=abc; HttpOnly',
      'X-Kept',
      'yes',
      'Content-Type',
      'text/plain',
    ]);
    res.end('created');
  });
  origins.push(origin);
  const { node } = createUpstream({ targets: [origin.target] });
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(ctx.response.status, 201);
  const headers = ctx.response.headers;
  for (const name of [
    'connection',
    'keep-alive',
    'x-hop',
    'trailer',
    'proxy-connection',
    'transfer-encoding',
  ]) {
    assert.equal(headers[name], undefined, `${name} was relayed`);
  }
  assert.deepEqual(headers['set-cookie'], ['session=abc; HttpOnly']);
  assert.equal(headers['x-kept'], 'yes');
  assert.equal(ctx.response.body?.toString(), 'created');
});

test('upstream response: several Set-Cookie headers stay separate, names are lowercase', async () => {
  const origin = await startOrigin((_req, res) => {
    res.setHeader('Set-Cookie', ['a=1', 'b=2']);
    res.setHeader('X-Mixed-Case', 'v');
    res.end();
  });
  origins.push(origin);
  const { node } = createUpstream({ targets: [origin.target] });
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.deepEqual(ctx.response.headers['set-cookie'], ['a=1', 'b=2']);
  assert.equal(ctx.response.headers['x-mixed-case'], 'v');
});

test('upstream response: a 5xx from the backend leaves through success with its body', async () => {
  const origin = await startOrigin((_req, res) => {
    res.writeHead(502, { 'content-type': 'application/json' });
    res.end('{"backend":"broken"}');
  });
  origins.push(origin);
  const { node } = createUpstream({ targets: [origin.target] });
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(ctx.response.status, 502);
  assert.equal(ctx.response.body?.toString(), '{"backend":"broken"}');
});

test('upstream request: a header value no HTTP request can carry → 502 UPSTREAM_REQUEST_BUILD_ERROR, nothing sent', async () => {
  const origin = await echoOrigin();
  const { node } = createUpstream({ targets: [origin.target] });
  const ctx = requestContext({ headers: { host: 'gw', 'x-injected': 'a\r\nx-evil: 1' } });
  await failsWith(node, ctx, 'UPSTREAM_REQUEST_BUILD_ERROR', 502);
  assert.equal(origin.requests.length, 0);
});
