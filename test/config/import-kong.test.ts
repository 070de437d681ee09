/**
 * `switchyard import kong` (issue 34 item 4): a Kong 3.x declarative file becomes a gateway.yaml
 * that validates and answers as Kong would; the report names what was not mapped.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { parse } from 'yaml';
import { importKong } from '../../src/migrate/import-kong.js';
import { ImportReport } from '../../src/migrate/import-report.js';
import { echo, startOrigin } from '../support/origins.js';
import { fixture, request, serve, switchyard, validateFile } from '../support/import-cli.js';
import { tempDir } from '../support/temp-dir.js';

const SECRETS = [
  'alice-secret-key',
  'bob-secret-key',
  'bob-second-key',
  'alice-basic-password',
  'alice-jwt-secret-0123456789abcdef',
  'alice-hmac-secret',
];

test('import kong: the operator review Appendix B file imports with exit 0 and validates', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const source = fixture('kong-appendix-b.yaml', dir.path);
  const out = join(dir.path, 'gateway.yaml');
  const r = await switchyard(['import', 'kong', source, '-o', out]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '');
  assert.doesNotMatch(r.stderr, /not mapped/);
  assert.match(r.stderr, /every item of .* was mapped/);
  const v = await validateFile(dir.path, out);
  assert.equal(v.code, 0, v.stderr);
  const gw = parse(readFileSync(out, 'utf8')) as {
    stores: { url: string }[];
    routes: { name: string; match: Record<string, unknown>; policy: string }[];
  };
  assert.equal(gw.stores[0]?.url, 'redis://127.0.0.1:28379');
  assert.deepEqual(
    gw.routes.map((r) => [r.name, r.match]),
    [
      ['orders-route', { path: '/orders/*', host: 'api.example.com' }],
      ['users-route', { path: '/users/*', methods: ['GET', 'POST', 'OPTIONS'] }],
    ],
    'the route with a host (more criteria) is tried first, as in Kong',
  );
});

test('import kong: every listed item imports; the report names the unmapped ones (exit 1) and never a secret', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const source = fixture('kong.yaml', dir.path);
  const r = await switchyard(['import', 'kong', source]);
  assert.equal(r.code, 1, r.stderr);
  const unmapped = r.stderr.split('\n').filter((l) => l.startsWith('not mapped: '));
  assert.deepEqual(unmapped.map((l) => l.split(': ').slice(0, 2).join(': ')).sort(), [
    'not mapped: consumers[bob].keyauth_credentials[1]',
    'not mapped: plugins[12:response-ratelimiting]',
    'not mapped: routes[legacy-regex].paths',
  ]);
  assert.match(r.stderr, /3 item\(s\) of .* not mapped/);
  for (const secret of SECRETS) assert.ok(!r.stderr.includes(secret), `the report shows ${secret}`);
  // The output is written all the same (stdout here), and validates.
  const out = join(dir.path, 'gateway.yaml');
  writeFileSync(out, r.stdout);
  const v = await validateFile(dir.path, out);
  assert.equal(v.code, 0, v.stderr);
  for (const secret of SECRETS.filter((s) => s !== 'bob-second-key'))
    assert.ok(r.stdout.includes(secret), `credential ${secret} kept as given`);
});

test('import kong: unreadable or unparsable input exits 2, a usage error too', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const missing = await switchyard(['import', 'kong', join(dir.path, 'none.yaml')]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read/);
  const bad = join(dir.path, 'bad.yaml');
  writeFileSync(bad, 'services: [ { name: a\n');
  assert.equal((await switchyard(['import', 'kong', bad])).code, 2);
  writeFileSync(bad, 'services: { name: a }\n');
  const shape = await switchyard(['import', 'kong', bad]);
  assert.equal(shape.code, 2);
  assert.match(shape.stderr, /services must be a list/);
  assert.equal((await switchyard(['import', 'traefik', bad])).code, 2);
});

test("import kong: a plugin resolves with Kong's precedence (route over service over global) and identical routes share a policy", () => {
  const report = new ImportReport();
  const { gateway } = importKong(
    {
      services: [
        {
          name: 's',
          url: 'http://127.0.0.1:9/',
          routes: [
            { name: 'a', paths: ['/a'], strip_path: false },
            { name: 'b', paths: ['/b'], strip_path: false },
            {
              name: 'c',
              paths: ['/c'],
              strip_path: false,
              plugins: [{ name: 'ip-restriction', config: { deny: ['10.0.0.3'] } }],
            },
          ],
          plugins: [{ name: 'ip-restriction', config: { deny: ['10.0.0.2'] } }],
        },
        { name: 't', url: 'http://127.0.0.1:9/', routes: [{ name: 'd', paths: ['/d'] }] },
      ],
      plugins: [{ name: 'ip-restriction', config: { deny: ['10.0.0.1'] } }],
    },
    report,
  );
  const g = gateway as {
    routes: { name: string; policy: string }[];
    policies: {
      name: string;
      nodes: { id: string; type: string; config?: { deny?: string[] }; config_ref?: string }[];
    }[];
    plugin_configs?: { name: string; config: { deny?: string[] } }[];
  };
  const policyOf = (route: string) => g.routes.find((r) => r.name === route)?.policy;
  assert.equal(policyOf('a'), policyOf('b'), 'routes a and b have the same plugins: one policy');
  const deny = (route: string) => {
    const n = g.policies
      .find((p) => p.name === policyOf(route))
      ?.nodes.find((x) => x.type === 'ip-restriction');
    return n?.config?.deny ?? g.plugin_configs?.find((c) => c.name === n?.config_ref)?.config.deny;
  };
  assert.deepEqual(deny('a'), ['10.0.0.2'], 'service over global');
  assert.deepEqual(deny('c'), ['10.0.0.3'], 'route over service');
  assert.deepEqual(deny('d'), ['10.0.0.1'], 'global where nothing closer');
  assert.equal(report.unmapped.length, 0);
});

test('import kong: the imported file runs and answers as Kong would', async (t) => {
  const dir = tempDir();
  const a = await startOrigin(echo('a'));
  const b = await startOrigin(echo('b'));
  t.after(async () => {
    await Promise.all([a.close(), b.close()]);
    dir.remove();
  });
  const source = fixture('kong.yaml', dir.path, { '28101': a.port, '28102': b.port });
  const out = join(dir.path, 'gateway.yaml');
  const r = await switchyard(['import', 'kong', source, '-o', out]);
  assert.equal(r.code, 1, r.stderr);
  const { gw, base } = await serve(dir.path, out);
  t.after(() => gw.stop());

  const get = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
    request(`${base}${path}`, headers, method);
  const alice = { apikey: 'alice-secret-key' };
  const bob = { apikey: 'bob-secret-key' };

  // key-auth: refused without a key, passed with the imported consumer's key (hidden upstream).
  assert.equal((await get('/users/5')).status, 401);
  assert.equal((await get('/users/5', { apikey: 'wrong' })).status, 401);
  const ok = await get('/users/5', { ...alice, 'x-debug': '1' });
  assert.equal(ok.status, 200, ok.text);
  const seen = ok.json();
  assert.equal(seen.url, '/5', 'strip_path removed /users');
  assert.equal(seen.headers['x-consumer-username'], 'alice');
  assert.equal(seen.headers['x-consumer-custom-id'], '42');
  assert.equal(seen.headers['x-imported-from'], 'kong', 'request-transformer added the header');
  assert.equal(seen.headers['x-debug'], undefined, 'request-transformer removed the header');
  assert.equal(seen.headers.apikey, undefined, 'hide_credentials');
  assert.equal(ok.headers.get('x-served-by'), 'switchyard', 'response-transformer');
  assert.match(ok.headers.get('x-correlation-id') ?? '', /^[0-9a-f-]{36}$/, 'correlation-id echoed');

  // rate-limiting: 3 a minute for alice (the service's plugin); bob's consumer-scoped one allows 6.
  assert.equal((await get('/users/6', alice)).status, 200);
  assert.equal((await get('/users/7', alice)).status, 200);
  const limited = await get('/users/8', alice);
  assert.equal(limited.status, 429);
  for (let i = 0; i < 4; i++)
    assert.equal((await get(`/users/${i}`, bob)).status, 200, `bob's call ${i + 1}`);

  // Route matching: methods, headers, hosts, paths.
  assert.equal((await get('/users/5', bob, 'DELETE')).status, 404, 'DELETE is not a method of users-route');
  const v2 = await get('/v2/users/1', { ...bob, 'x-version': '2' });
  assert.equal(v2.status, 200, v2.text);
  assert.equal(v2.json().url, '/v2/users/1', 'strip_path: false keeps the path');
  assert.equal((await get('/v2/users/1', bob)).status, 404, 'without x-version: 2 no route matches');
  const order = await get('/orders/7', { ...alice, host: 'api.example.com' });
  assert.equal(order.status, 200, order.text);
  assert.equal(order.json().url, '/v1/orders/7', "the service's path is prepended");
  assert.equal((await get('/orders/7', alice)).status, 404, 'another host');
  assert.equal((await get('/ordersx', { ...alice, host: 'api.example.com' })).status, 404);

  // proxy-cache: the second GET is a hit.
  await get('/orders/cached', { ...alice, host: 'api.example.com' });
  const hit = await get('/orders/cached', { ...alice, host: 'api.example.com' });
  assert.equal(hit.headers.get('x-cache-status'), 'HIT');

  // CORS preflight answers 200, as Kong's does.
  const pre = await get(
    '/users/5',
    { origin: 'https://app.example.com', 'access-control-request-method': 'GET' },
    'OPTIONS',
  );
  assert.equal(pre.status, 200);
  assert.equal(pre.headers.get('access-control-allow-origin'), 'https://app.example.com');
  assert.equal(pre.headers.get('access-control-allow-credentials'), 'true');

  // acl (group admins), bot-detection, request-termination.
  assert.equal((await get('/admin/x', alice)).status, 200);
  assert.equal((await get('/admin/x', bob)).status, 403);
  assert.equal((await get('/admin/x', { ...alice, 'user-agent': 'BadBot/1.0' })).status, 403);
  const down = await get('/maintenance');
  assert.equal(down.status, 503);
  assert.deepEqual(JSON.parse(down.text), { message: 'down for maintenance' });

  // basic-auth and jwt with alice's imported credentials.
  const basic = `Basic ${Buffer.from('alice:alice-basic-password').toString('base64')}`;
  const basicOk = await get('/partner/basic', { authorization: basic });
  assert.equal(basicOk.status, 200);
  assert.equal(basicOk.json().headers.authorization, undefined, 'hide_credentials');
  assert.equal((await get('/partner/basic', { authorization: 'Basic eDp5' })).status, 401);
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer('alice-issuer')
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode('alice-jwt-secret-0123456789abcdef'));
  const jwtOk = await get('/partner/jwt', { authorization: `Bearer ${token}` });
  assert.equal(jwtOk.status, 200, jwtOk.text);
  assert.equal(jwtOk.json().headers['x-consumer-username'], 'alice');
  assert.equal((await get('/partner/jwt')).status, 401);
});

test('import kong: the worked example of docs/migrating-from-kong.md runs as written', async (t) => {
  const doc = readFileSync(new URL('../../docs/migrating-from-kong.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## Worked example'));
  const kongYaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  assert.match(kongYaml, /_format_version/);
  const dir = tempDir();
  const origin = await startOrigin(echo('backend'));
  t.after(async () => {
    await origin.close();
    dir.remove();
  });
  const source = join(dir.path, 'kong.yaml');
  writeFileSync(source, kongYaml.replaceAll('9801', String(origin.port)));
  const out = join(dir.path, 'gateway.yaml');
  const r = await switchyard(['import', 'kong', source, '-o', out]);
  assert.equal(r.code, 0, r.stderr);
  const differences = /(\d+) difference\(s\)/.exec(r.stderr)?.[1];
  assert.match(section, new RegExp(`the report lists ${differences} differences`));
  const { gw, base } = await serve(dir.path, out);
  t.after(() => gw.stop());
  assert.equal((await request(`${base}/orders/7`)).status, 401);
  const ok = await request(`${base}/orders/7`, { apikey: 'alice-key' });
  assert.equal(ok.status, 200);
  assert.equal(ok.json().url, '/v1/7');
  assert.equal(ok.json().headers['x-team'], 'orders');
  assert.equal(ok.json().headers['x-consumer-custom-id'], '42');
  assert.equal((await request(`${base}/orders/7`, { apikey: 'alice-key' })).status, 200);
  assert.equal((await request(`${base}/orders/7`, { apikey: 'alice-key' })).status, 429);
});
