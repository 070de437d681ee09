import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startAdmin, type AdminHarness, type HarnessOptions } from '../admin/harness.js';

export const READ_TOKEN = 'read-token-0123456789abcdef';
export const WRITE_TOKEN = 'write-token-0123456789abcdef';

export interface McpHarness extends AdminHarness {
  /** `<admin>/mcp`. */
  endpoint: string;
  /** An SDK client connected (initialize done) with `Authorization: Bearer <token>`. */
  connect(token: string): Promise<Client>;
  stop(): Promise<void>;
}

export interface McpHarnessOptions extends HarnessOptions {
  /** Extra keys of `admin.mcp`, as YAML flow entries. */
  mcp?: string;
}

/** An in-process gateway whose admin listener serves MCP with one read and one write token. */
export async function startMcp(opts: McpHarnessOptions = {}): Promise<McpHarness> {
  const mcp = `mcp: { enabled: true, tokens: [{ token: ${READ_TOKEN}, scope: read, name: reader }, { token: ${WRITE_TOKEN}, scope: write, name: writer }]${opts.mcp === undefined ? '' : `, ${opts.mcp}`} }`;
  const harness = await startAdmin({
    ...opts,
    admin: opts.admin === undefined ? mcp : `${opts.admin}, ${mcp}`,
  });
  const clients: Client[] = [];
  const endpoint = `${harness.url}/mcp`;
  return {
    ...harness,
    endpoint,
    async connect(token) {
      const client = new Client({ name: 'switchyard-test', version: '0.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      });
      await client.connect(transport);
      clients.push(client);
      return client;
    },
    async stop() {
      await Promise.all(clients.map((c) => c.close()));
      await harness.stop();
    },
  };
}

/** The JSON (or text) a tool answered, plus whether it was a tool error. */
export async function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ isError: boolean; value: unknown; text: string }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const first = result.content[0];
  const text = first?.type === 'text' ? first.text : '';
  let value: unknown = text;
  try {
    value = JSON.parse(text);
  } catch {
    // Plain text (export_config answers YAML).
  }
  return { isError: result.isError === true, value, text };
}

/** A tool call that must succeed; returns its JSON value. */
export async function ok<T = Record<string, unknown>>(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<T> {
  const r = await call(client, name, args);
  if (r.isError) throw new Error(`${name} failed: ${r.text}`);
  return r.value as T;
}

/** A tool call that must fail; returns the `{code, message, errors?, hint?}` body. */
export async function fails(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ code: string; message: string; errors?: string[]; hint?: string }> {
  const r = await call(client, name, args);
  if (!r.isError) throw new Error(`${name} unexpectedly succeeded: ${r.text}`);
  return r.value as { code: string; message: string; errors?: string[]; hint?: string };
}
