import { after, before, beforeEach, test } from 'node:test';
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

let h: DebugHarness;

before(async () => {
  h = await startDebug('enabled: true, max_traces: 5');
});
after(() => h.stop());
beforeEach(async () => {
  assert.equal((await h.json('DELETE', '/api/debug/traces')).status, 200);
});

const traced = (
  path: string,
  headers: Record<string, string> = {},
  init: { method?: string; body?: string } = {},
) => request(`${h.data}${path}`, { ...init, headers: { [TRIGGER]: '1', ...headers } });

async function traceOf(res: { headers: Record<string, string | string[] | undefined> }): Promise<TraceBody> {
  const id = res.headers[TRACE_ID];
  assert.equal(typeof id, 'string', 'a traced response carries the trace id');
  const got = await h.json<TraceBody>('GET', `/api/debug/traces/${id as string}`);
  assert.equal(got.status, 200);
  return got.body;
}

test('E2E-DEBUG-01: the debug endpoints need admin credentials', async () => {
  for (const [method, path] of [
    ['GET', '/api/debug/config'],
    ['GET', '/api/debug/traces'],
    ['DELETE', '/api/debug/traces'],
    ['GET', '/api/debug/traces/x'],
    ['POST', '/api/debug/sandbox'],
  ] as const) {
    const res = await fetch(`${h.url}${path}`, { method });
    assert.equal(res.status, 401, `${method} ${path}`);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Basic realm=/);
  }
});

test('E2E-DEBUG-02: the config endpoint reports the effective settings', async () => {
  const { status, body } = await h.json('GET', '/api/debug/config');
  assert.equal(status, 200);
  assert.equal(body['enabled'], true);
  assert.equal(body['sandbox'], true);
  assert.equal(body['trigger_header'], TRIGGER);
  assert.equal(body['capture_bodies'], false);
  assert.equal(body['trace_all'], false);
  assert.equal(body['max_traces'], 5);
  assert.equal(body['max_steps'], 200);
  assert.equal(body['max_body_bytes'], 8192);
  assert.equal(body['trace_id_header'], TRACE_ID);
  const redaction = body['redaction'] as { headers: string[] };
  assert.ok(redaction.headers.includes('authorization'));
});

test('E2E-DEBUG-03: a request without the trigger header is not traced', async () => {
  const res = await request(`${h.data}/api/hello`);
  assert.equal(res.status, 200);
  assert.equal(res.headers[TRACE_ID], undefined);
  assert.equal(res.headers[ORIGIN], undefined);
  const { body } = await h.json<TraceList>('GET', '/api/debug/traces');
  assert.deepEqual(body.traces, []);
});

test('E2E-DEBUG-04: the trigger header traces the request without changing its answer', async () => {
  const plain = await request(`${h.data}/api/hello`);
  const res = await traced('/api/hello', { [TRIGGER]: '0' });
  assert.equal(res.status, plain.status);
  const echoed = JSON.parse(res.body) as { url: string; headers: Record<string, string> };
  assert.equal(echoed.url, (JSON.parse(plain.body) as { url: string }).url);
  assert.equal(echoed.headers[TRIGGER], '0', 'the trigger header reaches the upstream');
  const id = res.headers[TRACE_ID] as string;
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const { body } = await h.json<TraceList>('GET', '/api/debug/traces');
  assert.equal(body.traces.length, 1);
  const [summary] = body.traces;
  assert.equal(summary?.id, id);
  assert.equal(summary?.route, 'echo-api');
  assert.equal(summary?.policy, 'echo-policy');
  assert.equal(summary?.source, 'request');
  assert.equal(summary?.status, 200);
  assert.equal(summary?.step_count, 4);
});

