import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileTemplate, listEnvVarNames, listVars } from '../../src/template/index.js';
import { makeContext } from './fixtures.js';

const STATIC_NAMES = [
  'uri',
  'request_uri',
  'method',
  'request_method',
  'host',
  'scheme',
  'protocol',
  'remote_addr',
  'remote_port',
  'query_string',
  'status',
  'resp_body',
  'request_body',
  'consumer_name',
  'consumer_group_id',
];
const FAMILY_NAMES = ['arg_*', 'http_*', 'cookie_*', 'post_arg_*', 'msg_*', 'sent_http_*'];

void test('E2E-VS-01: /api/vars lists every SPEC variable with the SPEC entry shape', () => {
  const { vars } = listVars();
  assert.deepEqual(
    vars.map((v) => v.name),
    [...STATIC_NAMES, ...FAMILY_NAMES],
  );
  for (const v of vars) {
    assert.equal(typeof v.description, 'string');
    assert.ok(v.description.length > 0);
    assert.match(v.example, /^\$(\{[^}]+\}|[A-Za-z_][A-Za-z0-9_]*)$/, `${v.name} example is a $-form`);
    assert.equal(typeof v.path, 'string');
    if (v.kind === 'family') {
      assert.ok(v.name.endsWith('*'));
      assert.equal(typeof v.family_source, 'string');
      assert.deepEqual(Object.keys(v).sort(), [
        'description',
        'example',
        'family_source',
        'kind',
        'name',
        'path',
      ]);
    } else {
      assert.equal(v.kind, 'static');
      assert.ok(!v.name.endsWith('*'));
      assert.deepEqual(Object.keys(v).sort(), ['description', 'example', 'kind', 'name', 'path']);
    }
  }
  assert.equal(vars.find((v) => v.name === 'http_*')?.family_source, 'request_headers');
});

void test('/api/vars: template equivalents follow the SPEC tables ("" where none exists)', () => {
  const paths = Object.fromEntries(listVars().vars.map((v) => [v.name, v.path]));
  assert.deepEqual(paths, {
    uri: 'request.path',
    request_uri: '',
    method: 'request.method',
    request_method: 'request.method',
    host: 'request.host',
    scheme: 'request.scheme',
    protocol: '',
    remote_addr: 'client.ip',
    remote_port: 'client.port',
    query_string: '',
    status: 'response.status',
    resp_body: 'response.body',
    request_body: 'request.body',
    consumer_name: 'message.consumer.name',
    consumer_group_id: 'message.consumer.group',
    'arg_*': 'request.query.<name>',
    'http_*': 'request.headers.<name>',
    'cookie_*': 'request.cookies.<name>',
    'post_arg_*': '',
    'msg_*': 'message.<key>',
    'sent_http_*': 'response.headers.<name>',
  });
});

/** What each family example names, written as its template path. */
const FAMILY_EXAMPLE_PATHS: Record<string, string> = {
  'arg_*': 'request.query.page',
  'http_*': 'request.headers.x-api-key',
  'cookie_*': 'request.cookies.session',
  'msg_*': 'message.consumer.name',
  'sent_http_*': 'response.headers.content-type',
};

void test('/api/vars: each example renders like its template equivalent (catalog and resolver agree)', () => {
  const ctx = makeContext({
    url: '/p?page=3',
    headers: { 'x-api-key': 'k', cookie: 'session=s1', 'content-type': 'application/x-www-form-urlencoded' },
    status: 200,
    responseHeaders: { 'content-type': 'text/plain' },
    responseBody: 'out',
  });
  ctx.setConsumer({ name: 'ada', group: 'admins' });
  for (const v of listVars().vars) {
    const legacy = compileTemplate(v.example, { legacy: true, phase: 'response' }).render(ctx);
    assert.notEqual(legacy, '', `${v.example} resolves on the sample context`);
    if (v.path === '') continue;
    const path = v.kind === 'family' ? FAMILY_EXAMPLE_PATHS[v.name] : v.path;
    assert.ok(path !== undefined, `${v.name} has an example path in this test`);
    assert.ok(path.startsWith(v.path.replace(/<(name|key)>$/, '')), `${path} is an instance of ${v.path}`);
    const rendered = compileTemplate(`{{${path}}}`, { phase: 'response' }).render(ctx);
    assert.equal(legacy, rendered, `${v.example} vs {{${path}}}`);
  }
});

void test('/api/vars: a fresh payload per call, so callers cannot corrupt the catalog', () => {
  const first = listVars();
  first.vars[0]!.name = 'mutated';
  assert.equal(listVars().vars[0]?.name, 'uri');
});

void test('E2E-TPL-04: /api/env-vars returns names sorted ascending and never values', () => {
  const env = { ZED: 'secret-z', alpha: 'secret-a', Beta: 'secret-b', A_1: 'x', UNSET: undefined };
  const payload = listEnvVarNames(env);
  assert.deepEqual(payload, { names: ['A_1', 'Beta', 'ZED', 'alpha'] });
  assert.ok(!JSON.stringify(payload).includes('secret'));
});

void test('/api/env-vars: defaults to the process environment', () => {
  const { names } = listEnvVarNames();
  assert.deepEqual(names, Object.keys(process.env).sort());
});
