import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../support/http.js';
import {
  ORIGIN,
  startDebug,
  TRACE_ID,
  TRIGGER,
  type DebugHarness,
  type TraceBody,
  type TraceList,
} from './harness.js';

let off: DebugHarness;
let tuned: DebugHarness;
let unstored: DebugHarness;

before(async () => {
  [off, tuned, unstored] = await Promise.all([
    startDebug('enabled: false'),
    startDebug(
      [
        'enabled: true',
        'sandbox: false',
        'trace_all: true',
        'capture_bodies: true',
        'max_body_bytes: 8',
        'max_steps: 2',
        'trigger_header: X-Reference-Debug',
        'redact_headers: [x-tenant-secret]',
        'redact_query_params: [sig]',
      ].join(', '),
    ),
    startDebug('enabled: true, max_traces: 0'),
  ]);
});
after(() => Promise.all([off.stop(), tuned.stop(), unstored.stop()]));

test('debug off: the config still answers; traces and the sandbox answer 404', async () => {
  const config = await off.json('GET', '/api/debug/config');
  assert.equal(config.status, 200);
  assert.equal(config.body['enabled'], false);
  assert.equal(config.body['trigger_header'], TRIGGER);
  for (const [method, path] of [
    ['GET', '/api/debug/traces'],
    ['DELETE', '/api/debug/traces'],
    ['GET', '/api/debug/traces/any'],
    ['POST', '/api/debug/sandbox'],
  ] as const) {
    const res = await off.json(method, path, method === 'POST' ? { policy: 'echo-policy' } : undefined);
    assert.equal(res.status, 404, `${method} ${path}`);
    assert.deepEqual(res.body, { error: 'not_found' });
  }
});

test('debug off: the trigger header does nothing and the data plane has no tap', async () => {
  assert.equal(off.gateway.debug.tap, undefined);
  const res = await request(`${off.data}/api/hello`, { headers: { [TRIGGER]: '1' } });
  assert.equal(res.status, 200);
  assert.equal(res.headers[TRACE_ID], undefined);
  assert.equal(res.headers[ORIGIN], undefined);
  const missing = await request(`${off.data}/nowhere`, { headers: { [TRIGGER]: '1' } });
  assert.equal(missing.status, 404);
  assert.equal(missing.headers[TRACE_ID], undefined);
  assert.equal(off.gateway.debug.store.size, 0);
});

test('trace_all: every request is traced silently; the trigger header still gets the id', async () => {
  await tuned.json('DELETE', '/api/debug/traces');
  const silent = await request(`${tuned.data}/api/quiet`);
  assert.equal(silent.headers[TRACE_ID], undefined, 'no header tells an untriggered client about debug mode');
  assert.equal(silent.headers[ORIGIN], undefined);
  const unrouted = await request(`${tuned.data}/nowhere`);
  assert.equal(unrouted.headers[TRACE_ID], undefined);
  const asked = await request(`${tuned.data}/api/loud`, { headers: { 'x-reference-debug': 'yes' } });
  assert.equal(
    typeof asked.headers[TRACE_ID],
    'string',
    'the configured trigger header is matched lowercased',
  );
  const { body } = await tuned.json<TraceList>('GET', '/api/debug/traces');
  assert.deepEqual(
    body.traces.map((t) => t.path),
    ['/api/loud', '/nowhere', '/api/quiet'],
  );
});

test('capture_bodies: text is truncated at max_body_bytes and unchanged bodies are marked', async () => {
  const res = await request(`${tuned.data}/api/echo?sig=s1&page=1`, {
    method: 'POST',
    headers: { 'x-reference-debug': '1', 'x-tenant-secret': 'hush', 'content-type': 'text/plain' },
    body: 'hello world payload',
  });
  const trace = (await tuned.json<TraceBody>('GET', `/api/debug/traces/${res.headers[TRACE_ID] as string}`))
    .body;
  assert.equal(trace.initial.request.body.text, 'hello wo');
  assert.equal(trace.initial.request.body.truncated, true);
  assert.equal(trace.initial.request.body.len, 19);
  assert.deepEqual(trace.steps[0]?.after.request.body, { len: 19, unchanged: true });
  assert.deepEqual(trace.initial.request.headers['x-tenant-secret'], ['<redacted>']);
  assert.deepEqual(trace.initial.request.query_params['sig'], ['<redacted>']);
  assert.deepEqual(trace.initial.request.query_params['page'], ['1']);
  const summary = (await tuned.json<TraceList>('GET', '/api/debug/traces?limit=1')).body.traces[0];
  assert.equal((summary as unknown as { captured_bodies: boolean }).captured_bodies, true);
});

test('max_steps: later nodes are not recorded and a note says so', async () => {
  const res = await request(`${tuned.data}/api/steps`, { headers: { 'x-reference-debug': '1' } });
  assert.equal(res.status, 200);
  const trace = (await tuned.json<TraceBody>('GET', `/api/debug/traces/${res.headers[TRACE_ID] as string}`))
    .body;
  assert.deepEqual(
    trace.steps.map((s) => s.node_id),
    ['cors', 'strip-prefix'],
  );
  assert.deepEqual(trace.notes, ['step limit of 2 reached; later nodes are not recorded']);
  assert.deepEqual(
    trace.response_origin,
    { node_id: 'echo-backend', port: 'success' },
    'tracked past the limit',
  );
});

test('sandbox: false keeps tracing but answers 404 to sandbox runs', async () => {
  assert.equal((await tuned.json('GET', '/api/debug/traces')).status, 200);
  const res = await tuned.json('POST', '/api/debug/sandbox', { policy: 'echo-policy' });
  assert.equal(res.status, 404);
});

test('max_traces 0: requests are traced but nothing is kept', async () => {
  const res = await request(`${unstored.data}/api/hello`, { headers: { [TRIGGER]: '1' } });
  const id = res.headers[TRACE_ID];
  assert.equal(typeof id, 'string');
  assert.equal((await unstored.json('GET', `/api/debug/traces/${id as string}`)).status, 404);
  const { body } = await unstored.json<TraceList>('GET', '/api/debug/traces');
  assert.deepEqual(body.traces, []);
  assert.equal(body.retention.max_traces, 0);
  const sandbox = await unstored.json<{ stored_trace_id: string }>('POST', '/api/debug/sandbox', {
    nodes: [{ id: 'c', type: 'cors' }],
  });
  assert.equal(sandbox.status, 200);
  assert.equal(typeof sandbox.body.stored_trace_id, 'string');
});
