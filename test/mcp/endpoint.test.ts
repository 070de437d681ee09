import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startAdmin, basic } from '../admin/harness.js';
import { request } from '../support/http.js';
import { fails, READ_TOKEN, startMcp, WRITE_TOKEN, type McpHarness } from './harness.js';

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } },
});

/** A raw initialize POST, so the transport-level answers (401, 403, 405) are visible. */
const post = (url: string, headers: Record<string, string>, method = 'POST') =>
  request(url, {
    method,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    ...(method === 'POST' ? { body: INITIALIZE } : {}),
  });

const WRITE_TOOLS = [
  'put_route',
  'delete_route',
  'put_policy',
  'delete_policy',
  'put_supernode',
  'delete_supernode',
  'put_plugin_config',
  'delete_plugin_config',
  'put_store',
  'delete_store',
  'put_global_rule',
  'delete_global_rule',
  'reload_config',
  'purge_cache',
  // They compile or execute nodes: scripts, outbound calls, store writes (review H1).
  'validate_policy',
  'validate_supernode',
  'run_sandbox',
  'trace_to_test',
  'rollback_config',
];

const READ_TOOLS = [
  'list_node_types',
  'get_node_type',
  'list_vars',
  'get_status',
  'export_config',
  'list_routes',
  'get_route',
  'list_policies',
  'get_policy',
  'list_supernodes',
  'get_supernode',
  'list_plugin_configs',
  'get_plugin_config',
  'list_stores',
  'get_store',
  'list_consumers',
  'get_consumer',
  'list_global_rules',
  'get_global_rule',
  'list_traces',
  'get_trace',
  'get_trace_step',
  'list_config_history',
  'get_config_version',
];

describe('mcp endpoint', () => {
  let h: McpHarness;
  before(async () => {
    h = await startMcp({ mcp: 'allowed_origins: ["https://agent.example"]' });
  });
  after(() => h.stop());

  test('mcp: a read token lists exactly the read tools', async () => {
    const client = await h.connect(READ_TOKEN);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.deepEqual(names.sort(), [...READ_TOOLS].sort());
  });

  test('mcp: a write token lists the read and the write tools', async () => {
    const client = await h.connect(WRITE_TOKEN);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.deepEqual(names.sort(), [...READ_TOOLS, ...WRITE_TOOLS].sort());
    for (const tool of (await client.listTools()).tools) {
      assert.equal(tool.inputSchema.type, 'object', tool.name);
      assert.ok((tool.description ?? '').length > 20, tool.name);
    }
  });

  test('mcp: a write tool called with a read token is the tool error forbidden, and changes nothing', async () => {
    const client = await h.connect(READ_TOKEN);
    for (const name of ['delete_route', 'reload_config', 'purge_cache']) {
      const error = await fails(client, name, { name: 'hello', id: 'x' });
      assert.equal(error.code, 'forbidden', name);
      assert.match(error.hint ?? '', /scope write/);
    }
    assert.equal((await fetch(`${h.data}/hello`)).status, 200);
    assert.deepEqual(
      h.gateway.runtime.config.routes.map((r) => r.name),
      ['hello'],
    );
  });

  test('mcp: no token, a wrong token, or admin Basic credentials answer 401 with a Bearer challenge', async () => {
    for (const headers of [
      {},
      { authorization: 'Bearer not-a-configured-token-at-all' },
      { authorization: `Bearer ${READ_TOKEN}x` },
      { authorization: basic() },
      { authorization: READ_TOKEN },
    ]) {
      const res = await post(h.endpoint, headers);
      assert.equal(res.status, 401, JSON.stringify(headers));
      assert.deepEqual(JSON.parse(res.body), { error: 'unauthorized' });
      assert.match(String(res.headers['www-authenticate']), /^Bearer /);
    }
  });

  test('mcp: an MCP token does not open the Admin API', async () => {
    const res = await fetch(`${h.url}/api/routes`, { headers: { authorization: `Bearer ${WRITE_TOKEN}` } });
    assert.equal(res.status, 401);
  });

  test('mcp: a foreign Origin is refused with 403; the own authority and allowed_origins pass', async () => {
    const auth = { authorization: `Bearer ${READ_TOKEN}` };
    const foreign = await post(h.endpoint, { ...auth, origin: 'https://evil.example' });
    assert.equal(foreign.status, 403);
    assert.deepEqual(JSON.parse(foreign.body), { error: 'origin_not_allowed' });
    // Checked before the token: a rebinding page learns nothing about tokens.
    assert.equal((await post(h.endpoint, { origin: 'https://evil.example' })).status, 403);

    const own = await post(h.endpoint, { ...auth, origin: h.url });
    assert.equal(own.status, 200, own.body);
    const reply = JSON.parse(own.body) as { result: { serverInfo: { name: string } } };
    assert.equal(reply.result.serverInfo.name, 'switchyard');
    const listed = await post(h.endpoint, { ...auth, origin: 'https://agent.example' });
    assert.equal(listed.status, 200);
  });

  test('mcp: GET and DELETE answer 405 (stateless: no server stream, no session)', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await post(h.endpoint, { authorization: `Bearer ${READ_TOKEN}` }, method);
      assert.equal(res.status, 405, method);
      assert.equal(res.headers['allow'], 'POST');
    }
  });

  test('mcp: malformed tool arguments are the tool error invalid_input naming the argument', async () => {
    const client = await h.connect(READ_TOKEN);
    const error = await fails(client, 'get_route', { name: 'hello', extra: 1 });
    assert.equal(error.code, 'invalid_input');
    assert.ok(
      error.errors?.some((e) => e.startsWith('extra')),
      JSON.stringify(error),
    );
  });
});

describe('mcp endpoint switched off', () => {
  test('mcp: disabled (or absent) answers 404 not_found on the path, even with a token', async () => {
    for (const admin of ['mcp: { enabled: false, tokens: [] }', undefined]) {
      const h = await startAdmin(admin === undefined ? {} : { admin });
      try {
        const res = await post(`${h.url}/mcp`, { authorization: `Bearer ${READ_TOKEN}` });
        assert.equal(res.status, 404);
        assert.deepEqual(JSON.parse(res.body), { error: 'not_found' });
      } finally {
        await h.stop();
      }
    }
  });

  test('mcp: a custom admin.mcp.path serves MCP there and leaves /mcp unknown', async () => {
    const h = await startMcp({ mcp: 'path: /agent', admin: 'ui_enabled: false' });
    try {
      const auth = { authorization: `Bearer ${READ_TOKEN}` };
      assert.equal((await post(`${h.url}/agent`, auth)).status, 200);
      assert.equal((await post(`${h.url}/mcp`, auth)).status, 404);
    } finally {
      await h.stop();
    }
  });
});
