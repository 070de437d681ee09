/**
 * mcp-proxy end to end (issue 33 item 6): two upstream MCP servers built with the official SDK —
 * `web` over Streamable HTTP on a loopback port (this process), `notes` a stdio process
 * (test/support/mcp-stdio-server.mjs) the gateway starts and supervises — behind a real gateway,
 * driven by the SDK's own Client over StreamableHTTPClientTransport.
 */
import assert from 'node:assert/strict';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { maskSecrets } from '../../../src/admin/mcp/secrets.js';
import { compileGlob } from '../../../src/plugins/ai/mcp-proxy-access.js';
import { mcpProxy } from '../../../src/plugins/ai/mcp-proxy.js';
import { freePort } from '../../support/free-port.js';
import { capturingLogger, instantiate, pluginEnv, requestContext } from '../../support/plugin-env.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { waitFor } from '../../support/wait.js';
import { tempDir } from '../../support/temp-dir.js';

const STDIO_SERVER = fileURLToPath(new URL('../../support/mcp-stdio-server.mjs', import.meta.url));
// The operator's allow-list of stdio commands (docs/plugins/mcp-proxy.md#stdio-servers).
const ALLOWED_COMMANDS = [process.execPath, '/nonexistent/switchyard-mcp-server'].join(',');
process.env.SWITCHYARD_MCP_COMMANDS = ALLOWED_COMMANDS;
const WEB_TOKEN = 'web-upstream-token';

/** The `web` upstream: counts every tool call it receives and the authorization it was sent. */
interface WebUpstream {
  url: string;
  calls: Map<string, number>;
  authorizations: Set<string>;
  close(): Promise<void>;
}

function webServer(): Server {
  const server = new Server(
    { name: 'web', version: '1.0.0' },
    { capabilities: { tools: {}, prompts: {}, resources: {} } },
  );
  return server;
}

