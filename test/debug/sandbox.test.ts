import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOrigin, type Origin } from '../support/origins.js';
import { startDebug, type DebugHarness, type TraceBody, type TraceList } from './harness.js';

interface SandboxBody {
  mode: string;
  policy: string;
  warning: string;
  stored_trace_id: string;
  trace: TraceBody;
}

let h: DebugHarness;

before(async () => {
  h = await startDebug('enabled: true, sandbox_timeout_seconds: 1');
});
after(() => h.stop());

const sandbox = (body: unknown) =>
  h.json<SandboxBody & { error?: string }>('POST', '/api/debug/sandbox', body);

test('E2E-DEBUG-11: a named policy replays against a synthetic context, recorded as source sandbox', async () => {
  const { status, body } = await sandbox({ policy: 'echo-policy', context: { path: '/api/hello' } });
  assert.equal(status, 200);
  assert.equal(body.mode, 'policy');
  assert.equal(body.policy, 'echo-policy');
  assert.match(body.warning, /for real/);
  assert.deepEqual(
    body.trace.steps.map((s) => s.node_id),
    ['cors', 'strip-prefix', 'echo-backend', 'client'],
  );
  assert.equal(body.trace.status, 200);
  assert.equal(body.trace.source, 'sandbox');
  assert.equal(body.trace.route, undefined);
  assert.equal(h.origin.requests.at(-1)?.url, '/hello', 'the policy called its upstream');
  const stored = await h.json<TraceBody>('GET', `/api/debug/traces/${body.stored_trace_id}`);
  assert.equal(stored.status, 200);
  assert.equal(stored.body.source, 'sandbox');
  const list = await h.json<TraceList>('GET', '/api/debug/traces?source=sandbox');
  assert.ok(list.body.traces.some((t) => t.id === body.stored_trace_id));
});

test('E2E-DEBUG-12: ad-hoc nodes run wrapped between a listener and a client', async () => {
  const { status, body } = await sandbox({
    nodes: [{ id: 'rw', type: 'proxy-rewrite', config: { phase: 'request', strip_path_prefix: '/api' } }],
    context: { method: 'GET', path: '/api/hello', headers: { 'x-a': '1' } },
  });
  assert.equal(status, 200);
  assert.equal(body.mode, 'nodes');
  assert.equal(body.policy, '__sandbox');
  const rw = body.trace.steps.find((s) => s.node_id === 'rw');
  assert.equal(rw?.changes.find((c) => c.path === 'request.path')?.after, '/hello');
  assert.deepEqual(body.trace.initial.request.headers['x-a'], ['1']);
  assert.deepEqual(
    body.trace.steps.map((s) => [s.node_id, s.edge]),
    [
      ['rw', 'success'],
      ['client', 'terminal'],
    ],
  );
});

test('E2E-DEBUG-13: a run without context uses the documented defaults', async () => {
  const { status, body } = await sandbox({ nodes: [{ id: 'c', type: 'cors', config: {} }] });
  assert.equal(status, 200);
  assert.equal(body.trace.steps[0]?.node_id, 'c');
  const request = body.trace.initial.request as TraceBody['initial']['request'] & Record<string, unknown>;
  assert.equal(request.method, 'GET');
  assert.equal(request.path, '/');
  assert.equal(request['host'], 'sandbox.local');
  assert.equal(request['scheme'], 'http');
  assert.equal(request['remote_addr'], '127.0.0.1:0');
  assert.equal(request['protocol'], 'http1');
  assert.equal(body.trace.initial.response.status_code, 0);
});

test('E2E-DEBUG-14: an unknown node type is a 400 naming it', async () => {
  const { status, body } = await sandbox({ nodes: [{ id: 'x', type: 'no-such-plugin', config: {} }] });
  assert.equal(status, 400);
  assert.match(JSON.stringify(body), /no-such-plugin/);
});

test('E2E-DEBUG-15: an unknown policy is a 404', async () => {
  const { status, body } = await sandbox({ policy: 'nope' });
  assert.equal(status, 404);
  assert.match(String(body.error), /nope/);
});

test('E2E-DEBUG-16: exactly one of nodes and policy', async () => {
  assert.equal((await sandbox({})).status, 400);
  assert.equal((await sandbox({ context: { path: '/' } })).status, 400);
  assert.equal((await sandbox({ policy: 'echo-policy', nodes: [] })).status, 400);
  assert.equal((await sandbox({ nodes: [] })).status, 400);
});

test('sandbox: unknown fields are rejected at the top and in the context', async () => {
  const top = await sandbox({ policy: 'echo-policy', contxt: {} });
  assert.equal(top.status, 400);
  assert.match(String(top.body.error), /contxt/);
  const ctx = await sandbox({ policy: 'echo-policy', context: { paths: '/x' } });
  assert.equal(ctx.status, 400);
  assert.match(String(ctx.body.error), /paths/);
  const res = await sandbox({ policy: 'echo-policy', context: { response: { code: 200 } } });
  assert.equal(res.status, 400);
  assert.equal((await sandbox({ policy: 'echo-policy', on_error: 'retry' })).status, 400);
  assert.equal((await sandbox({ policy: 'echo-policy', context: { scheme: 'ftp' } })).status, 400);
  assert.equal(
    (await sandbox({ policy: 'echo-policy', context: { body: 'a', body_base64: 'YQ==' } })).status,
    400,
  );
});