test('E2E-DEBUG-05: steps follow the graph and attribute each change to its node', async () => {
  const trace = await traceOf(await traced('/api/hello'));
  assert.deepEqual(
    trace.steps.map((s) => s.node_id),
    ['cors', 'strip-prefix', 'echo-backend', 'client'],
  );
  assert.deepEqual(
    trace.steps.map((s) => s.edge),
    ['success', 'success', 'success', 'terminal'],
  );
  assert.equal(trace.steps[0]?.node_type, 'cors');
  assert.equal(trace.steps[0]?.next_node_id, 'strip-prefix');
  const rewrite = trace.steps[1];
  assert.deepEqual(rewrite?.changes, [
    { path: 'request.path', kind: 'modified', before: '/api/hello', after: '/hello' },
  ]);
  assert.equal(rewrite?.after.request.path, '/hello');
  assert.equal(trace.initial.request.path, '/api/hello');
  const upstream = trace.steps[2];
  const status = upstream?.changes.find((c) => c.path === 'response.status_code');
  assert.deepEqual(status, { path: 'response.status_code', kind: 'modified', before: '0', after: '200' });
  assert.ok(upstream?.changes.some((c) => c.path === 'response.headers.x-origin' && c.kind === 'added'));
  assert.ok((upstream?.duration_us ?? -1) >= 0);
  assert.deepEqual(trace.response_origin, { node_id: 'echo-backend', port: 'success' });
});

test('E2E-DEBUG-06: credentials are redacted before the trace is stored', async () => {
  const res = await traced('/secure/hello', { 'x-api-key': 'e2e-secret', authorization: 'Bearer topsecret' });
  assert.equal(res.status, 200);
  const trace = await traceOf(res);
  const raw = JSON.stringify(trace);
  assert.ok(!raw.includes('e2e-secret'), 'the api key never reaches the buffer');
  assert.ok(!raw.includes('topsecret'), 'the bearer token never reaches the buffer');
  assert.deepEqual(trace.initial.request.headers['x-api-key'], ['<redacted>']);
  assert.deepEqual(trace.initial.request.headers['authorization'], ['<redacted>']);
});

test('E2E-DEBUG-07: bodies are sized but not captured by default', async () => {
  const res = await traced(
    '/api/echo',
    { 'content-type': 'application/json' },
    { method: 'POST', body: JSON.stringify({ secret: 'do-not-capture' }) },
  );
  const trace = await traceOf(res);
  const first = trace.steps[0];
  assert.ok((first?.after.request.body.len ?? 0) > 0);
  assert.equal(first?.after.request.body.text, undefined);
  // Nothing after the upstream reads the body, so it streams to the client and is never read for the trace.
  assert.deepEqual(trace.steps[2]?.after.response.body, { len: 0, streamed: true });
  assert.ok(!JSON.stringify(trace).includes('do-not-capture'));
});

test('E2E-DEBUG-08: a failing node is recorded with its error edge and the final 502', async () => {
  const res = await traced('/dead/x');
  assert.equal(res.status, 502);
  const trace = await traceOf(res);
  assert.equal(trace.status, 502);
  const failed = trace.steps.find((s) => s.outcome.kind === 'error');
  assert.equal(failed?.node_id, 'backend');
  assert.equal(failed?.edge, 'error');
  assert.equal(failed?.next_node_id, 'error-handler');
  assert.equal(failed?.outcome.code, 'UPSTREAM_CONNECTION_ERROR');
  assert.ok(failed?.changes.some((c) => c.path === 'errors[0]' && c.kind === 'added'));
  assert.deepEqual(
    trace.steps.map((s) => s.node_id),
    ['backend', 'error-handler', 'client'],
  );
  assert.deepEqual(trace.response_origin, { node_id: 'error-handler', port: 'success' });
  assert.equal(res.headers[ORIGIN], 'error-handler.success');
});

test('E2E-DEBUG-09: the list is capped at max_traces, and DELETE clears it', async () => {
  for (let i = 0; i < 8; i++) await traced(`/api/hello?i=${i}`);
  const { body } = await h.json<TraceList>('GET', '/api/debug/traces');
  assert.equal(body.traces.length, 5);
  assert.deepEqual(
    body.traces.map((t) => t.path),
    Array.from({ length: 5 }, () => '/api/hello'),
  );
  const seqs = body.traces.map((t) => t.seq);
  assert.deepEqual(
    seqs,
    [...seqs].sort((a, b) => b - a),
    'newest first',
  );
  assert.equal(body.retention.max_traces, 5);
  assert.equal(body.retention.retained, 5);
  assert.ok(body.retention.evicted >= 3);
  assert.equal(body.retention.oldest_seq, seqs.at(-1));
  const cleared = await h.json('DELETE', '/api/debug/traces');
  assert.deepEqual(cleared.body, { status: 'cleared', removed: 5 });
  const empty = await h.json<TraceList>('GET', '/api/debug/traces');
  assert.deepEqual(empty.body.traces, []);
  assert.equal(empty.body.retention.oldest_seq, null);
});

