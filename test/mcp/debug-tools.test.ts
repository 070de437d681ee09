import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fails, ok, READ_TOKEN, startMcp, WRITE_TOKEN } from './harness.js';

interface Listing {
  traces: { id: string; source: string; policy: string; status: number }[];
  retention: { retained: number };
}

test('mcp debug tools: debug off answers debug_disabled, sandbox off answers sandbox_disabled', async () => {
  const off = await startMcp();
  try {
    const client = await off.connect(WRITE_TOKEN);
    for (const [tool, args] of [
      ['list_traces', {}],
      ['get_trace', { id: 'x' }],
      ['get_trace_step', { id: 'x', index: 0 }],
      ['run_sandbox', { policy: 'hello-policy' }],
    ] as const) {
      const error = await fails(client, tool, args);
      assert.equal(error.code, 'debug_disabled', tool);
      assert.match(error.hint ?? '', /debug\.enabled/);
    }
  } finally {
    await off.stop();
  }
  const noSandbox = await startMcp({ system: 'debug: { enabled: true, sandbox: false }' });
  try {
    const client = await noSandbox.connect(WRITE_TOKEN);
    assert.equal((await fails(client, 'run_sandbox', { policy: 'hello-policy' })).code, 'sandbox_disabled');
    assert.deepEqual((await ok<Listing>(client, 'list_traces')).traces, []);
  } finally {
    await noSandbox.stop();
  }
});

test('mcp debug tools: a live traced request can be listed, read and inspected step by step', async () => {
  const h = await startMcp({ system: 'debug: { enabled: true }' });
  try {
    const client = await h.connect(READ_TOKEN);
    const res = await fetch(`${h.data}/hello`, {
      headers: { 'x-switchyard-debug': '1', authorization: 'Bearer data-plane-secret' },
    });
    assert.equal(res.status, 200);
    const id = res.headers.get('x-switchyard-trace-id') as string;

    const listing = await ok<Listing>(client, 'list_traces', { route: 'hello' });
    assert.deepEqual(
      listing.traces.map((t) => [t.id, t.source, t.policy, t.status]),
      [[id, 'request', 'hello-policy', 200]],
    );
    assert.equal(listing.retention.retained, 1);
    assert.deepEqual((await ok<Listing>(client, 'list_traces', { policy: 'other' })).traces, []);

    const brief = await ok(client, 'get_trace', { id });
    assert.equal(brief['snapshots_omitted'], true);
    assert.equal(brief['initial'], undefined);
    const steps = brief['steps'] as { node_id: string; after?: unknown; changes: unknown[] }[];
    assert.deepEqual(
      steps.map((s) => s.node_id),
      ['m', 'out'],
    );
    assert.equal(steps[0]?.after, undefined);
    assert.ok(Array.isArray(steps[0]?.changes));

    const full = await ok(client, 'get_trace', { id, include_snapshots: true });
    const initial = full['initial'] as { request: { headers: Record<string, string[]> } };
    // Secrets were redacted when the trace was captured; MCP shows the redacted form.
    assert.deepEqual(initial.request.headers['authorization'], ['<redacted>']);
    assert.ok(!JSON.stringify(full).includes('data-plane-secret'));

    const step = await ok(client, 'get_trace_step', { id, node_id: 'm' });
    assert.equal((step['step'] as { node_id: string }).node_id, 'm');
    assert.equal((step['node_config'] as { type: string }).type, 'mocking');
    assert.ok(step['before'] !== undefined);
    assert.deepEqual(await ok(client, 'get_trace_step', { id, index: 0 }), step);

    assert.equal((await fails(client, 'get_trace', { id: 'no-such-trace' })).code, 'not_found');
    assert.equal((await fails(client, 'get_trace_step', { id, node_id: 'zz' })).code, 'not_found');
    assert.equal((await fails(client, 'get_trace_step', { id })).code, 'invalid_input');
  } finally {
    await h.stop();
  }
});

test('mcp run_sandbox: runs a stored policy or ad-hoc nodes and stores a sandbox trace', async () => {
  const h = await startMcp({ system: 'debug: { enabled: true, sandbox: true }' });
  try {
    const client = await h.connect(WRITE_TOKEN);
    const run = await ok(client, 'run_sandbox', { policy: 'hello-policy', context: { path: '/hello' } });
    assert.equal(run['policy'], 'hello-policy');
    assert.equal((run['trace'] as { status: number }).status, 200);
    const listing = await ok<Listing>(client, 'list_traces', { source: 'sandbox' });
    assert.deepEqual(
      listing.traces.map((t) => t.id),
      [run['stored_trace_id']],
    );

    const adHoc = await ok(client, 'run_sandbox', {
      nodes: [{ id: 'm', type: 'mocking', config: { response_example: 'ad hoc', response_status: 201 } }],
      context: { method: 'POST', path: '/x' },
    });
    assert.equal((adHoc['trace'] as { status: number }).status, 201);

    assert.equal((await fails(client, 'run_sandbox', { policy: 'nope' })).code, 'not_found');
    const neither = await fails(client, 'run_sandbox', { context: {} });
    assert.equal(neither.code, 'invalid_input');
    assert.match(neither.hint ?? '', /exactly one of/);
    // The upstream points at a port nobody serves: unmocked it is a 502, mocked it answers the mock.
    const unreachable = [
      { id: 'backend', type: 'upstream', config: { targets: [{ host: '127.0.0.1', port: 9 }] } },
    ];
    const real = await ok(client, 'run_sandbox', { nodes: unreachable, on_error: 'client' });
    assert.equal((real['trace'] as { status: number }).status, 502);
    const mocked = await ok(client, 'run_sandbox', {
      nodes: unreachable,
      upstreams: { backend: { status: 418, headers: { 'x-mock': 'yes' }, body: 'mocked' } },
    });
    assert.deepEqual(mocked['mocked'], ['backend']);
    assert.equal((mocked['trace'] as { status: number }).status, 418);
    const badMock = await fails(client, 'run_sandbox', {
      nodes: unreachable,
      upstreams: { nope: { status: 200 } },
    });
    assert.equal(badMock.code, 'invalid_input');
    assert.match(JSON.stringify(badMock), /nope/);

    const unknownType = await fails(client, 'run_sandbox', { nodes: [{ type: 'no-such-plugin' }] });
    assert.equal(unknownType.code, 'invalid_input');
    assert.match(JSON.stringify(unknownType), /no-such-plugin/);
  } finally {
    await h.stop();
  }
});