test('sandbox: aliases, value coercion and bodies shape the synthetic request', async () => {
  const { status, body } = await sandbox({
    nodes: [{ id: 'e', type: 'echo', config: { body: 'hi' } }],
    context: {
      method: 'POST',
      uri: '/orders?a=1',
      query: { page: 2, tags: ['x', 'y'] },
      headers: { 'X-Retry': 3, accept: ['text/plain', 'application/json'] },
      body: { order: { id: 42 } },
      remote_addr: '10.0.0.9:5555',
      message: { tenant: 'acme' },
      response: { status: 201, headers: { 'x-seed': '1' }, body: 'seed' },
    },
  });
  assert.equal(status, 200);
  const req = body.trace.initial.request as TraceBody['initial']['request'] & Record<string, unknown>;
  assert.equal(req.method, 'POST');
  assert.equal(req.path, '/orders');
  assert.deepEqual(req.query_params, { a: ['1'], page: ['2'], tags: ['x', 'y'] });
  assert.deepEqual(req.headers['x-retry'], ['3']);
  assert.deepEqual(req.headers['accept'], ['text/plain', 'application/json']);
  assert.equal(req.body.len, '{"order":{"id":42}}'.length);
  assert.equal(req['remote_addr'], '10.0.0.9:5555');
  assert.deepEqual(body.trace.initial.message, { tenant: 'acme' });
  assert.equal(body.trace.initial.response.status_code, 201);
  assert.deepEqual(body.trace.initial.response.headers['x-seed'], ['1']);
  const base64 = await sandbox({
    nodes: [{ id: 'c', type: 'cors' }],
    context: { body_base64: Buffer.from('binary!').toString('base64') },
  });
  assert.equal(base64.body.trace.initial.request.body.len, 7);
});

test('sandbox: a context copied from a trace snapshot replays', async () => {
  const first = await sandbox({ policy: 'echo-policy', context: { path: '/api/a', query: { page: '2' } } });
  const snapshot = first.body.trace.steps[1]?.after;
  assert.ok(snapshot);
  const replay = await sandbox({ nodes: [{ id: 'c', type: 'cors' }], context: snapshot });
  assert.equal(replay.status, 200);
  assert.equal(replay.body.trace.initial.request.path, '/a');
  assert.deepEqual(replay.body.trace.initial.request.query_params, { page: ['2'] });
});

test('sandbox: on_error stop leaves error ports unwired (unhandled: 502 for an upstream failure); client keeps the node status', async () => {
  const failing = { id: 'gone', type: 'upstream', config: { targets: [{ host: '127.0.0.1', port: 1 }] } };
  const stop = await sandbox({ nodes: [failing] });
  assert.equal(stop.status, 200);
  const last = stop.body.trace.steps.at(-1);
  assert.equal(last?.node_id, 'gone');
  assert.equal(last?.edge, 'unhandled');
  assert.equal(last?.outcome.kind, 'error');
  // An unhandled upstream failure answers 502 (docs/configuration.md), not the generic 500.
  assert.equal(stop.body.trace.status, 502);
  assert.equal(last?.after.response.status_code, 502, 'the unhandled step shows the 502');
  assert.deepEqual(stop.body.trace.response_origin, { node_id: 'gone', port: 'error' });
  const client = await sandbox({ nodes: [failing], on_error: 'client' });
  assert.deepEqual(
    client.body.trace.steps.map((s) => [s.node_id, s.edge]),
    [
      ['gone', 'error'],
      ['client', 'terminal'],
    ],
  );
  assert.equal(client.body.trace.status, 502);
});

test('sandbox: unwired outcome ports of ad-hoc nodes go to the client', async () => {
  const { status, body } = await sandbox({
    nodes: [
      { id: 'auth', type: 'key-auth', config: { keys: ['k'] } },
      { id: 'e', type: 'echo', config: { body: 'in' } },
    ],
  });
  assert.equal(status, 200);
  assert.deepEqual(
    body.trace.steps.map((s) => [s.node_id, s.port ?? s.edge]),
    [
      ['auth', 'denied'],
      ['client', 'terminal'],
    ],
  );
  assert.equal(body.trace.status, 401);
});

test('sandbox: a run past sandbox_timeout_seconds answers 504', async () => {
  let origin: Origin | undefined;
  try {
    origin = await startOrigin(() => new Promise(() => undefined));
    const started = Date.now();
    const res = await sandbox({
      nodes: [{ id: 'slow', type: 'upstream', config: { targets: [origin.target], timeout_ms: 30000 } }],
    });
    assert.equal(res.status, 504);
    assert.equal(res.body.error, 'sandbox_timeout');
    assert.ok(Date.now() - started < 5000);
  } finally {
    await origin?.close();
  }
});

test('sandbox: ad-hoc nodes may instantiate a supernode; inner ids are namespaced', async () => {
  const { status, body } = await sandbox({
    nodes: [{ id: 'sec', type: 'supernode', config: { name: 'guarded' } }],
    context: { headers: { 'x-api-key': 'sn-key' } },
  });
  assert.equal(status, 200);
  assert.deepEqual(
    body.trace.steps.map((s) => s.node_id),
    ['sec/auth', 'sec/tag', 'client'],
  );
});
