import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { BASE_YAML } from '../admin/harness.js';
import { request } from '../support/http.js';
import { call, fails, ok, READ_TOKEN, startMcp, WRITE_TOKEN, type McpHarness } from './harness.js';

/** Secrets planted the way the review did (M6): none of these may reach a read token. */
const URL_PASSWORD = 'URL-REDIS-PASSWORD';
const INLINE_KEY = 'INLINE-KEY-LITERAL';
const UPSTREAM_KEY = 'UPSTREAM-API-KEY-LITERAL';
const UPSTREAM_BEARER = 'UPSTREAM-BEARER-LITERAL';
const INNOCENT_HEADER_SECRET = 'INNOCENT-NAME-LITERAL';
const ENV_SECRET = 'Env-Admin-Pass-XYZ';

const YAML = `${BASE_YAML}
  - name: injects
    nodes:
      - { id: in, type: listener }
      - { id: auth, type: key-auth, config: { keys: [${INLINE_KEY}], header_name: x-api-key } }
      - id: rw
        type: proxy-rewrite
        config:
          headers:
            set: { x-api-key: ${UPSTREAM_KEY}, x-upstream-auth: "Bearer ${UPSTREAM_BEARER}", content-type: text/plain }
          add_headers: [{ name: x-tenant-route, value: ${INNOCENT_HEADER_SECRET} }, { name: x-from, value: "{{request.headers.x-from}}" }]
      - id: m
        type: mocking
        config: { response_example: ok, response_headers: { x-debug-info: ${INNOCENT_HEADER_SECRET}, cache-control: no-store } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: rw.in }
      - { from: auth.denied, to: out.in }
      - { from: rw.success, to: m.in }
      - { from: m.success, to: out.in }
stores:
  - { name: main, type: redis, url: "redis://:${URL_PASSWORD}@127.0.0.1:1" }
`;

const LEAKS = [URL_PASSWORD, INLINE_KEY, UPSTREAM_KEY, UPSTREAM_BEARER, INNOCENT_HEADER_SECRET];

const XPCALL_HANG =
  'function execute(ctx) xpcall(function() error("x") end, function() while true do end end) return ctx end';

