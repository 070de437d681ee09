import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Context } from '../../src/core/context.js';
import { compileTemplate, type CompileTemplateOptions } from '../../src/template/index.js';
import { makeContext, type ContextSeed } from './fixtures.js';

interface Row {
  /** The template source. */
  src: string;
  expected: string;
  /** How many load-time warnings compiling `src` must produce (default 0). */
  warnings?: number;
  legacy?: boolean;
  phase?: 'request' | 'response';
  seed?: ContextSeed;
  setup?: (ctx: Context) => void;
  env?: NodeJS.ProcessEnv;
}

const ENV: NodeJS.ProcessEnv = { GREETING: 'hello', EMPTY: '', 'DOTTED.NAME': 'dots' };

function check(row: Row): void {
  const warnings: string[] = [];
  const options: CompileTemplateOptions = {
    legacy: row.legacy ?? false,
    phase: row.phase ?? 'response',
    where: { policy: 'p1', node: 'n1', key: 'headers.set.x' },
    warn: (message) => warnings.push(message),
    env: row.env ?? ENV,
  };
  const template = compileTemplate(row.src, options);
  const ctx = makeContext({ status: 201, ...row.seed });
  row.setup?.(ctx);
  assert.equal(template.render(ctx), row.expected);
  assert.equal(warnings.length, row.warnings ?? 0, `warnings: ${JSON.stringify(warnings)}`);
  for (const w of warnings) assert.match(w, /policy "p1", node "n1", key "headers\.set\.x"/);
}

function table(title: string, rows: readonly Row[]): void {
  void describe(title, () => {
    for (const row of rows) {
      const flags = `${row.legacy === true ? ' [legacy]' : ''}${row.phase === 'request' ? ' [request phase]' : ''}`;
      void test(`${JSON.stringify(row.src)}${flags} renders ${JSON.stringify(row.expected)}`, () =>
        check(row));
    }
  });
}

const withConsumer = (ctx: Context): void => ctx.setConsumer({ name: 'ada', group: 'admins' });

table('template paths (SPEC "Template syntax" table)', [
  { src: '{{request.method}}', expected: 'POST' },
  { src: '{{request.path}}', expected: '/orders/42' },
  { src: '{{request.host}}', expected: 'api.example.com' },
  { src: '{{request.scheme}}', expected: 'https' },
  { src: '{{request.scheme}}', expected: 'http', seed: { scheme: 'http' } },
  { src: '{{request.body}}', expected: 'user=ada&role=admin' },
  { src: '{{request.body}}', expected: '\uFFFDok', seed: { body: Buffer.from([0xff, 0x6f, 0x6b]) } },
  { src: '{{request.headers.x-api-key}}', expected: 'k-123' },
  { src: '{{request.headers.X-Api-KEY}}', expected: 'k-123' },
  { src: '{{request.headers.accept}}', expected: 'application/json' },
  { src: '{{request.query.a}}', expected: '1' },
  { src: '{{request.query.b}}', expected: '2' },
  { src: '{{request.cookies.theme}}', expected: 'dark' },
  { src: '{{response.status}}', expected: '201' },
  { src: '{{response.body}}', expected: 'done', seed: { responseBody: 'done' } },
  {
    src: '{{response.headers.content-type}}',
    expected: 'text/html',
    seed: { responseHeaders: { 'content-type': 'text/html' } },
  },
  {
    src: '{{response.headers.Content-Type}}',
    expected: 'text/html',
    seed: { responseHeaders: { 'content-type': 'text/html' } },
  },
  {
    src: '{{response.headers.set-cookie}}',
    expected: 'a=1',
    seed: { responseHeaders: { 'set-cookie': ['a=1', 'b=2'] } },
  },
  { src: '{{message.tenant}}', expected: 't1', seed: { message: { tenant: 't1' } } },
  {
    src: '{{message.a.b}}',
    expected: 'dotted key',
    seed: { message: { 'a.b': 'dotted key', a: { b: 'nested' } } },
  },
  { src: '{{message.consumer.name}}', expected: 'ada', setup: withConsumer },
  { src: '{{message.consumer.group}}', expected: 'admins', setup: withConsumer },
  { src: '{{message.count}}', expected: '42', seed: { message: { count: 42 } } },
  { src: '{{message.flag}}', expected: 'true', seed: { message: { flag: true } } },
  { src: '{{message.obj}}', expected: '{"x":[1,"y"]}', seed: { message: { obj: { x: [1, 'y'] } } } },
  { src: '{{message.list}}', expected: '["a","b"]', seed: { message: { list: ['a', 'b'] } } },
  { src: '{{client.ip}}', expected: '203.0.113.7' },
  { src: '{{client.port}}', expected: '51234' },
  { src: '{{env.GREETING}}', expected: 'hello' },
  { src: '{{env.EMPTY}}', expected: '' },
  { src: '{{env.DOTTED.NAME}}', expected: 'dots' },
]);

