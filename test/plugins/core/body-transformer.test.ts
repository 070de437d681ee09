import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { bodyTransformer } from '../../../src/plugins/core/body-transformer/index.js';
import { parseXml } from '../../../src/plugins/core/body-transformer/xml.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import {
  assertConfigError,
  assertSchemaRejects,
  bodyText,
  failsWith,
  runNow,
  templatedEnv,
} from '../../support/node-run.js';

test('body-transformer: request template reads the JSON body with {{body.a.b}}, arrays by index', () => {
  const node = instantiate(
    bodyTransformer,
    { request: { template: '{"who":"{{body.user.name}}","first":{{body.items.0}},"all":{{body.items}}}' } },
    templatedEnv(),
  );
  const ctx = requestContext({
    method: 'POST',
    body: Buffer.from('{"user":{"name":"ada"},"items":[3,4]}'),
    headers: { host: 'h', 'content-length': '37' },
  });
  assert.equal(runNow(node, ctx), 'success');
  assert.deepEqual(JSON.parse(ctx.request.body!.toString()), { who: 'ada', first: 3, all: [3, 4] });
  assert.equal(ctx.request.headers['content-length'], undefined);
});

test('body-transformer: {{$var}} and $var read legacy variables; gateway templates and unknown placeholders render empty', () => {
  const node = instantiate(
    bodyTransformer,
    {
      request: {
        template: '[{{$http_x_id}}] [$arg_page] [{{request.method}}] [{{nope}}] [{{body.missing}}]',
      },
    },
    templatedEnv(),
  );
  const ctx = requestContext({
    url: '/?page=2',
    headers: { host: 'h', 'x-id': 'r-1' },
    body: Buffer.from('{}'),
  });
  runNow(node, ctx);
  assert.equal(ctx.request.body!.toString(), '[r-1] [2] [] [] []');
});

test('body-transformer: an empty body renders the template with empty placeholders', () => {
  const node = instantiate(bodyTransformer, { request: { template: 'x={{body.a}}' } }, templatedEnv());
  const ctx = requestContext();
  runNow(node, ctx);
  assert.equal(ctx.request.body!.toString(), 'x=');
});

test('body-transformer: XML input — elements, repeated siblings, attributes under _attr, entities', () => {
  const node = instantiate(
    bodyTransformer,
    {
      request: {
        input_format: 'xml',
        template:
          '{"id":"{{body.order._attr.id}}","who":"{{body.order.customer}}","sku":"{{body.order.item.1.sku}}"}',
      },
    },
    templatedEnv(),
  );
  const ctx = requestContext({
    method: 'POST',
    body: Buffer.from(
      '<?xml version="1.0"?><!-- c --><order id="42"><customer>A &amp; B</customer>' +
        '<item><sku>x1</sku></item><item><sku><![CDATA[y<2>]]></sku></item></order>',
    ),
  });
  runNow(node, ctx);
  assert.deepEqual(JSON.parse(ctx.request.body!.toString()), { id: '42', who: 'A & B', sku: 'y<2>' });
  assert.deepEqual(parseXml('<a x="1">t<b/></a>'), { a: { b: '', _attr: { x: '1' }, _text: 't' } });
});

test('body-transformer: response template over a gzip body; the result is plain', () => {
  const node = instantiate(
    bodyTransformer,
    { response: { template: 'total={{body.count}}' } },
    templatedEnv(),
  );
  const ctx = requestContext();
  ctx.response.status = 200;
  ctx.response.headers = { 'content-encoding': 'gzip', 'content-length': '99' };
  ctx.response.body = gzipSync('{"count":7}');
  runNow(node, ctx);
  assert.equal(bodyText(ctx), 'total=7');
  assert.equal(ctx.response.headers['content-encoding'], undefined);
  assert.equal(ctx.response.headers['content-length'], undefined);
});

