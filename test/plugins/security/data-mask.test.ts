import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { dataMask } from '../../../src/plugins/security/data-mask.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { request } from '../../support/http.js';
import { echo, startOrigin, type Origin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { LINEAR_BOUND_MS, REDOS_VALUE_RULE, redosInput, timed } from '../../support/redos.js';
import { assertConfigError, assertSchemaRejects, runNow } from '../../support/node-run.js';

test('data-mask: query parameters are removed, replaced or regex-masked; the raw query follows', () => {
  const node = instantiate(dataMask, {
    request: [
      { type: 'query', name: 'token', action: 'remove' },
      { type: 'query', name: 'name', action: 'replace', value: '***' },
      { type: 'query', name: 'card', action: 'regex', regex: '^\\d{12}(\\d{4})$', value: '************$1' },
    ],
  });
  const ctx = requestContext({ url: '/pay?token=abc&name=jack&card=4111222233334444&keep=1' });
  assert.equal(runNow(node, ctx), 'success');
  assert.equal(ctx.request.query.get('token'), undefined);
  assert.deepEqual(ctx.request.query.get('name'), ['***']);
  assert.deepEqual(ctx.request.query.get('card'), ['************4444']);
  assert.equal(ctx.request.url, '/pay?name=***&card=************4444&keep=1');
});

test('data-mask: headers are matched case-insensitively', () => {
  const node = instantiate(dataMask, {
    request: [
      { type: 'header', name: 'Authorization', action: 'regex', regex: '^(Bearer ).*$', value: '$1[masked]' },
      { type: 'header', name: 'X-Api-Key', action: 'remove' },
      { type: 'header', name: 'x-missing', action: 'replace', value: 'x' },
    ],
  });
  const ctx = requestContext({ headers: { host: 'h', authorization: 'Bearer secret', 'x-api-key': 'k' } });
  runNow(node, ctx);
  assert.equal(ctx.request.headers.authorization, 'Bearer [masked]');
  assert.equal(ctx.request.headers['x-api-key'], undefined);
  assert.equal(ctx.request.headers['x-missing'], undefined, 'absent values are not created');
});

test('data-mask: JSON body fields by dotted path (arrays by index, leading $. allowed)', () => {
  const node = instantiate(dataMask, {
    request: [
      { type: 'body', body_format: 'json', name: '$.user.password', action: 'remove' },
      { type: 'body', body_format: 'json', name: 'cards.0.number', action: 'replace', value: '****' },
      {
        type: 'body',
        body_format: 'json',
        name: 'user.email',
        action: 'regex',
        regex: '^(.)[^@]*@',
        value: '$1****@',
      },
      { type: 'body', body_format: 'json', name: 'user.age', action: 'regex', regex: '\\d', value: 'x' },
    ],
  });
  const body = { user: { password: 'p', email: 'alice@example.com', age: 30 }, cards: [{ number: '4111' }] };
  const ctx = requestContext({
    method: 'POST',
    body: Buffer.from(JSON.stringify(body)),
    headers: { host: 'h', 'content-length': '99' },
  });
  runNow(node, ctx);
  assert.deepEqual(JSON.parse(ctx.request.body!.toString()), {
    user: { email: 'a****@example.com', age: 30 },
    cards: [{ number: '****' }],
  });
  assert.equal(ctx.request.headers['content-length'], undefined);
});

test('data-mask: non-JSON, empty and oversized bodies skip the body rules untouched', () => {
  const node = instantiate(dataMask, {
    max_body_size: 10,
    request: [{ type: 'body', body_format: 'json', name: 'a', action: 'remove' }],
  });
  for (const raw of ['not json', '', '{"a":"0123456789"}']) {
    const ctx = requestContext({ method: 'POST', body: Buffer.from(raw) });
    runNow(node, ctx);
    assert.equal(ctx.request.body!.toString(), raw);
  }
});

test('data-mask: config rejections', () => {
  assertSchemaRejects(
    () => instantiate(dataMask, { request: [{ type: 'cookie', name: 'a', action: 'remove' }] }),
    'request[0].type',
  );
  assertSchemaRejects(
    () => instantiate(dataMask, { request: [{ type: 'query', action: 'remove' }] }),
    'request[0].name',
  );
  assertConfigError(
    () => instantiate(dataMask, { request: [{ type: 'query', name: 'a', action: 'replace' }] }),
    'request[0].value',
  );
  assertConfigError(
    () => instantiate(dataMask, { request: [{ type: 'query', name: 'a', action: 'regex', value: 'x' }] }),
    'request[0].regex',
  );
  assertConfigError(
    () =>
      instantiate(dataMask, {
        request: [{ type: 'query', name: 'a', action: 'regex', regex: '(', value: 'x' }],
      }),
    'request[0].regex',
    /not a valid regular expression/,
  );
  assertConfigError(
    () => instantiate(dataMask, { request: [{ type: 'body', name: 'a', action: 'remove' }] }),
    'request[0].body_format',
  );
  assertConfigError(
    () =>
      instantiate(dataMask, {
        request: [{ type: 'body', body_format: 'json', name: 'a..b', action: 'remove' }],
      }),
    'request[0].name',
  );
  assertSchemaRejects(() => instantiate(dataMask, { max_body_size: 0 }), 'max_body_size');
});

const origins: Origin[] = [];
const gateways: RunningGateway[] = [];
after(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await Promise.all(origins.map((o) => o.close()));
});

test('data-mask: end to end the upstream receives the masked request', async () => {
  const origin = await startOrigin(echo('api'));
  origins.push(origin);
  const gw = await startGateway(`
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - id: mask
        type: data-mask
        config:
          request:
            - { type: query, name: token, action: remove }
            - { type: body, body_format: json, name: password, action: replace, value: '***' }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: mask.in }
      - { from: mask.success, to: up.in }
      - { from: up.success, to: client.in }
`);
  gateways.push(gw);
  const res = await request(`${gw.url}/login?token=t&x=1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"user":"a","password":"secret"}',
  });
  assert.equal(res.status, 200);
  const seen = origin.requests[0]!;
  assert.equal(seen.url, '/login?x=1');
  assert.deepEqual(JSON.parse(seen.body.toString()), { user: 'a', password: '***' });
});

test('data-mask: M3 a nested-quantifier rule masks a crafted query value in linear time', () => {
  const node = instantiate(dataMask, {
    request: [{ type: 'query', name: 'q', action: 'regex', regex: REDOS_VALUE_RULE, value: '***' }],
  });
  const attack = requestContext({ url: `/p?q=${redosInput(30)}` });
  const run = timed(() => runNow(node, attack));
  assert.ok(run.ms < LINEAR_BOUND_MS, `took ${run.ms.toFixed(1)} ms`);
  assert.deepEqual(attack.request.query.get('q'), [redosInput(30)]);
  const hit = requestContext({ url: '/p?q=aaa' });
  runNow(node, hit);
  assert.deepEqual(hit.request.query.get('q'), ['***']);
});

test('data-mask: M3 a lookahead (the old card-number idiom) is refused at load naming the rule', () => {
  assertConfigError(
    () =>
      instantiate(dataMask, {
        request: [{ type: 'query', name: 'card', action: 'regex', regex: '\\d(?=\\d{4})', value: '*' }],
      }),
    'request[0].regex',
    /lookahead/,
  );
});
