import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { freePort } from '../support/free-port.js';
import { READ_TOKEN, WRITE_TOKEN, startMcp, type McpHarness } from './harness.js';

const BIN = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));

const env = (vars: Record<string, string>): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) out[k] = v;
  return { ...out, ...vars };
};

/** `switchyard mcp --stdio` as an agent starts it, driven by the SDK's own stdio client. */
async function stdioClient(vars: Record<string, string>): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', '--stdio'],
    env: env(vars),
    stderr: 'pipe',
  });
  const client = new Client({ name: 'switchyard-stdio-test', version: '0.0.0' });
  await client.connect(transport);
  return client;
}

const text = (result: unknown): string => {
  const first = (result as CallToolResult).content[0];
  return first?.type === 'text' ? first.text : '';
};

/** The text of the first content of a resources/read answer. */
const textOf = (contents: readonly ({ text: string } | { blob: string })[]): string | undefined => {
  const first = contents[0];
  return first !== undefined && 'text' in first ? first.text : undefined;
};

describe('switchyard mcp --stdio', () => {
  let h: McpHarness;
  let reader: Client;
  let writer: Client;
  before(async () => {
    h = await startMcp();
    [reader, writer] = await Promise.all([
      stdioClient({ SWITCHYARD_MCP_TOKEN: READ_TOKEN, SWITCHYARD_MCP_URL: h.endpoint }),
      stdioClient({ SWITCHYARD_ADMIN_URL: h.url, SWITCHYARD_MCP_TOKEN: WRITE_TOKEN }),
    ]);
  });
  after(async () => {
    await Promise.all([reader?.close(), writer?.close()]);
    await h.stop();
  });

  test('mcp stdio: the same tools as over HTTP, by the scope of the token', async () => {
    const http = await h.connect(READ_TOKEN);
    const overHttp = (await http.listTools()).tools.map((t) => t.name);
    const readTools = (await reader.listTools()).tools.map((t) => t.name);
    assert.deepEqual(readTools, overHttp);
    assert.ok(readTools.includes('get_route') && !readTools.includes('put_route'));
    const writeTools = (await writer.listTools()).tools.map((t) => t.name);
    assert.ok(writeTools.includes('put_route') && writeTools.includes('delete_policy'));
    assert.equal(reader.getServerVersion()?.name, 'switchyard');
  });

  test('mcp stdio: a read tool answers from the running gateway', async () => {
    const result = await reader.callTool({ name: 'list_routes', arguments: {} });
    assert.notEqual(result.isError, true, text(result));
    const routes = JSON.parse(text(result)) as { routes: { name: string }[] } | { name: string }[];
    const names = (Array.isArray(routes) ? routes : routes.routes).map((r) => r.name);
    assert.deepEqual(
      names,
      ((await (await h.call('GET', '/api/routes')).json()) as { name: string }[]).map((r) => r.name),
    );
  });

  test('mcp stdio: a read token stays read-only (a write tool answers forbidden)', async () => {
    const before = await (await h.call('GET', '/api/routes')).text();
    const result = await reader.callTool({
      name: 'delete_route',
      arguments: { name: 'hello' },
    });
    assert.equal(result.isError, true);
    assert.equal((JSON.parse(text(result)) as { code: string }).code, 'forbidden');
    assert.equal(await (await h.call('GET', '/api/routes')).text(), before);
  });

  test('mcp stdio: a write token writes (dry run) through the gateway', async () => {
    const result = await writer.callTool({
      name: 'put_route',
      arguments: {
        name: 'stdio-added',
        route: { match: { path: '/stdio' }, policy: 'hello-policy' },
        dry_run: true,
      },
    });
    assert.notEqual(result.isError, true, text(result));
  });

  test('mcp stdio: resources and prompts are served too', async () => {
    const { resources } = await reader.listResources();
    assert.ok(resources.some((r) => r.uri === 'switchyard://node-types/upstream'));
    const page = await reader.readResource({ uri: 'switchyard://docs/concepts/mcp' });
    assert.match(String(textOf(page.contents)), /^# MCP/);
    const prompt = await reader.getPrompt({ name: 'review_policy', arguments: { policy_name: 'echo' } });
    assert.equal(prompt.messages.length, 1);
  });
});

describe('switchyard mcp --stdio failures', () => {
  /** Runs the command with stdin closed; resolves with its exit code and stderr. */
  const runOnce = (
    args: string[],
    vars: Record<string, string>,
  ): Promise<{ status: number | null; stderr: string }> =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], {
        env: vars,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('exit', (status) => resolve({ status, stderr }));
    });

  test('mcp stdio: without a token or without --stdio it exits 2 and says why', async () => {
    const vars = env({});
    delete vars['SWITCHYARD_MCP_TOKEN'];
    const [noToken, noFlag] = await Promise.all([
      runOnce(['mcp', '--stdio'], vars),
      runOnce(['mcp'], env({ SWITCHYARD_MCP_TOKEN: READ_TOKEN })),
    ]);
    assert.equal(noToken.status, 2);
    assert.match(noToken.stderr, /SWITCHYARD_MCP_TOKEN/);
    assert.equal(noFlag.status, 2);
    assert.match(noFlag.stderr, /--stdio/);
  });

  test('mcp stdio: a wrong token or an unreachable gateway comes back as an error naming the endpoint', async () => {
    const h = await startMcp();
    const dead = `http://127.0.0.1:${await freePort()}/mcp`;
    try {
      await Promise.all(
        [
          { SWITCHYARD_MCP_TOKEN: 'not-a-token-0123456789', SWITCHYARD_MCP_URL: h.endpoint },
          { SWITCHYARD_MCP_TOKEN: READ_TOKEN, SWITCHYARD_MCP_URL: dead },
        ].map((vars) =>
          assert.rejects(stdioClient(vars), (err: unknown) => {
            assert.ok(err instanceof McpError, String(err));
            assert.ok(err.message.includes(vars.SWITCHYARD_MCP_URL), err.message);
            return true;
          }),
        ),
      );
    } finally {
      await h.stop();
    }
  });
});
