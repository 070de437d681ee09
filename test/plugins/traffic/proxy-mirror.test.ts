import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { after, test } from 'node:test';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import type { NodeInstance } from '../../../src/core/plugin.js';
import { mirrorsInFlight, proxyMirror } from '../../../src/plugins/traffic/proxy-mirror.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { request } from '../../support/http.js';
import { startOrigin, type Origin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { waitFor } from '../../support/wait.js';
import { assertConfigError, assertSchemaRejects, runNow, templatedEnv } from '../../support/node-run.js';

const origins: Origin[] = [];
const nodes: NodeInstance[] = [];
const gateways: RunningGateway[] = [];
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const n of nodes) await n.close?.();
  await Promise.all(gateways.map((g) => g.stop()));
  await Promise.all(origins.map((o) => o.close()));
  for (const c of cleanups) await c();
  await closeAllPools();
});

async function shadow(): Promise<Origin> {
  const o = await startOrigin((_req, res) => {
    res.writeHead(204);
    res.end();
  });
  origins.push(o);
  return o;
}

function mirror(config: Record<string, unknown>, vars: NodeJS.ProcessEnv = {}): NodeInstance<'success'> {
  const node = instantiate(proxyMirror, config, templatedEnv({}, vars));
  nodes.push(node);
  return node;
}

/** A TCP port that accepts connections and never answers. */
async function blackHole(): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return (server.address() as { port: number }).port;
}

test('proxy-mirror: copies method, path, query, headers and body to the shadow host; leaves on success at once', async () => {
  const target = await shadow();
  const node = mirror({ host: `http://127.0.0.1:${target.port}` });
  const ctx = requestContext({
    method: 'POST',
    url: '/orders?id=7',
    headers: { host: 'api.test', authorization: 'Bearer t', cookie: 's=1' },
    body: Buffer.from('{"a":1}'),
  });
  assert.equal(runNow(node, ctx), 'success');
  await target.received(1);
  const seen = target.requests[0]!;
  assert.equal(seen.method, 'POST');
  assert.equal(seen.url, '/orders?id=7');
  assert.equal(seen.headers.authorization, 'Bearer t');
  assert.equal(seen.headers.cookie, 's=1');
  assert.equal(seen.headers.host, 'api.test');
  assert.equal(seen.body.toString(), '{"a":1}');
  assert.equal(ctx.response.status, 0, 'the main response is untouched');
});

test('proxy-mirror: path overrides the mirrored path, the query is still appended', async () => {
  const target = await shadow();
  runNow(
    mirror({ host: `http://127.0.0.1:${target.port}`, path: '/capture' }),
    requestContext({ url: '/x?q=1' }),
  );
  await target.received(1);
  assert.equal(target.requests[0]!.url, '/capture?q=1');
});

test('proxy-mirror: sample_ratio 0 mirrors nothing; about half at 0.5', async () => {
  const target = await shadow();
  const none = mirror({ host: `http://127.0.0.1:${target.port}`, sample_ratio: 0 });
  for (let i = 0; i < 50; i++) runNow(none, requestContext());
  const half = mirror({ host: `http://127.0.0.1:${target.port}`, sample_ratio: 0.5, path: '/half' });
  for (let batch = 0; batch < 8; batch++) {
    for (let i = 0; i < 50; i++) runNow(half, requestContext());
    await waitFor(() => mirrorsInFlight() === 0, { what: 'mirrors to finish' });
  }
  const mirrored = target.requests.length;
  assert.ok(target.requests.every((r) => r.url === '/half'));
  assert.ok(mirrored > 140 && mirrored < 260, `mirrored ${mirrored} of 400`);
});

test('proxy-mirror: host may come from {{env.NAME}}; request data is refused (SSRF)', async () => {
  const target = await shadow();
  const node = mirror({ host: '{{env.SHADOW}}' }, { SHADOW: `http://127.0.0.1:${target.port}` });
  runNow(node, requestContext());
  await target.received(1);
  assertConfigError(
    () => instantiate(proxyMirror, { host: 'http://{{request.headers.x-target}}' }, templatedEnv()),
    'host',
    /static/,
  );
  assertConfigError(
    () => instantiate(proxyMirror, { host: 'http://s', path: '/{{request.path}}' }, templatedEnv()),
    'path',
    /static/,
  );
});

