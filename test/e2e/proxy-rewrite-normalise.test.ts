import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { spawnedConfig, startSpawned, type SpawnedConfig } from '../admin/spawned.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { startOrigin, type Origin } from '../support/origins.js';

/** security-review.md F-12: a templated proxy-rewrite path reaches the upstream normalised. */
const SYSTEM = [
  'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
  'logging: { level: warn, format: json }',
  'timeouts: { shutdown_timeout_seconds: 2 }',
  'admin: { bind: 127.0.0.1, port: @ADMIN_PORT@, username: admin, password: "correct horse" }',
  '',
].join('\n');

const policy = (name: string, rewrite: Record<string, unknown>, port: number) => `
  - name: ${name}
    nodes:
      - { id: in, type: listener }
      - { id: rw, type: proxy-rewrite, config: ${JSON.stringify(rewrite)} }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }], timeout_ms: 3000 } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: rw.in }
      - { from: rw.success, to: up.in }
      - { from: up.success, to: out.in }
      - { from: up.error, to: out.in }
`;

let origin: Origin;
let config: SpawnedConfig;
let gw: GatewayProcess;
let data: string;
before(async () => {
  origin = await startOrigin((req, res) => res.end(req.url));
  const gatewayYaml = `routes:
  - { name: inject, match: { path: /inject }, policy: inject }
  - { name: query, match: { path: /query }, policy: query }
  - { name: prefix, match: { path: /prefixed/* }, policy: prefix }
policies:${policy('inject', { uri: '/inj/{{request.query.p}}' }, origin.port)}${policy(
    'query',
    { uri: '/q?v={{request.query.p}}' },
    origin.port,
  )}${policy('prefix', { add_path_prefix: '/t/{{request.headers.x-tenant}}' }, origin.port)}`;
  config = await spawnedConfig(SYSTEM, gatewayYaml);
  gw = await startSpawned(config);
  data = `http://127.0.0.1:${config.dataPort}`;
});
after(async () => {
  await gw.stop();
  config.remove();
  await origin.close();
});

/** What the origin saw for one request through the gateway (undefined: nothing reached it). */
async function seenFor(path: string, headers: Record<string, string> = {}) {
  const count = origin.requests.length;
  const res = await fetch(data + path, { headers });
  const body = await res.text();
  const seen = origin.requests.length > count ? origin.requests.at(-1)?.url : undefined;
  return { status: res.status, body, seen };
}

test('F-12: a templated uri value never climbs out of the path (?p=..%2f..%2fadmin, ?p=../admin, %2e%2e)', async () => {
  for (const query of [
    '..%2f..%2fadmin',
    '..%2fadmin',
    '%252e%252e%252fadmin',
    '..',
    'x%2f..%2f..%2fadmin',
  ]) {
    const r = await seenFor(`/inject?p=${query}`);
    assert.equal(r.seen, undefined, `p=${query} reached the origin as ${r.seen}`);
    assert.equal(r.status, 502, `p=${query}`);
    assert.match(r.body, /UPSTREAM_REQUEST_BUILD_ERROR/);
  }
  // `.` and empty segments are normalised away, as in a request path.
  assert.equal((await seenFor('/inject?p=a%2f.%2f%2fb')).seen, '/inj/a/b?p=a%2f.%2f%2fb');
  assert.equal((await seenFor('/inject?p=ok')).seen, '/inj/ok?p=ok');
});

test('F-12: ?p=a%3fb%23c gives no raw # and does not replace the query; a literal ? still starts the query', async () => {
  const r = await seenFor('/inject?p=a%3fb%23c');
  assert.equal(r.status, 200);
  assert.equal(r.seen, '/inj/a%3Fb%23c?p=a%3fb%23c');
  assert.ok(!r.seen.includes('#'));
  // The uri's own `?` starts the query; a `#` a value renders into it is encoded.
  const q = await seenFor('/query?p=a%23b%20c');
  assert.equal(q.seen, '/q?v=a%23b%20c');
  // Templated add_path_prefix is held to the same rule.
  assert.equal((await seenFor('/prefixed/x', { 'x-tenant': 'acme' })).seen, '/t/acme/prefixed/x');
  const climb = await seenFor('/prefixed/x', { 'x-tenant': '../../admin' });
  assert.equal(climb.seen, undefined);
  assert.equal(climb.status, 502);
});