async function startWebUpstream(): Promise<WebUpstream> {
  const calls = new Map<string, number>();
  const authorizations = new Set<string>();
  const http: HttpServer = createServer((req, res) => {
    authorizations.add(req.headers.authorization ?? '');
    if (req.headers.authorization !== `Bearer ${WEB_TOKEN}`) {
      res.writeHead(401).end();
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const server = webServer();
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        {
          name: 'add',
          description: 'Add two numbers',
          inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
        },
        { name: 'delete_page', description: 'Delete a page', inputSchema: { type: 'object' } },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, (r) => {
      calls.set(r.params.name, (calls.get(r.params.name) ?? 0) + 1);
      const args = (r.params.arguments ?? {}) as { a?: number; b?: number };
      if (r.params.name === 'add')
        return { content: [{ type: 'text', text: `sum=${(args.a ?? 0) + (args.b ?? 0)}` }] };
      return { content: [{ type: 'text', text: 'page deleted' }] };
    });
    server.setRequestHandler(ListPromptsRequestSchema, () => ({
      prompts: [{ name: 'draft', description: 'Draft a page' }],
    }));
    server.setRequestHandler(GetPromptRequestSchema, () => ({
      messages: [{ role: 'user', content: { type: 'text', text: 'Draft a web page' } }],
    }));
    server.setRequestHandler(ListResourcesRequestSchema, () => ({
      resources: [{ uri: 'memo://web/about', name: 'about', mimeType: 'text/plain' }],
    }));
    server.setRequestHandler(ReadResourceRequestSchema, (r) => {
      if (r.params.uri !== 'memo://web/about')
        throw new McpError(ErrorCode.InvalidParams, `no resource ${r.params.uri}`);
      return { contents: [{ uri: r.params.uri, mimeType: 'text/plain', text: 'about the web server' }] };
    });
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    authorizations,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

function gatewayYaml(webUrl: string, closedPort: number): string {
  return `
consumers:
  - name: alice
    group: interns
    credentials: { key-auth: { key: alice-key } }
  - name: bob
    group: staff
    credentials: { key-auth: { key: bob-key } }
routes:
  - { name: mcp, match: { path: /mcp }, policy: mcp-policy }
  - { name: down, match: { path: /down }, policy: down-policy }
policies:
  - name: mcp-policy
    nodes:
      - { id: listener, type: listener }
      - { id: auth, type: key-auth, config: { use_consumers: true, header_name: x-api-key } }
      - id: mcp
        type: mcp-proxy
        config:
          servers:
            - { name: web, url: '${webUrl}', headers: { authorization: 'Bearer ${WEB_TOKEN}' } }
            - name: notes
              command: ${JSON.stringify(process.execPath)}
              args: [${JSON.stringify(STDIO_SERVER)}]
              env: { NOTES_README: 'readme via env' }
          access:
            - { consumer: alice, deny: ['web_delete*', 'notes_write_*'] }
            - { group: staff, allow: ['*'] }
      - id: mark
        type: response-rewrite
        config: { headers: { set: { x-mcp-port: error } } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: auth.in }
      - { from: auth.denied, to: client.in }
      - { from: auth.success, to: mcp.in }
      - { from: mcp.success, to: client.in }
      - { from: mcp.error, to: mark.in }
      - { from: mark.success, to: client.in }
  - name: down-policy
    nodes:
      - { id: listener, type: listener }
      - id: mcp
        type: mcp-proxy
        config:
          connect_timeout_ms: 3000
          servers:
            - { name: gone, url: 'http://127.0.0.1:${closedPort}/mcp' }
            - { name: missing, command: /nonexistent/switchyard-mcp-server }
      - id: mark
        type: response-rewrite
        config: { headers: { set: { x-mcp-port: error } } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: mcp.in }
      - { from: mcp.success, to: client.in }
      - { from: mcp.error, to: mark.in }
      - { from: mark.success, to: client.in }
`;
}

const text = (r: unknown): string =>
  ((r as CallToolResult).content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join('');

describe('mcp-proxy', () => {
  let web: WebUpstream;
  let gw: RunningGateway;
  const clients: Client[] = [];

  const connect = async (key: string): Promise<Client> => {
    const client = new Client({ name: 'mcp-proxy-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), {
        requestInit: { headers: { 'x-api-key': key } },
      }),
    );
    clients.push(client);
    return client;
  };

  before(async () => {
    web = await startWebUpstream();
    gw = await startGateway(gatewayYaml(web.url, await freePort()));
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await gw?.stop();
    await web?.close();
  });

  test('tools/list shows the tools of both servers, prefixed with their names', async () => {
    const bob = await connect('bob-key');
    const names = (await bob.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(names, [
      'notes_calls',
      'notes_echo',
      'notes_whoami',
      'notes_write_note',
      'web_add',
      'web_delete_page',
    ]);
    assert.ok(web.authorizations.has(`Bearer ${WEB_TOKEN}`), 'the configured headers reach the upstream');
  });

  test('tools/call reaches the right upstream and returns its result', async () => {
    const bob = await connect('bob-key');
    const sum = await bob.callTool({ name: 'web_add', arguments: { a: 2, b: 3 } });
    assert.equal(sum.isError, undefined);
    assert.equal(text(sum), 'sum=5');
    assert.equal(web.calls.get('add'), 1);
    const echo = await bob.callTool({ name: 'notes_echo', arguments: { text: 'hi' } });
    assert.equal(text(echo), 'notes: hi');
  });

  test('a tool denied to alice is absent from her list and a call gets isError without reaching the upstream', async () => {
    const alice = await connect('alice-key');
    const names = (await alice.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('web_add'));
    assert.ok(!names.includes('web_delete_page'));
    assert.ok(!names.includes('notes_write_note'));
    const before = web.calls.get('delete_page') ?? 0;
    const denied = await alice.callTool({ name: 'web_delete_page', arguments: {} });
    assert.equal(denied.isError, true);
    assert.match(text(denied), /web_delete_page.*denied.*alice/);
    assert.equal(web.calls.get('delete_page') ?? 0, before, 'the web upstream never saw the call');
    const deniedNote = await alice.callTool({ name: 'notes_write_note', arguments: { note: 'x' } });
    assert.equal(deniedNote.isError, true);
    const counts = JSON.parse(text(await alice.callTool({ name: 'notes_calls' }))) as Record<string, number>;
    assert.equal(counts.write_note, undefined, 'the stdio upstream never saw the call');
  });

  test('bob is allowed the tool alice is denied', async () => {
    const bob = await connect('bob-key');
    assert.ok((await bob.listTools()).tools.some((t) => t.name === 'web_delete_page'));
    const before = web.calls.get('delete_page') ?? 0;
    const r = await bob.callTool({ name: 'web_delete_page', arguments: {} });
    assert.equal(r.isError, undefined);
    assert.equal(text(r), 'page deleted');
    assert.equal(web.calls.get('delete_page'), before + 1);
  });

  test('an unauthenticated client is refused by the auth node before the proxy', async () => {
    const res = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(res.status, 401);
  });

  test('prompts and resources of both servers are listed and served', async () => {
    const bob = await connect('bob-key');
    const prompts = (await bob.listPrompts()).prompts.map((p) => p.name).sort();
    assert.deepEqual(prompts, ['notes_summarize', 'web_draft']);
    const prompt = await bob.getPrompt({ name: 'notes_summarize', arguments: { text: 'abc' } });
    assert.deepEqual(prompt.messages[0]?.content, { type: 'text', text: 'Summarize: abc' });
    const uris = (await bob.listResources()).resources.map((r) => r.uri).sort();
    assert.deepEqual(uris, ['memo://notes/readme', 'memo://web/about']);
    const readme = await bob.readResource({ uri: 'memo://notes/readme' });
    assert.equal((readme.contents[0] as { text: string }).text, 'readme via env');
    const about = await bob.readResource({ uri: 'memo://web/about' });
    assert.equal((about.contents[0] as { text: string }).text, 'about the web server');
  });

  test('the stdio server, killed, is restarted and serves again', async () => {
    const bob = await connect('bob-key');
    const first = Number(text(await bob.callTool({ name: 'notes_whoami' })));
    assert.ok(first > 0);
    process.kill(first, 'SIGKILL');
    let second = 0;
    await waitFor(
      async () => {
        const r = await bob.callTool({ name: 'notes_whoami' });
        if (r.isError === true) return false;
        second = Number(text(r));
        return second !== first;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'the restarted notes server' },
    );
    assert.ok(second > 0 && second !== first);
    assert.equal(
      text(await bob.callTool({ name: 'notes_echo', arguments: { text: 'back' } })),
      'notes: back',
    );
  });

  test('gateway_mcp_tool_calls_total counts calls by server, tool and status', async () => {
    const { body } = await gw.gateway.renderMetrics();
    const value = (labels: string): number => {
      const line = body.split('\n').find((l) => l.startsWith(`gateway_mcp_tool_calls_total{${labels}}`));
      return line === undefined ? 0 : Number(line.split(' ').at(-1));
    };
    const where = 'policy="mcp-policy",node="mcp"';
    assert.ok(value(`${where},server="web",tool="web_add",status="ok"`) >= 1, body);
    assert.ok(value(`${where},server="web",tool="web_delete_page",status="denied"`) >= 1);
    assert.ok(value(`${where},server="web",tool="web_delete_page",status="ok"`) >= 1);
    assert.ok(value(`${where},server="notes",tool="notes_write_note",status="denied"`) >= 1);
  });

  test('a GET (no server-initiated stream) gets 405 with allow: POST', async () => {
    const res = await fetch(`${gw.url}/mcp`, {
      headers: { 'x-api-key': 'bob-key', accept: 'text/event-stream' },
    });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST');
  });

  test('every upstream down: the request leaves through the error port with 502', async () => {
    const res = await fetch(`${gw.url}/down`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    assert.equal(res.status, 502);
    assert.equal(res.headers.get('x-mcp-port'), 'error');
    const body = (await res.json()) as { error: string; message: string };
    assert.equal(body.error, 'bad_gateway');
    assert.match(body.message, /every MCP server is down: gone .*missing/);
  });
});

/** One JSON-RPC request to a node instance, as the listener would hand it over. */
function rpc(method: string, params: Record<string, unknown>, id = 1) {
  return requestContext({
    method: 'POST',
    url: '/mcp',
    headers: {
      host: 'gateway.test',
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method, params })),
  });
}

describe('mcp-proxy node: tool calls are logged and traced', () => {
  let web: WebUpstream;
  before(async () => {
    web = await startWebUpstream();
  });
  after(async () => {
    await web?.close();
  });

  test('each call is on message.mcp.tool_calls and in the log with tool, server, duration and status', async () => {
    const { logger, records } = capturingLogger();
    const node = instantiate(
      mcpProxy,
      {
        servers: [{ name: 'web', url: web.url, headers: { authorization: `Bearer ${WEB_TOKEN}` } }],
        access: [{ consumer: 'alice', deny: ['web_delete*'] }],
      },
      pluginEnv({ logger, policy: 'p', nodeId: 'mcp' }),
    );
    try {
      const ok = rpc('tools/call', { name: 'web_add', arguments: { a: 1, b: 1 } });
      ok.setConsumer({ name: 'bob' });
      assert.equal(await node.run(ok), 'success');
      assert.equal(ok.response.status, 200);
      const answer = JSON.parse(ok.response.body!.toString()) as { result: CallToolResult };
      assert.equal(text(answer.result), 'sum=2');
      const [call] = ok.message['mcp.tool_calls'] as Record<string, unknown>[];
      assert.equal(call?.tool, 'web_add');
      assert.equal(call?.server, 'web');
      assert.equal(call?.status, 'ok');
      assert.equal(typeof call?.duration_ms, 'number');
      const logged = records.find((r) => r.msg === 'mcp-proxy: tool call' && r.tool === 'web_add');
      assert.ok(logged, 'the call is logged');
      assert.equal(logged.server, 'web');
      assert.equal(logged.consumer, 'bob');
      assert.equal(typeof logged.duration_ms, 'number');

      const denied = rpc('tools/call', { name: 'web_delete_page', arguments: {} });
      denied.setConsumer({ name: 'alice' });
      await node.run(denied);
      const [refused] = denied.message['mcp.tool_calls'] as Record<string, unknown>[];
      assert.equal(refused?.status, 'denied');
      assert.match(String(refused?.error), /denied for consumer 'alice'/);
      assert.ok(records.some((r) => r.tool === 'web_delete_page' && r.status === 'denied' && r.level === 40));
    } finally {
      await node.close?.();
    }
  });
});

describe('mcp-proxy config', () => {
  const reject = (config: unknown, pattern: RegExp) =>
    assert.throws(() => instantiate(mcpProxy, config), pattern);

  test('a server name with _ is refused (the tool prefix ends at the first _)', () => {
    reject({ servers: [{ name: 'my_docs', url: 'http://127.0.0.1:1/mcp' }] }, /letters, digits/);
  });
  test('a server with both url and command, or neither, is refused', () => {
    reject(
      { servers: [{ name: 'a', url: 'http://127.0.0.1:1/mcp', command: 'node' }] },
      /exactly one of url/,
    );
    reject({ servers: [{ name: 'a' }] }, /exactly one of url/);
  });
  test('two servers with one name are refused', () => {
    reject(
      {
        servers: [
          { name: 'a', url: 'http://127.0.0.1:1/mcp' },
          { name: 'a', command: 'node' },
        ],
      },
      /names two servers/,
    );
  });
  test('a url with credentials or another scheme is refused', () => {
    reject({ servers: [{ name: 'a', url: 'http://u:p@127.0.0.1:1/mcp' }] }, /must not carry credentials/);
    reject({ servers: [{ name: 'a', url: 'ftp://127.0.0.1/mcp' }] }, /http or https/);
  });
  test('an access rule naming both consumer and group is refused', () => {
    reject(
      { servers: [{ name: 'a', command: 'node' }], access: [{ consumer: 'x', group: 'y', deny: ['*'] }] },
      /both consumer and group/,
    );
  });
});

test('mcp-proxy globs: * any run, ? one character, the rest literal', () => {
  const g = (p: string, name: string) => compileGlob(p).matches(name);
  assert.ok(g('web_*', 'web_add'));
  assert.ok(g('*_delete*', 'files_delete_all'));
  assert.ok(g('db_q?ery', 'db_query'));
  assert.ok(!g('db_q?ery', 'db_qery'));
  assert.ok(!g('web_*', 'notes_add'));
  assert.ok(g('*', ''));
  assert.ok(!g('web.add', 'webXadd'), 'a dot is a dot');
  assert.ok(g('a*b*c', 'aXXbYYc') && !g('a*b*c', 'aXXbYY'));
});

test('mcp-proxy secrets: credential headers and env values are masked in the Admin API and MCP replies', () => {
  const masked = maskSecrets({
    servers: [
      {
        name: 'web',
        url: 'http://h/mcp',
        headers: { authorization: 'Bearer s3cr3t', accept: 'application/json' },
      },
      { name: 'gh', command: 'node', env: { GITHUB_TOKEN: 'ghp_secret', LOG_LEVEL: 'debug' } },
    ],
  });
  const text = JSON.stringify(masked);
  assert.ok(!text.includes('s3cr3t') && !text.includes('ghp_secret'), text);
  assert.ok(text.includes('application/json') && text.includes('debug'), 'harmless values stay visible');
});

test('a stdio command the operator did not list in SWITCHYARD_MCP_COMMANDS is never started', async () => {
  const dir = tempDir();
  const marker = join(dir.path, 'started');
  const env = pluginEnv();
  process.env.SWITCHYARD_MCP_COMMANDS = '/opt/other-server';
  let node;
  try {
    node = instantiate(
      mcpProxy,
      {
        servers: [
          {
            name: 'sh',
            command: process.execPath,
            args: ['-e', `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'x')`],
          },
        ],
      },
      env,
    );
  } finally {
    process.env.SWITCHYARD_MCP_COMMANDS = ALLOWED_COMMANDS;
  }
  try {
    assert.match(env.warnings[0]?.message ?? '', /not in SWITCHYARD_MCP_COMMANDS/);
    await assert.rejects(Promise.resolve(node.run(rpc('tools/list', {}))), (err: Error) =>
      /every MCP server is down: sh \(command .* is not in SWITCHYARD_MCP_COMMANDS/.test(err.message),
    );
    assert.equal(existsSync(marker), false, 'the program never ran');
  } finally {
    await node.close?.();
    dir.remove();
  }
});

test('an env variable that changes what an allowed program loads (NODE_OPTIONS, LD_PRELOAD, PATH) keeps it from starting', async () => {
  for (const name of ['NODE_OPTIONS', 'LD_PRELOAD', 'PATH', 'npm_config_registry']) {
    const env = pluginEnv();
    const node = instantiate(
      mcpProxy,
      { servers: [{ name: 'n', command: process.execPath, args: [STDIO_SERVER], env: { [name]: 'x' } }] },
      env,
    );
    try {
      assert.equal(env.warnings[0]?.key, `servers[0].env.${name}`);
      await assert.rejects(
        Promise.resolve(node.run(rpc('tools/list', {}))),
        new RegExp(`env ${name} can change`),
      );
    } finally {
      await node.close?.();
    }
  }
});
