import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { request } from '../support/http.js';
import { startDebug, type DebugHarness, type TraceBody } from './harness.js';

// F14: the console's sandbox can answer upstream nodes with a mock (the `upstreams:` format of a
// policy test, docs/config-as-code.md#policy-tests), so a run need not call the real backend.

interface SandboxBody {
  mocked: string[];
  trace: TraceBody;
  error?: string;
}

let h: DebugHarness;
before(async () => {
  h = await startDebug('enabled: true, sandbox: true');
});
after(() => h.stop());

const sandbox = (body: unknown) => h.json<SandboxBody>('POST', '/api/debug/sandbox', body);

test('F14: a mocked upstream answers its mock, the real backend gets no request, live traffic still reaches it', async () => {
  const before = h.origin.requests.length;
  const { status, body } = await sandbox({
    policy: 'echo-policy',
    context: { method: 'POST', path: '/api/orders', body: '{"id":1}' },
    upstreams: { 'echo-backend': { status: 503, headers: { 'X-Mock': 'yes' }, body: 'mocked answer' } },
  });
  assert.equal(status, 200, JSON.stringify(body));
  assert.deepEqual(body.mocked, ['echo-backend']);
  assert.equal(body.trace.status, 503);
  const last = body.trace.steps.at(-1)?.after.response;
  assert.deepEqual(last?.headers['x-mock'], ['yes']);
  assert.equal(last?.body.len, 'mocked answer'.length); // bodies are not captured by default
  assert.equal(body.trace.initial.request.method, 'POST');
  assert.equal(h.origin.requests.length, before, 'the mocked backend was not called');

  const live = await request(`${h.data}/api/hello`);
  assert.equal(live.status, 200, 'the live policy still runs its real upstream');
  assert.equal(h.origin.requests.length, before + 1);
});

test('F14: a mock for a node the policy lacks, or with a bad status, is a 400 naming it', async () => {
  const unknown = await sandbox({ policy: 'echo-policy', upstreams: { backend: { status: 200 } } });
  assert.equal(unknown.status, 400);
  assert.match(unknown.body.error ?? '', /no node 'backend' in policy 'echo-policy'.*echo-backend/);
  const bad = await sandbox({ policy: 'echo-policy', upstreams: { 'echo-backend': { status: 42 } } });
  assert.equal(bad.status, 400);
  assert.match(bad.body.error ?? '', /upstreams\.echo-backend\.status/);
  const field = await sandbox({ policy: 'echo-policy', upstreams: { 'echo-backend': { code: 200 } } });
  assert.equal(field.status, 400);
  assert.match(field.body.error ?? '', /unknown field 'code'/);
});