table('SPEC resolution rules 1–9', [
  // 1. env is parse-time; an unset name behaves as rule 4.
  { src: 'x={{env.GREETING}}', expected: 'x=hello' },
  { src: 'x={{env.NOT_SET_ANYWHERE}}', expected: 'x={{env.NOT_SET_ANYWHERE}}', warnings: 1 },
  { src: '{{env.}}', expected: '{{env.}}', warnings: 1 },
  { src: '{{env}}', expected: '{{env}}', warnings: 1 },
  // 3. unknown first segment: literal, silent.
  { src: '{{body.x}}', expected: '{{body.x}}' },
  { src: '{{mustache}}', expected: '{{mustache}}' },
  { src: '{{ $1 }}', expected: '{{ $1 }}' },
  { src: '{{ $1 }}', expected: '{{ $1 }}', legacy: true },
  { src: '{{error.code}}', expected: '{{error.code}}' },
  { src: '{{Request.method}}', expected: '{{Request.method}}' },
  { src: '{{}}', expected: '{{}}' },
  { src: '{{constructor.name}}', expected: '{{constructor.name}}' },
  // 4. known namespace, malformed or unknown leaf: literal plus one warning.
  { src: '{{request.header.x-api-key}}', expected: '{{request.header.x-api-key}}', warnings: 1 },
  { src: '{{request.headers}}', expected: '{{request.headers}}', warnings: 1 },
  { src: '{{request.headers.}}', expected: '{{request.headers.}}', warnings: 1 },
  { src: '{{request.headers.x api}}', expected: '{{request.headers.x api}}', warnings: 1 },
  { src: '{{request.method.upper}}', expected: '{{request.method.upper}}', warnings: 1 },
  { src: '{{request}}', expected: '{{request}}', warnings: 1 },
  { src: '{{request.protocol}}', expected: '{{request.protocol}}', warnings: 1 },
  { src: '{{response.code}}', expected: '{{response.code}}', warnings: 1 },
  { src: '{{response.query.a}}', expected: '{{response.query.a}}', warnings: 1 },
  { src: '{{client.mac}}', expected: '{{client.mac}}', warnings: 1 },
  { src: '{{client.toString}}', expected: '{{client.toString}}', warnings: 1 },
  { src: '{{message}}', expected: '{{message}}', warnings: 1 },
  { src: '{{message.}}', expected: '{{message.}}', warnings: 1 },
  { src: '{{request.cookies.a b}}', expected: '{{request.cookies.a b}}', warnings: 1 },
  { src: '{{client.mac}} and {{client.mac}}', expected: '{{client.mac}} and {{client.mac}}', warnings: 2 },
  // 5. unclosed `{{`: literal to the end, silently.
  { src: 'a {{request.method', expected: 'a {{request.method' },
  { src: '{{request.method}} {{request.path', expected: 'POST {{request.path' },
  { src: '{{', expected: '{{' },
  { src: 'x }} {{request.host}} {{', expected: 'x }} api.example.com {{' },
  // 6. absent subject: empty string, silent.
  { src: '[{{request.headers.x-missing}}]', expected: '[]' },
  { src: '[{{request.query.nope}}]', expected: '[]' },
  { src: '[{{request.cookies.nope}}]', expected: '[]', seed: { headers: {} } },
  { src: '[{{request.body}}]', expected: '[]', seed: { body: null } },
  { src: '[{{response.body}}]', expected: '[]' },
  { src: '[{{response.headers.x-nope}}]', expected: '[]' },
  { src: '[{{message.nope}}]', expected: '[]' },
  { src: '[{{message.toString}}]', expected: '[]' },
  { src: '[{{message.gone}}]', expected: '[]', seed: { message: { gone: null } } },
  { src: '[{{message.consumer.name}}]', expected: '[]' },
  { src: '[{{client.port}}]', expected: '[]', seed: { remotePort: 0 } },
  // 7. response.status: 0 in a request-phase field, the status otherwise (0 included).
  { src: '{{response.status}}', expected: '0', phase: 'request' },
  { src: '{{response.status}}', expected: '201', phase: 'response' },
  { src: '{{response.status}}', expected: '0', phase: 'response', seed: { status: 0 } },
  // 8/9. any templated field substitutes a recognized reference; optional whitespace.
  { src: 'm={{request.method}}', expected: 'm=POST' },
  { src: 'm={{ request.method }}', expected: 'm=POST' },
  { src: 'm={{\trequest.method\n}}', expected: 'm=POST' },
  { src: '{{request.method}}{{request.path}}', expected: 'POST/orders/42' },
  // No nesting: the innermost `{{` opens the reference.
  { src: '{{ {{request.method}} }}', expected: '{{ POST }}' },
  { src: '{{{request.method}}}', expected: '{POST}' },
  { src: '{"m":"{{request.method}}"}', expected: '{"m":"POST"}' },
  { src: 'no references at all', expected: 'no references at all' },
  { src: '', expected: '' },
]);

