import { definePlugin, type PluginEnv } from '../../core/plugin.js';
import type { Context } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import { mcpMetrics } from './mcp-proxy-node.js';

interface McpRefuseConfig {
  message?: string;
}

type McpToolPort = 'success' | 'call';

const DEFAULT_REFUSAL = 'the gateway limits calls of this tool';

/** One JSON-RPC request as the node reads it; undefined when the body is not one. */
function jsonRpcOf(body: Buffer | null): unknown {
  if (body === null || body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

interface ToolCall {
  id: string | number | null;
  name: string;
}

function toolCallOf(message: unknown): ToolCall | undefined {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return undefined;
  const m = message as { method?: unknown; id?: unknown; params?: { name?: unknown } };
  if (m.method !== 'tools/call' || typeof m.params?.name !== 'string') return undefined;
  const id = typeof m.id === 'string' || typeof m.id === 'number' ? m.id : null;
  return { id, name: m.params.name };
}

/** The prefix of a prefixed tool name (`docs_search` → `docs`), as mcp-proxy routes it. */
function serverOf(tool: string): string {
  const cut = tool.indexOf('_');
  return cut <= 0 ? '' : tool.slice(0, cut);
}

/**
 * Per-tool limits for mcp-proxy with the existing limit nodes (docs/plugins/mcp-tool.md):
 * mcp-tool reads the MCP request before mcp-proxy and, for a `tools/call`, puts the (prefixed)
 * tool name on the context (`message.mcp.tool`, `message.mcp.server`) and leaves by `call`, so a
 * limit node keyed on `{{message.mcp.tool}}` can sit between it and mcp-proxy; anything else
 * leaves by `success`. mcp-refuse, on the limit's `limited` port, answers the call with an MCP
 * tool result `isError: true`, as mcp-proxy answers a denied tool.
 */
export const mcpTool = definePlugin({
  type: 'mcp-tool',
  category: 'ai',
  description:
    'Before mcp-proxy: put the called MCP tool on the context (message.mcp.tool) and send tool calls out of port call, to a limit node keyed on it.',
  schema: { type: 'object', additionalProperties: false, properties: {} },
  outputs: {
    success: {
      kind: 'success',
      description: 'Not a tools/call (initialize, listings, notifications…); go on to mcp-proxy.',
    },
    call: {
      kind: 'outcome',
      description: 'A tools/call; message.mcp.tool names the tool. Wire to the limit node.',
    },
  },
  readsResponseBody: () => false,
  create() {
    return {
      run(ctx: Context): McpToolPort {
        const message = jsonRpcOf(ctx.request.body);
        if (Array.isArray(message)) {
          // A batch (protocol 2025-03-26) would carry calls past the limit: one call per request.
          if (message.some((m) => toolCallOf(m) !== undefined)) {
            const text =
              'Invalid Request: a batch must not carry tools/call here; send one call per request.';
            ctx.response.json(400, { jsonrpc: '2.0', error: { code: -32600, message: text }, id: null });
            throw new NodeError('MCP_REQUEST_REFUSED', `mcp-tool: ${text}`, {
              status: 400,
              responsePrepared: true,
            });
          }
          return 'success';
        }
        const call = toolCallOf(message);
        if (call === undefined) return 'success';
        ctx.message['mcp.tool'] = call.name;
        ctx.message['mcp.server'] = serverOf(call.name);
        return 'call';
      },
    };
  },
});

/**
 * Wired to a limit node's `limited` port after mcp-tool: answers the MCP request the limit
 * refused with what MCP clients read, a tool result `isError: true` naming the tool and the
 * reason (a `tools/call`), or a JSON-RPC error (anything else), status 200.
 */
export const mcpRefuse = definePlugin({
  type: 'mcp-refuse',
  category: 'ai',
  description:
    "After a limit node's limited port: answer the refused MCP tool call with an MCP isError result naming the tool and the limit.",
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      message: {
        type: 'string',
        minLength: 1,
        maxLength: 1024,
        description: `The reason in the result text. Default: the limit's rejection message, else '${DEFAULT_REFUSAL}'.`,
      },
    },
  },
  outputs: {
    success: { kind: 'success', description: 'The MCP error answer is prepared; wire to client.' },
  },
  readsResponseBody: () => false,
  create(config: McpRefuseConfig, env: PluginEnv) {
    const metrics = mcpMetrics(env.scope);
    const where = { policy: env.policy, node: env.nodeId };
    return {
      run(ctx: Context): 'success' {
        const message = jsonRpcOf(ctx.request.body);
        const call = toolCallOf(message);
        const reason = config.message ?? limitMessage(ctx) ?? DEFAULT_REFUSAL;
        // The limit's 429 is replaced: MCP clients read a refused call as a tool result.
        if (call === undefined) {
          const id = (message as { id?: unknown } | undefined)?.id;
          ctx.response.json(200, {
            jsonrpc: '2.0',
            error: { code: -32000, message: `refused by the gateway: ${reason}` },
            id: typeof id === 'string' || typeof id === 'number' ? id : null,
          });
          return 'success';
        }
        const server = serverOf(call.name);
        const text = `tool '${call.name}' was refused by the gateway: ${reason}`;
        metrics.toolCalls.inc({ ...where, server, tool: call.name, status: 'limited' });
        env.logger.warn(
          { ...where, consumer: ctx.consumer?.name, tool: call.name, server, status: 'limited', error: text },
          'mcp-proxy: tool call',
        );
        ctx.response.json(200, {
          jsonrpc: '2.0',
          result: { content: [{ type: 'text', text }], isError: true },
          id: call.id,
        });
        return 'success';
      },
    };
  },
});

/** The message of a limit node's prepared rejection (`{"error_msg": …}`), when there is one. */
function limitMessage(ctx: Context): string | undefined {
  const body = ctx.response.body;
  if (body === null) return undefined;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as {
      error_msg?: unknown;
      error?: { message?: unknown };
    };
    const message = parsed.error_msg ?? parsed.error?.message;
    return typeof message === 'string' && message !== '' ? message : undefined;
  } catch {
    return undefined;
  }
}