test('body-transformer: a request body that is not JSON → 400 BODY_DECODE_FAILED', async () => {
  const node = instantiate(bodyTransformer, { request: { template: '{{body.a}}' } }, templatedEnv());
  await failsWith(
    node,
    requestContext({ method: 'POST', body: Buffer.from('not json') }),
    'BODY_DECODE_FAILED',
    400,
  );
  const xml = instantiate(
    bodyTransformer,
    { request: { template: '{{body.a}}', input_format: 'xml' } },
    templatedEnv(),
  );
  await failsWith(
    xml,
    requestContext({ method: 'POST', body: Buffer.from('<a><b></a>') }),
    'BODY_DECODE_FAILED',
    400,
  );
});

test('body-transformer: a response body that cannot be decoded → 502 BODY_DECODE_FAILED', async () => {
  const node = instantiate(bodyTransformer, { response: { template: '{{body}}' } }, templatedEnv());
  const ctx = requestContext();
  ctx.response.body = Buffer.from('{broken');
  await failsWith(node, ctx, 'BODY_DECODE_FAILED', 502);
  const compressed = requestContext();
  compressed.response.body = Buffer.from('not gzip');
  compressed.response.headers['content-encoding'] = 'gzip';
  await failsWith(node, compressed, 'BODY_DECODE_FAILED', 502);
});

test('body-transformer: only a response template reads the response body (streaming inference)', () => {
  const reads = (c: object): boolean => bodyTransformer.readsResponseBody!(c);
  assert.equal(reads({ request: { template: 'x', input_format: 'json' } }), false);
  assert.equal(reads({ response: { template: 'x', input_format: 'json' } }), true);
});

test('body-transformer: config rejections', () => {
  assertConfigError(() => instantiate(bodyTransformer, {}), '', /request.*response/);
  assertConfigError(
    () => instantiate(bodyTransformer, { request: { template: 'a {{body.x' } }),
    'request.template',
    /unclosed/,
  );
  assertConfigError(
    () => instantiate(bodyTransformer, { response: { template: 'x', template_is_base64: true } }),
    'response.template_is_base64',
  );
  assertSchemaRejects(
    () => instantiate(bodyTransformer, { request: { template: 'x', input_format: 'yaml' } }),
    'request.input_format',
  );
  assertSchemaRejects(() => instantiate(bodyTransformer, { request: {} }), 'request.template');
});

test('body-transformer: L6 XML elements named constructor, toString, hasOwnProperty and __proto__ are ordinary values', () => {
  const node = instantiate(
    bodyTransformer,
    {
      request: {
        input_format: 'xml',
        template: '{"all":{{body}},"ctor":"{{body.r.constructor}}","proto":"{{body.r.__proto__}}"}',
      },
    },
    templatedEnv(),
  );
  const ctx = requestContext({
    method: 'POST',
    body: Buffer.from(
      '<r><constructor>a</constructor><toString>b</toString><hasOwnProperty>c</hasOwnProperty>' +
        '<__proto__>d</__proto__><valueOf>e</valueOf><valueOf>f</valueOf>' +
        '<x __proto__="p" constructor="q"/><t>&constructor; &amp;</t></r>',
    ),
  });
  assert.equal(runNow(node, ctx), 'success');
  const out = JSON.parse(ctx.request.body!.toString()) as { all: unknown; ctor: string; proto: string };
  assert.deepEqual(
    out.all,
    JSON.parse(
      '{"r":{"constructor":"a","toString":"b","hasOwnProperty":"c","__proto__":"d","valueOf":["e","f"],' +
        '"x":{"_attr":{"__proto__":"p","constructor":"q"}},"t":"&constructor; &"}}',
    ),
  );
  assert.equal(out.ctor, 'a');
  assert.equal(out.proto, 'd');
  const parsed = parseXml('<__proto__><polluted>yes</polluted></__proto__>');
  assert.equal(Object.getPrototypeOf(parsed), Object.prototype, 'the root is not re-prototyped');
  assert.deepEqual(Object.keys(parsed), ['__proto__']);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});
