import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Context } from '../../src/core/context.js';
import { diffSnapshots } from '../../src/debug/diff.js';
import {
  BUILTIN_REDACT_HEADERS,
  BUILTIN_REDACT_MESSAGE_SUBSTRINGS,
  BUILTIN_REDACT_QUERY_PARAMS,
  createRedaction,
  REDACTED,
} from '../../src/debug/redaction.js';
import { captureSnapshot, type CaptureOptions } from '../../src/debug/snapshot.js';

const noExtras = { redact_headers: [], redact_query_params: [], redact_message_keys: [] };

function options(overrides: Partial<CaptureOptions> = {}): CaptureOptions {
  return { captureBodies: false, maxBodyBytes: 8192, redaction: createRedaction(noExtras), ...overrides };
}

function context(
  init: { url?: string; headers?: Record<string, string | string[]>; body?: string } = {},
): Context {
  return new Context(
    {
      method: 'GET',
      url: init.url ?? '/',
      host: 'h',
      scheme: 'http',
      protocol: 'http1',
      headers: init.headers ?? {},
      remoteAddress: '10.1.2.3',
      remotePort: 4567,
      body: init.body === undefined ? null : Buffer.from(init.body),
    },
    () => new AbortController().signal,
  );
}

test('redaction: every built-in header is redacted on the request and the response', () => {
  const headers = Object.fromEntries(BUILTIN_REDACT_HEADERS.map((h) => [h, `secret-${h}`]));
  const ctx = context({ headers: { ...headers, accept: 'text/plain' } });
  ctx.response.headers = { ...headers, 'content-type': 'text/plain' };
  const snap = captureSnapshot(ctx, options());
  for (const name of BUILTIN_REDACT_HEADERS) {
    assert.deepEqual(snap.request.headers[name], [REDACTED], `request ${name}`);
    assert.deepEqual(snap.response.headers[name], [REDACTED], `response ${name}`);
  }
  assert.deepEqual(snap.request.headers['accept'], ['text/plain']);
  assert.deepEqual(snap.response.headers['content-type'], ['text/plain']);
  assert.ok(!JSON.stringify(snap).includes('secret-'));
  assert.equal(BUILTIN_REDACT_HEADERS.length, 12);
});

test('redaction: a repeated secret header keeps its arity', () => {
  const snap = captureSnapshot(context({ headers: { cookie: ['a=1', 'b=2'] } }), options());
  assert.deepEqual(snap.request.headers['cookie'], [REDACTED, REDACTED]);
});

test('redaction: every built-in query parameter is redacted, case-insensitively', () => {
  const query = BUILTIN_REDACT_QUERY_PARAMS.map((q, i) => `${i % 2 === 0 ? q : q.toUpperCase()}=s3cret${i}`);
  const snap = captureSnapshot(context({ url: `/x?${query.join('&')}&page=2` }), options());
  for (const [i, name] of BUILTIN_REDACT_QUERY_PARAMS.entries()) {
    const key = i % 2 === 0 ? name : name.toUpperCase();
    assert.deepEqual(snap.request.query_params[key], [REDACTED], key);
  }
  assert.deepEqual(snap.request.query_params['page'], ['2']);
  assert.ok(!JSON.stringify(snap).includes('s3cret'));
  assert.equal(BUILTIN_REDACT_QUERY_PARAMS.length, 9);
});

test('redaction: message keys containing any built-in substring are redacted', () => {
  const ctx = context();
  for (const s of BUILTIN_REDACT_MESSAGE_SUBSTRINGS) {
    ctx.message[`my_${s}`] = `leak-${s}`;
    ctx.message[`${s.toUpperCase()}.value`] = { nested: `leak-${s}` };
  }
  ctx.message['consumer.key_id'] = 'alice-key';
  ctx.message['user_id'] = 'alice';
  const snap = captureSnapshot(ctx, options());
  for (const s of BUILTIN_REDACT_MESSAGE_SUBSTRINGS) {
    assert.equal(snap.message[`my_${s}`], REDACTED);
    assert.equal(snap.message[`${s.toUpperCase()}.value`], REDACTED);
  }
  assert.equal(snap.message['consumer.key_id'], 'alice-key', 'a bare "key" is not a secret');
  assert.equal(snap.message['user_id'], 'alice');
  assert.ok(!JSON.stringify(snap).includes('leak-'));
});

test('redaction: configured names add to the built-ins', () => {
  const redaction = createRedaction({
    redact_headers: ['X-Tenant-Secret'],
    redact_query_params: ['Sig'],
    redact_message_keys: ['tenant.ssn'],
  });
  const ctx = context({ url: '/?sig=abc&code=1', headers: { 'x-tenant-secret': 'v', authorization: 'b' } });
  ctx.message['tenant.ssn'] = '123';
  ctx.message['tenant.name'] = 'acme';
  const snap = captureSnapshot(ctx, options({ redaction }));
  assert.deepEqual(snap.request.headers['x-tenant-secret'], [REDACTED]);
  assert.deepEqual(snap.request.headers['authorization'], [REDACTED]);
  assert.deepEqual(snap.request.query_params['sig'], [REDACTED]);
  assert.deepEqual(snap.request.query_params['code'], [REDACTED]);
  assert.equal(snap.message['tenant.ssn'], REDACTED);
  assert.equal(snap.message['tenant.name'], 'acme');
  assert.ok(redaction.describe().headers.includes('x-tenant-secret'));
});

