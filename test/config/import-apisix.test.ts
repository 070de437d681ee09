/**
 * `switchyard import apisix` (issue 34 item 4): a standalone apisix.yaml becomes a gateway.yaml
 * that validates and answers as APISIX would; the report names what was not mapped.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { echo, startOrigin } from '../support/origins.js';
import { fixture, request, serve, switchyard, validateFile } from '../support/import-cli.js';
import { tempDir } from '../support/temp-dir.js';

test('import apisix: the operator review Appendix C file imports with exit 0 and validates', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const out = join(dir.path, 'gateway.yaml');
  const r = await switchyard(['import', 'apisix', fixture('apisix-appendix-c.yaml', dir.path), '-o', out]);
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /not mapped/);
  const v = await validateFile(dir.path, out);
  assert.equal(v.code, 0, v.stderr);
  const text = readFileSync(out, 'utf8');
  assert.match(text, /hash_on: http_x_user_id/);
  assert.match(text, /priority: 10/);
});

test('import apisix: routes, services, upstreams, consumer groups, plugin configs, global rules and SSL run as in APISIX', async (t) => {
  const dir = tempDir();
  const a = await startOrigin(echo('a'));
  const b = await startOrigin(echo('b'));
  t.after(async () => {
    await Promise.all([a.close(), b.close()]);
    dir.remove();
  });
  const source = fixture('apisix.yaml', dir.path, { '28101': a.port, '28102': b.port });
  const out = join(dir.path, 'gateway.yaml');
  const r = await switchyard(['import', 'apisix', source, '-o', out]);
  assert.equal(r.code, 1, r.stderr);
  const unmapped = r.stderr.split('\n').filter((l) => l.startsWith('not mapped: '));
  assert.deepEqual(
    unmapped.map((l) => l.split(': ').slice(0, 2).join(': ')),
    ['not mapped: routes[filtered].vars'],
  );
  assert.ok(
    !r.stderr.includes('alice-key') && !r.stderr.includes('BEGIN PRIVATE KEY'),
    'no secret in the report',
  );
  assert.match(r.stderr, /server_name: "api\.example\.com", cert_path: certs\/api\.example\.com-1\.crt/);
  assert.ok(
    existsSync(join(dir.path, 'certs/api.example.com-1.key')),
    'the SSL key is written beside the output',
  );
  const v = await validateFile(dir.path, out);
  assert.equal(v.code, 0, v.stderr);

  const { gw, base } = await serve(dir.path, out);
  t.after(() => gw.stop());
  const get = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
    request(`${base}${path}`, headers, method);
  // key-auth from the service, the header from the plugin config, the request id from the global rule.
  assert.equal((await get('/users/1')).status, 401);
  const ok = await get('/users/1', { apikey: 'bob-key' });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.json().headers['x-imported-from'], 'apisix');
  assert.equal(ok.json().headers['x-consumer-username'], 'bob');
  assert.ok(ok.json().headers['x-request-id'], 'global rule request-id');
  assert.ok(ok.headers.get('x-request-id'), 'the id is on the answer too');
  // limit-count: 2 on the route for bob; alice's consumer group raises it to 5.
  assert.equal((await get('/users/2', { apikey: 'bob-key' })).status, 200);
  assert.equal((await get('/users/3', { apikey: 'bob-key' })).status, 429);
  for (let i = 0; i < 4; i++) assert.equal((await get('/users/4', { apikey: 'alice-key' })).status, 200);
  // Method, host and priority matching; regex_uri rewrite.
  assert.equal((await get('/users/1', { apikey: 'bob-key' }, 'DELETE')).status, 404);
  const order = await get('/orders/7', { host: 'api.example.com' });
  assert.equal(order.status, 200, order.text);
  assert.equal(order.json().origin, 'b');
  assert.equal(order.json().url, '/v2/orders/7');
  assert.equal((await get('/orders/7')).status, 404);
  // CORS preflight answers 200 like APISIX.
  const pre = await get(
    '/users/1',
    { origin: 'https://app.example.com', 'access-control-request-method': 'GET' },
    'OPTIONS',
  );
  assert.equal(pre.status, 200);
  assert.equal(pre.headers.get('access-control-allow-origin'), 'https://app.example.com');
});

test('import apisix: the worked example of docs/migrating-from-apisix.md runs as written', async (t) => {
  const doc = readFileSync(new URL('../../docs/migrating-from-apisix.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## Worked example'));
  const source = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  assert.match(source, /#END/);
  const dir = tempDir();
  const origin = await startOrigin(echo('backend'));
  t.after(async () => {
    await origin.close();
    dir.remove();
  });
  const file = join(dir.path, 'apisix.yaml');
  writeFileSync(file, source.replaceAll('9801', String(origin.port)));
  const out = join(dir.path, 'gateway.yaml');
  const r = await switchyard(['import', 'apisix', file, '-o', out]);
  assert.equal(r.code, 0, r.stderr);
  const { gw, base } = await serve(dir.path, out);
  t.after(() => gw.stop());
  assert.equal((await request(`${base}/users/5`)).status, 401);
  const ok = await request(`${base}/users/5`, { apikey: 'alice-key' });
  assert.equal(ok.status, 200);
  assert.equal(ok.json().url, '/v2/users/5');
  assert.equal((await request(`${base}/users/5`, { apikey: 'alice-key' })).status, 200);
  assert.equal((await request(`${base}/users/5`, { apikey: 'alice-key' })).status, 429);
});