test('E2E-DEBUG-09b: an unrouted request is traced as (no route matched) with no steps', async () => {
  const res = await traced('/no-such-route?token=abc');
  assert.equal(res.status, 404);
  assert.equal(res.headers[ORIGIN], '(no route matched)');
  const trace = await traceOf(res);
  assert.equal(trace.policy, '(no route matched)');
  assert.equal(trace.route, undefined);
  assert.equal(trace.status, 404);
  assert.deepEqual(trace.steps, []);
  assert.deepEqual(trace.initial.request.query_params['token'], ['<redacted>']);
  const { body } = await h.json<TraceList>('GET', '/api/debug/traces');
  assert.equal(body.traces[0]?.step_count, 0);
});

test('E2E-DEBUG-10: an unknown trace id is a 404', async () => {
  const res = await h.json('GET', '/api/debug/traces/no-such-trace');
  assert.equal(res.status, 404);
  assert.deepEqual(res.body, { error: 'not_found' });
});

test('E2E-DEBUG-11b: the list filters by route, policy, status, source and limit', async () => {
  await traced('/api/hello');
  await traced('/dead/x');
  await traced('/api/again');
  const list = async (q: string) => (await h.json<TraceList>('GET', `/api/debug/traces${q}`)).body;
  const byRoute = await list('?route=echo-api');
  assert.equal(byRoute.traces.length, 2);
  assert.ok(byRoute.traces.every((t) => t.route === 'echo-api'));
  const byPolicy = await list('?policy=dead-policy');
  assert.deepEqual(
    byPolicy.traces.map((t) => t.policy),
    ['dead-policy'],
  );
  const byStatus = await list('?status=502');
  assert.deepEqual(
    byStatus.traces.map((t) => t.status),
    [502],
  );
  assert.equal((await list('?source=sandbox')).traces.length, 0);
  assert.equal((await list('?source=live')).traces.length, 3);
  assert.equal((await list('?route=')).traces.length, 3, 'a blank filter is no filter');
  const limited = await list('?route=echo-api&limit=1');
  assert.equal(limited.traces.length, 1);
  assert.equal(limited.traces[0]?.path, '/api/again', 'newest first');
  assert.equal(limited.retention.truncated, true);
  assert.equal((await h.json('GET', '/api/debug/traces?status=abc')).status, 400);
  assert.equal((await h.json('GET', '/api/debug/traces?source=elsewhere')).status, 400);
});

test('debug: a supernode instance shows its inner nodes with namespaced ids', async () => {
  const denied = await traced('/sn/x');
  assert.equal(denied.status, 401);
  assert.equal(denied.headers[ORIGIN], 'sec/auth.denied');
  const deniedTrace = await traceOf(denied);
  assert.deepEqual(
    deniedTrace.steps.map((s) => [s.node_id, s.edge, s.port, s.outcome.kind]),
    [
      ['sec/auth', 'success', 'denied', 'outcome'],
      ['client', 'terminal', undefined, 'success'],
    ],
  );
  const allowed = await traced('/sn/x', { 'x-api-key': 'sn-key' });
  assert.equal(allowed.status, 200);
  const trace = await traceOf(allowed);
  assert.deepEqual(
    trace.steps.map((s) => s.node_id),
    ['sec/auth', 'sec/tag', 'backend', 'client'],
  );
  assert.equal(trace.steps[0]?.next_node_id, 'sec/tag');
  assert.ok(trace.steps[1]?.changes.some((c) => c.path === 'request.headers.x-guarded' && c.after === 'yes'));
  assert.deepEqual(trace.response_origin, { node_id: 'backend', port: 'success' });
  assert.equal(allowed.headers[ORIGIN], 'backend.success');
});

test('debug: the response origin names the outcome port that answered', async () => {
  const res = await traced('/secure/x');
  assert.equal(res.status, 401);
  assert.equal(res.headers[ORIGIN], 'auth.denied');
  const trace = await traceOf(res);
  assert.deepEqual(trace.response_origin, { node_id: 'auth', port: 'denied' });
  const { body } = await h.json<TraceList>('GET', '/api/debug/traces');
  assert.deepEqual(body.traces[0]?.response_origin, { node_id: 'auth', port: 'denied' });
});
