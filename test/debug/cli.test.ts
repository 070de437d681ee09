import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { request } from '../support/http.js';
import { deadPort } from '../support/origins.js';
import { ORIGIN, TRACE_ID, TRIGGER, type TraceBody, type TraceList } from './harness.js';

const example = (file: string) => fileURLToPath(new URL(`../../examples/debug/${file}`, import.meta.url));
const auth = `Basic ${Buffer.from('admin:example-secret').toString('base64')}`;

let gateway: GatewayProcess;
let data: string;
let admin: string;

before(async () => {
  const [dataPort, adminPort] = [await freePort(), await freePort()];
  // A dead port that is one of the gateway's own would make the broken route proxy into itself.
  let dead = await deadPort();
  while (dead === dataPort || dead === adminPort) dead = await deadPort();
  data = `http://127.0.0.1:${dataPort}`;
  admin = `http://127.0.0.1:${adminPort}`;
  gateway = spawnGateway(
    ['--system-config', example('system.yaml'), '--gateway-config', example('gateway.yaml')],
    {
      GATEWAY_PORT: String(dataPort),
      ADMIN_PORT: String(adminPort),
      ADMIN_PASSWORD: 'example-secret',
      BROKEN_UPSTREAM_PORT: String(dead),
      LOG_LEVEL: 'warn',
    },
  );
  try {
    await waitForHttp(`${admin}/healthz`, 60000);
  } catch (err) {
    await gateway.stop('SIGKILL');
    throw new Error(`gateway did not start: ${(err as Error).message}\n${gateway.output()}`, { cause: err });
  }
});
after(() => gateway.stop());

async function api<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await request(`${admin}${path}`, {
    method,
    headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: JSON.parse(res.body) as T };
}

test('examples/debug (spawned CLI): a denied request names the supernode node that answered', async () => {
  const res = await request(`${data}/orders/42`, { headers: { [TRIGGER]: '1' } });
  assert.equal(res.status, 401);
  assert.equal(res.headers[ORIGIN], 'guard/auth.denied');
  const trace = await api<TraceBody>('GET', `/api/debug/traces/${res.headers[TRACE_ID] as string}`);
  assert.equal(trace.status, 200);
  assert.equal(trace.body.route, 'orders');
  assert.deepEqual(
    trace.body.steps.map((s) => [s.node_id, s.port ?? s.edge]),
    [
      ['guard/auth', 'denied'],
      ['client', 'terminal'],
    ],
  );
});

test('examples/debug (spawned CLI): an allowed request shows every node and its changes, secrets redacted', async () => {
  const res = await request(`${data}/orders/42`, {
    headers: { [TRIGGER]: '1', 'x-api-key': 'demo-key', 'x-tenant-id': 'acme', 'x-tenant-secret': 'hush' },
  });
  assert.equal(res.status, 200);
  assert.deepEqual(JSON.parse(res.body), { order: '/42', tenant: 'acme' });
  assert.equal(res.headers[ORIGIN], 'answer.success');
  const { body: trace } = await api<TraceBody>('GET', `/api/debug/traces/${res.headers[TRACE_ID] as string}`);
  assert.deepEqual(
    trace.steps.map((s) => s.node_id),
    ['guard/auth', 'guard/tenant', 'rewrite', 'answer', 'client'],
  );
  assert.deepEqual(trace.steps[1]?.changes, [{ path: 'message.tenant', kind: 'added', after: 'acme' }]);
  assert.ok(trace.steps[2]?.changes.some((c) => c.path === 'request.headers.x-tenant' && c.after === 'acme'));
  const raw = JSON.stringify(trace);
  assert.ok(!raw.includes('demo-key') && !raw.includes('hush'));
});

test('examples/debug (spawned CLI): the broken route shows the error edge; the sandbox replays a policy', async () => {
  const res = await request(`${data}/broken/x`, { headers: { [TRIGGER]: '1' } });
  assert.equal(res.status, 502);
  assert.equal(res.headers[ORIGIN], 'error-handler.success');
  const list = await api<TraceList>('GET', '/api/debug/traces?route=broken');
  assert.equal(list.body.traces[0]?.status, 502);
  const run = await api<{ trace: TraceBody }>('POST', '/api/debug/sandbox', {
    policy: 'orders-policy',
    context: { path: '/orders/7', headers: { 'x-api-key': 'demo-key', 'x-tenant-id': 'zeta' } },
  });
  assert.equal(run.status, 200);
  assert.equal(run.body.trace.source, 'sandbox');
  assert.equal(run.body.trace.status, 200);
  assert.deepEqual(run.body.trace.response_origin, { node_id: 'answer', port: 'success' });
});