describe('mcp read scope (review H1, M6, L3)', () => {
  let h: McpHarness;
  let reader: Client;
  let writer: Client;
  before(async () => {
    h = await startMcp({
      gatewayYaml: YAML,
      system: 'debug: { enabled: true, sandbox: true, sandbox_timeout_seconds: 5 }',
      env: { ...process.env, SOME_VAR: ENV_SECRET },
    });
    reader = await h.connect(READ_TOKEN);
    writer = await h.connect(WRITE_TOKEN);
  });
  after(() => h.stop());

  test('mcp H1: a read token does not see run_sandbox or validate_* and calling them is forbidden', async () => {
    const listed = (await reader.listTools()).tools.map((t) => t.name);
    for (const name of ['run_sandbox', 'validate_policy', 'validate_supernode'])
      assert.ok(!listed.includes(name), `${name} listed for a read token`);
    // The review's hang, sent with a read token: refused before any node is compiled or run.
    const hang = await fails(reader, 'run_sandbox', {
      nodes: [{ id: 's', type: 'script', config: { inline: XPCALL_HANG } }],
    });
    assert.equal(hang.code, 'forbidden');
    const store = await fails(reader, 'run_sandbox', {
      nodes: [{ id: 'w', type: 'store-set', config: { store: 'main', key: 'x', value: 'pwned' } }],
    });
    assert.equal(store.code, 'forbidden');
    assert.equal(
      (await fails(reader, 'validate_policy', { policy: { nodes: [], edges: [] } })).code,
      'forbidden',
    );
    // Nothing ran: no sandbox trace, and the gateway still answers.
    const traces = await ok<{ traces: unknown[] }>(reader, 'list_traces', { source: 'sandbox' });
    assert.deepEqual(traces.traces, []);
    assert.equal((await fetch(`${h.data}/hello`)).status, 200);
  });

  test('mcp H1: run_sandbox over raw JSON-RPC with a read token is a forbidden tool error', async () => {
    const res = await request(h.endpoint, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${READ_TOKEN}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'run_sandbox', arguments: { nodes: [{ id: 'm', type: 'mocking', config: {} }] } },
      }),
    });
    assert.equal(res.status, 200);
    const reply = JSON.parse(res.body) as { result: { isError: boolean; content: { text: string }[] } };
    assert.equal(reply.result.isError, true);
    assert.equal((JSON.parse(reply.result.content[0]?.text ?? '{}') as { code: string }).code, 'forbidden');
  });

  test('mcp M6: get_store, list_stores and export_config show no URL password', async () => {
    const store = await ok(reader, 'get_store', { name: 'main' });
    assert.equal(store['url'], 'redis://:<redacted>@127.0.0.1:1');
    for (const tool of ['list_stores', 'export_config']) {
      const r = await call(reader, tool);
      assert.equal(r.isError, false);
      assert.ok(!r.text.includes(URL_PASSWORD), `${tool} leaked the URL password`);
    }
  });

  test('mcp M6: get_policy shows no inline keys and no injected header values, harmless ones stay', async () => {
    const r = await call(reader, 'get_policy', { name: 'injects' });
    for (const secret of LEAKS) assert.ok(!r.text.includes(secret), `${secret} leaked: ${r.text}`);
    const policy = r.value as { nodes: { id: string; config?: Record<string, unknown> }[] };
    const rw = policy.nodes.find((n) => n.id === 'rw')?.config as {
      headers: { set: Record<string, string> };
      add_headers: { name: string; value: string }[];
    };
    assert.deepEqual(rw.headers.set, {
      'x-api-key': '<redacted>',
      'x-upstream-auth': '<redacted>',
      'content-type': 'text/plain',
    });
    assert.deepEqual(rw.add_headers, [
      { name: 'x-tenant-route', value: '<redacted>' },
      // A value made only of references holds no literal and stays readable.
      { name: 'x-from', value: '{{request.headers.x-from}}' },
    ]);
    for (const tool of ['list_policies', 'export_config']) {
      const all = await call(reader, tool);
      for (const secret of LEAKS) assert.ok(!all.text.includes(secret), `${tool} leaked ${secret}`);
    }
  });

  test('mcp M6: get_trace_step shows a masked node config and a redacted injected header', async () => {
    const res = await request(`${h.data}/hello`, { headers: { 'x-switchyard-debug': '1' } });
    assert.equal(res.status, 200);
    // Route the keyed policy through the sandbox (write token) so its injected headers are traced.
    const run = await ok<{ stored_trace_id: string }>(writer, 'run_sandbox', {
      policy: 'injects',
      context: { headers: { 'x-api-key': INLINE_KEY } },
    });
    const step = await call(reader, 'get_trace_step', { id: run.stored_trace_id, node_id: 'rw' });
    assert.equal(step.isError, false, step.text);
    for (const secret of LEAKS) assert.ok(!step.text.includes(secret), `${secret} leaked: ${step.text}`);
    const full = await call(reader, 'get_trace', { id: run.stored_trace_id, include_snapshots: true });
    for (const secret of [INLINE_KEY, UPSTREAM_KEY, UPSTREAM_BEARER])
      assert.ok(!full.text.includes(secret), `${secret} leaked in the trace`);
  });

  test('mcp H1: a sandbox node with ${SOME_VAR} or {{env.SOME_VAR}} is refused and reveals nothing', async () => {
    for (const value of ['${SOME_VAR}', '{{env.SOME_VAR}}', 'x-${SOME_VAR:-d}', '{{${Z:-env}.SOME_VAR}}']) {
      const r = await call(writer, 'run_sandbox', {
        nodes: [
          {
            id: 'm',
            type: 'mocking',
            config: { response_status: 200, response_example: 'x', response_headers: { 'x-a': value } },
          },
        ],
      });
      assert.equal(r.isError, true, `${value}: ${r.text}`);
      assert.ok(!r.text.includes(ENV_SECRET), `${value} revealed the environment`);
      const error = r.value as { code: string; message: string; errors: string[] };
      assert.equal(error.code, 'invalid_input');
      assert.match(error.message, /nodes\[0\]\.config\.response_headers\.x-a/);
      assert.match(error.message, /SOME_VAR|\$\{Z\}/);
    }
    const plain = await ok<{ trace: { status: number } }>(writer, 'run_sandbox', {
      nodes: [{ id: 'm', type: 'mocking', config: { response_example: '$uri {{request.path}}' } }],
      context: { path: '/p' },
    });
    assert.equal(plain.trace.status, 200);
  });

  test('mcp L3: a rebinding Origin (Host matching it) and a wrong scheme are refused', async () => {
    const port = new URL(h.url).port;
    const headers = {
      authorization: `Bearer ${READ_TOKEN}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    for (const [origin, host] of [
      [`http://evil.example:${port}`, `evil.example:${port}`],
      [`https://127.0.0.1:${port}`, `127.0.0.1:${port}`],
      [`http://127.0.0.1:${Number(port) + 1}`, `127.0.0.1:${Number(port) + 1}`],
    ] as const) {
      const res = await request(h.endpoint, { method: 'POST', headers: { ...headers, origin, host }, body });
      assert.equal(res.status, 403, `${origin} with Host ${host}`);
    }
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
      const res = await request(h.endpoint, { method: 'POST', headers: { ...headers, origin }, body });
      assert.equal(res.status, 200, origin);
    }
  });
});