test('proxy-mirror: config rejections', () => {
  assertSchemaRejects(() => instantiate(proxyMirror, {}), 'host');
  assertConfigError(() => instantiate(proxyMirror, { host: 'shadow:8080' }, templatedEnv()), 'host');
  assertConfigError(() => instantiate(proxyMirror, { host: 'ftp://shadow' }, templatedEnv()), 'host');
  assertConfigError(
    () => instantiate(proxyMirror, { host: 'http://shadow/path' }, templatedEnv()),
    'host',
    /path/,
  );
  assertSchemaRejects(
    () => instantiate(proxyMirror, { host: 'http://s', sample_ratio: 1.5 }),
    'sample_ratio',
  );
  assertSchemaRejects(() => instantiate(proxyMirror, { host: 'http://s', path: 'no-slash' }), 'path');
});

test('proxy-mirror: a dead or silent mirror never fails or delays the main request', async () => {
  const silent = await blackHole();
  await waitFor(() => mirrorsInFlight() === 0, { what: 'earlier copies' });
  const node = mirror({ host: `http://127.0.0.1:${silent}`, timeout_ms: 300 });
  for (let i = 0; i < 200; i++) assert.equal(runNow(node, requestContext()), 'success');
  assert.equal(mirrorsInFlight(), 128, 'copies past the in-flight cap are dropped, not queued');
  await waitFor(() => mirrorsInFlight() === 0, { what: 'mirror deadlines', timeoutMs: 5000 });
  const dead = mirror({ host: 'http://127.0.0.1:1' });
  assert.equal(runNow(dead, requestContext()), 'success');
  await waitFor(() => mirrorsInFlight() === 0, { what: 'refused mirror' });
});

// Not a timing assertion: the mirror's 60 s timeout dwarfs any load the suite can put on the
// machine, so a request that waited for the mirror would take a minute. The added latency is
// printed as a diagnostic.
test('proxy-mirror: a mirror that never answers does not hold up the answer (its copies stay in flight)', async (t) => {
  const backend = await startOrigin((_req, res) => res.end('ok'));
  origins.push(backend);
  const silent = await blackHole();
  const policy = (name: string, withMirror: boolean) => `
  - name: ${name}
    nodes:
      - { id: listener, type: listener }
${withMirror ? `      - { id: mirror, type: proxy-mirror, config: { host: "http://127.0.0.1:${silent}", timeout_ms: 60000 } }` : ''}
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${backend.port} }] } }
      - { id: client, type: client }
    edges:
${withMirror ? '      - { from: listener.out, to: mirror.in }\n      - { from: mirror.success, to: up.in }' : '      - { from: listener.out, to: up.in }'}
      - { from: up.success, to: client.in }
`;
  const gw = await startGateway(`
routes:
  - { name: plain, match: { path: /plain }, policy: plain }
  - { name: mirrored, match: { path: /mirrored }, policy: mirrored }
policies:${policy('plain', false)}${policy('mirrored', true)}`);
  gateways.push(gw);
  const time = async (path: string): Promise<number> => {
    const started = performance.now();
    const res = await request(`${gw.url}${path}`);
    assert.equal(res.status, 200);
    return performance.now() - started;
  };
  for (let i = 0; i < 10; i++) {
    await time('/plain');
    await time('/mirrored');
  }
  // Paired and order-alternated, so load from elsewhere hits both sides of each pair alike.
  const added: number[] = [];
  for (let i = 0; i < 100; i++) {
    const plainFirst = i % 2 === 0;
    const a = await time(plainFirst ? '/plain' : '/mirrored');
    const b = await time(plainFirst ? '/mirrored' : '/plain');
    added.push(plainFirst ? b - a : a - b);
  }
  const sorted = [...added].sort((x, y) => x - y);
  const median = sorted[sorted.length >> 1]!;
  const worst = sorted.at(-1)!;
  t.diagnostic(`added latency: median ${median.toFixed(3)} ms, worst ${worst.toFixed(1)} ms`);
  assert.ok(worst < 30_000, `a mirrored request waited ${worst.toFixed(0)} ms, as if for the mirror`);
  assert.ok(mirrorsInFlight() > 0, 'the silent mirror really holds its copies');
});