test('snapshot: the request part carries COMPAT §4.4 fields and a copy of the message', () => {
  const ctx = context({ url: '/p?a=1&a=2' });
  ctx.message['list'] = [1, 2];
  const snap = captureSnapshot(ctx, options());
  (ctx.message['list'] as number[]).push(3);
  assert.deepEqual(snap.message['list'], [1, 2], 'later in-place changes do not reach the snapshot');
  assert.equal(snap.request.remote_addr, '10.1.2.3:4567');
  assert.equal(snap.request.protocol, 'http1');
  assert.deepEqual(snap.request.query_params, { a: ['1', '2'] });
});

test('bodies: only the length without capture_bodies', () => {
  const snap = captureSnapshot(context({ body: 'hello' }), options());
  assert.deepEqual(snap.request.body, { len: 5 });
  assert.deepEqual(snap.response.body, { len: 0 });
});

test('bodies: text with capture_bodies, truncated at max_body_bytes', () => {
  const snap = captureSnapshot(
    context({ body: 'hello world' }),
    options({ captureBodies: true, maxBodyBytes: 5 }),
  );
  assert.deepEqual(snap.request.body, { len: 11, text: 'hello', truncated: true });
  const whole = captureSnapshot(context({ body: 'hi' }), options({ captureBodies: true }));
  assert.deepEqual(whole.request.body, { len: 2, text: 'hi' });
});

test('bodies: a cut inside a multibyte character keeps the valid prefix; binary shows no text', () => {
  const cut = captureSnapshot(context({ body: 'aé' }), options({ captureBodies: true, maxBodyBytes: 2 }));
  assert.deepEqual(cut.request.body, { len: 3, text: 'a', truncated: true });
  const ctx = context();
  ctx.request.body = Buffer.from([0xff, 0xfe, 0x00, 0x41]);
  assert.deepEqual(captureSnapshot(ctx, options({ captureBodies: true })).request.body, {
    len: 4,
    binary: true,
  });
});

test('bodies: an identical body after the previous snapshot is marked unchanged', () => {
  const ctx = context({ body: 'same' });
  const opts = options({ captureBodies: true });
  const previous = { request: Buffer.from('same'), response: null };
  assert.deepEqual(captureSnapshot(ctx, opts, previous).request.body, { len: 4, unchanged: true });
  assert.deepEqual(
    captureSnapshot(ctx, opts, { request: Buffer.from('diff'), response: null }).request.body,
    {
      len: 4,
      text: 'same',
    },
  );
});

test('bodies: a streamed response is recorded as streamed and never read', () => {
  const ctx = context();
  ctx.response.stream = { destroy() {} } as never;
  assert.deepEqual(captureSnapshot(ctx, options({ captureBodies: true })).response.body, {
    len: 0,
    streamed: true,
  });
});

test('changes: added, modified and removed with before and after', () => {
  const opts = options();
  const ctx = context({ url: '/a?page=1', headers: { 'x-keep': '1', 'x-drop': 'old' } });
  ctx.message['gone'] = 'bye';
  ctx.message['n'] = 1;
  const before = captureSnapshot(ctx, opts);
  ctx.request.path = '/b';
  ctx.request.headers['x-keep'] = '2';
  delete ctx.request.headers['x-drop'];
  ctx.request.headers['x-new'] = ['a', 'b'];
  ctx.request.rawQuery = 'page=2';
  delete ctx.message['gone'];
  ctx.message['n'] = 2;
  ctx.message['tenant'] = { id: 7 };
  ctx.response.json(403, { error: 'no' });
  ctx.errors.push({ node_id: 'auth', code: 'DENIED', message: 'nope', metadata: {} });
  const after = captureSnapshot(ctx, opts);
  assert.deepEqual(diffSnapshots(before, after), [
    { path: 'request.path', kind: 'modified', before: '/a', after: '/b' },
    { path: 'request.headers.x-keep', kind: 'modified', before: '1', after: '2' },
    { path: 'request.headers.x-new', kind: 'added', after: 'a, b' },
    { path: 'request.headers.x-drop', kind: 'removed', before: 'old' },
    { path: 'request.query_params.page', kind: 'modified', before: '1', after: '2' },
    { path: 'response.status_code', kind: 'modified', before: '0', after: '403' },
    { path: 'response.headers.content-type', kind: 'added', after: 'application/json' },
    { path: 'response.body', kind: 'modified', before: '0 bytes', after: '14 bytes' },
    { path: 'message.n', kind: 'modified', before: '1', after: '2' },
    { path: 'message.tenant', kind: 'added', after: '{"id":7}' },
    { path: 'message.gone', kind: 'removed', before: 'bye' },
    { path: 'errors[0]', kind: 'added', after: 'DENIED: nope' },
  ]);
  assert.deepEqual(diffSnapshots(after, after), []);
});

test('changes: with captured bodies a same-length rewrite still shows', () => {
  const opts = options({ captureBodies: true });
  const ctx = context({ body: 'aaaa' });
  const before = captureSnapshot(ctx, opts);
  const previous = { request: ctx.request.body, response: null };
  ctx.request.body = Buffer.from('bbbb');
  const after = captureSnapshot(ctx, opts, previous);
  assert.deepEqual(diffSnapshots(before, after), [
    { path: 'request.body', kind: 'modified', before: '4 bytes', after: '4 bytes' },
  ]);
  const same = captureSnapshot(ctx, opts, { request: ctx.request.body, response: null });
  assert.deepEqual(diffSnapshots(after, same), []);
});
