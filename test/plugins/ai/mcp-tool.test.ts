/**
 * Per-tool limits for mcp-proxy with the existing limit nodes (issue 33 item 6, "limits per tool
 * with the existing limit nodes"): mcp-tool puts the called tool on the context,
 * a limit-count keyed on `{{message.mcp.tool}}` sits before mcp-proxy, and mcp-refuse on
 * its `limited` port answers an MCP error result. Driven by the MCP SDK's Client over
 * Streamable HTTP against an upstream built with the SDK.
 */
import assert from 'node:assert/strict';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';

interface Upstream {
  url: string;
  calls: Map<string, number>;
  close(): Promise<void>;
}

async function startUpstream(): Promise<Upstream> {
  const calls = new Map<string, number>();
  const http: HttpServer = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const server = new Server({ name: 'kb', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        { name: 'search', description: 'Search', inputSchema: { type: 'object' } },
        { name: 'fetch', description: 'Fetch a page', inputSchema: { type: 'object' } },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, (r) => {
      calls.set(r.params.name, (calls.get(r.params.name) ?? 0) + 1);
      return { content: [{ type: 'text', text: `${r.params.name} done` }] };
    });
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

const gatewayYaml = (upstream: string) => `
routes:
  - { name: mcp, match: { path: /mcp }, policy: mcp }
policies:
  - name: mcp
    nodes:
      - { id: in, type: listener }
      - { id: tool, type: mcp-tool }
      - id: per-tool
        type: limit-count
        config: { count: 2, time_window: 3600, key: '{{message.mcp.tool}}', rejected_msg: 'at most 2 calls per hour' }
      - { id: refuse, type: mcp-refuse }
      - id: mcp
        type: mcp-proxy
        config:
          servers: [{ name: kb, url: '${upstream}' }]
      - { id: out, type: client }
    edges:
      - { from: in.out, to: tool.in }
      - { from: tool.success, to: mcp.in }
      - { from: tool.call, to: per-tool.in }
      - { from: tool.error, to: out.in }
      - { from: per-tool.success, to: mcp.in }
      - { from: per-tool.limited, to: refuse.in }
      - { from: refuse.success, to: out.in }
      - { from: mcp.success, to: out.in }
      - { from: mcp.error, to: out.in }
`;

describe('mcp-tool: per-tool limits in front of mcp-proxy', () => {
  let upstream: Upstream;
  let gw: RunningGateway;
  let client: Client;
  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(gatewayYaml(upstream.url));
    client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`)));
  });
  after(async () => {
    await client.close();
    await gw.stop();
    await upstream.close();
  });

  test('mcp-tool: the 3rd call of kb_search in the window gets an MCP error result; kb_fetch still works; listings are not counted', async () => {
    for (let i = 0; i < 3; i++) {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), ['kb_fetch', 'kb_search']);
    }
    const call = (name: string) => client.callTool({ name, arguments: {} }) as Promise<CallToolResult>;
    for (let i = 0; i < 2; i++) {
      const ok = await call('kb_search');
      assert.equal(ok.isError, undefined);
      assert.deepEqual(ok.content, [{ type: 'text', text: 'search done' }]);
    }
    const third = await call('kb_search');
    assert.equal(third.isError, true);
    assert.deepEqual(third.content, [
      { type: 'text', text: "tool 'kb_search' was refused by the gateway: at most 2 calls per hour" },
    ]);
    assert.equal(upstream.calls.get('search'), 2, 'the refused call never reached the upstream');
    const other = await call('kb_fetch');
    assert.equal(other.isError, undefined);
    assert.deepEqual(other.content, [{ type: 'text', text: 'fetch done' }]);
    assert.equal(upstream.calls.get('fetch'), 1);
  });

  test('mcp-tool: refused calls are counted as limited in gateway_mcp_tool_calls_total', async () => {
    const text = (await gw.gateway.renderMetrics()).body;
    assert.match(
      text,
      /gateway_mcp_tool_calls_total\{policy="mcp",node="refuse",server="kb",tool="kb_search",status="limited"\} [1-9]/,
    );
  });

  test('mcp-tool: a JSON-RPC batch carrying tools/call is refused (it would pass the per-tool limit)', async () => {
    const res = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'kb_search', arguments: {} } },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'kb_search', arguments: {} } },
      ]),
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { code: number; message: string } };
    assert.equal(body.error.code, -32600);
    assert.equal(upstream.calls.get('search'), 2);
  });
});