table('legacy static variables (SPEC "Static variables")', [
  { src: '$uri', expected: '/orders/42', legacy: true },
  { src: '$request_uri', expected: '/orders/42?b=2&a=1&a=3', legacy: true },
  { src: '$request_uri', expected: '/plain', legacy: true, seed: { url: '/plain' } },
  { src: '$method', expected: 'POST', legacy: true },
  { src: '$request_method', expected: 'POST', legacy: true },
  { src: '$host', expected: 'api.example.com', legacy: true },
  { src: '$scheme', expected: 'https', legacy: true },
  { src: '$protocol', expected: 'http2', legacy: true },
  { src: '$remote_addr', expected: '203.0.113.7', legacy: true },
  { src: '$remote_port', expected: '51234', legacy: true },
  { src: '$query_string', expected: 'a=1&a=3&b=2', legacy: true },
  { src: '[$query_string]', expected: '[]', legacy: true, seed: { url: '/' } },
  { src: '$query_string', expected: 'a=x+y&z=%26', legacy: true, seed: { url: '/?z=%26&a=x%20y' } },
  { src: '$status', expected: '201', legacy: true },
  { src: '$status', expected: '0', legacy: true, phase: 'request' },
  { src: '$status', expected: '0', legacy: true, seed: { status: 0 } },
  { src: '$resp_body', expected: 'done', legacy: true, seed: { responseBody: 'done' } },
  { src: '$request_body', expected: 'user=ada&role=admin', legacy: true },
  { src: '$consumer_name', expected: 'ada', legacy: true, setup: withConsumer },
  { src: '$consumer_group_id', expected: 'admins', legacy: true, setup: withConsumer },
  { src: '[$consumer_name]', expected: '[]', legacy: true },
]);

table('legacy family variables (SPEC "Family variables")', [
  { src: '$arg_a', expected: '1', legacy: true },
  { src: '$arg_b', expected: '2', legacy: true },
  { src: '[$arg_nope]', expected: '[]', legacy: true },
  { src: '[$arg_]', expected: '[]', legacy: true },
  { src: '$http_x_api_key', expected: 'k-123', legacy: true },
  { src: '$http_X_API_Key', expected: 'k-123', legacy: true },
  { src: '${http_x-api-key}', expected: 'k-123', legacy: true },
  { src: '$http_accept', expected: 'application/json', legacy: true },
  { src: '[$http_x_missing]', expected: '[]', legacy: true },
  { src: '$cookie_session', expected: 'abc', legacy: true },
  { src: '[$cookie_nope]', expected: '[]', legacy: true },
  { src: '$post_arg_user', expected: 'ada', legacy: true },
  { src: '$post_arg_role', expected: 'admin', legacy: true },
  {
    src: '[$post_arg_user]',
    expected: '[]',
    legacy: true,
    seed: { headers: { 'content-type': 'application/json' }, body: Buffer.from('user=ada') },
  },
  { src: '$msg_tenant', expected: 't1', legacy: true, seed: { message: { tenant: 't1' } } },
  {
    src: '${msg_key.with.dots}',
    expected: 'dotted',
    legacy: true,
    seed: { message: { 'key.with.dots': 'dotted' } },
  },
  {
    src: '$msg_key.with.dots',
    expected: 'k.with.dots',
    legacy: true,
    seed: { message: { key: 'k', 'key.with.dots': 'dotted' } },
  },
  { src: '${msg_consumer.name}', expected: 'ada', legacy: true, setup: withConsumer },
  { src: '$msg_n', expected: '7', legacy: true, seed: { message: { n: 7 } } },
  { src: '$msg_o', expected: '{"a":1}', legacy: true, seed: { message: { o: { a: 1 } } } },
  {
    src: '$sent_http_content_type',
    expected: 'text/html',
    legacy: true,
    seed: { responseHeaders: { 'content-type': 'text/html' } },
  },
  {
    src: '$sent_http_X_Trace',
    expected: 't-1',
    legacy: true,
    seed: { responseHeaders: { 'x-trace': ['t-1', 't-2'] } },
  },
]);

table('legacy syntax rules', [
  // Maximal run of [A-Za-z0-9_]; `${…}` for anything else.
  { src: '$host.example', expected: 'api.example.com.example', legacy: true },
  { src: '$host-$scheme', expected: 'api.example.com-https', legacy: true },
  { src: '[$hostname]', expected: '[]', legacy: true },
  { src: '${host}name', expected: 'api.example.comname', legacy: true },
  { src: '$uri$method', expected: '/orders/42POST', legacy: true },
  // Unknown variables are empty, silently.
  { src: 'a$nope.b', expected: 'a.b', legacy: true },
  { src: 'a${no such}b', expected: 'ab', legacy: true },
  // A dollar not followed by a name start stays literal.
  { src: 'cost: 5$', expected: 'cost: 5$', legacy: true },
  { src: '$5 off', expected: '$5 off', legacy: true },
  { src: '$-x $ x $$', expected: '$-x $ x $$', legacy: true },
  { src: '$$host', expected: '$api.example.com', legacy: true },
  { src: '${}', expected: '${}', legacy: true },
  { src: '${ host}', expected: '${ host}', legacy: true },
  { src: '${host', expected: '${host', legacy: true },
  { src: '${{request.method}}', expected: '$POST', legacy: true },
  // Only literal text outside `{{…}}`; the two syntaxes mix.
  { src: '$method {{request.path}} $uri', expected: 'POST /orders/42 /orders/42', legacy: true },
  { src: '{{mustache $host}}', expected: '{{mustache $host}}', legacy: true },
  { src: '{{client.mac}}$host', expected: '{{client.mac}}api.example.com', legacy: true, warnings: 1 },
  { src: '{{ $host', expected: '{{ api.example.com', legacy: true },
  // Outside the fifteen legacy fields `$` is plain text (E2E-TPL-01 equivalent).
  { src: '{{request.method}} $keep', expected: 'POST $keep', legacy: false },
  { src: '$host ${msg_x}', expected: '$host ${msg_x}', legacy: false },
]);

table('rendered values are never re-read', [
  {
    src: '{{request.headers.x}}',
    expected: '{{request.headers.x}} $host ${uri}',
    legacy: true,
    seed: { headers: { x: '{{request.headers.x}} $host ${uri}' } },
  },
  {
    src: '$http_x',
    expected: '{{request.method}} $host',
    legacy: true,
    seed: { headers: { x: '{{request.method}} $host' } },
  },
  {
    src: '{{env.TRICK}}',
    expected: '$host {{request.method}}',
    legacy: true,
    env: { TRICK: '$host {{request.method}}' },
  },
]);

void test('rule 1: env is read at parse time, later changes need a recompile', () => {
  const env: NodeJS.ProcessEnv = { GREETING: 'before' };
  const template = compileTemplate('{{env.GREETING}}', { env });
  env.GREETING = 'after';
  assert.equal(template.render(makeContext()), 'before');
  assert.equal(template.isStatic, true);
  assert.equal(compileTemplate('{{env.GREETING}}', { env }).render(makeContext()), 'after');
});

void test('rule 1: env defaults to process.env', () => {
  process.env.SWITCHYARD_TEMPLATE_TEST = 'from-process';
  try {
    assert.equal(compileTemplate('{{env.SWITCHYARD_TEMPLATE_TEST}}').render(makeContext()), 'from-process');
  } finally {
    delete process.env.SWITCHYARD_TEMPLATE_TEST;
  }
});

void test('rule 2: one compiled template resolves against each request', () => {
  const template = compileTemplate('{{request.method}} {{request.headers.x-api-key}}');
  assert.equal(template.render(makeContext()), 'POST k-123');
  assert.equal(
    template.render(makeContext({ method: 'GET', headers: { 'x-api-key': 'other' } })),
    'GET other',
  );
  assert.equal(template.isStatic, false);
});

void test('rule 7: phase defaults to request', () => {
  assert.equal(compileTemplate('{{response.status}}').render(makeContext({ status: 404 })), '0');
  assert.equal(compileTemplate('$status', { legacy: true }).render(makeContext({ status: 404 })), '0');
});

void test('the template keeps its source; a string without references is static', () => {
  const template = compileTemplate('plain {{mustache}} $host');
  assert.equal(template.source, 'plain {{mustache}} $host');
  assert.equal(template.isStatic, true);
  assert.equal(template.render(makeContext()), 'plain {{mustache}} $host');
});

void test('a message value set after compile is seen; bigints render, a cyclic value renders empty', () => {
  const template = compileTemplate('{{message.late}}|{{message.cyclic}}');
  const ctx = makeContext();
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  ctx.message.late = 'yes';
  ctx.message.cyclic = cyclic;
  assert.equal(template.render(ctx), 'yes|');
  ctx.message.late = { n: 10n };
  assert.equal(template.render(ctx), '{"n":"10"}|');
});
