import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type Prompt,
  type Resource,
  type ResourceTemplate,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { Counter, type Registry } from 'prom-client';
import type { Context } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { GatewayScope, NodeInstance } from '../../core/plugin.js';
import type { McpAccess } from './mcp-proxy-access.js';
import { messageOf, type Upstream } from './mcp-proxy-upstream.js';

/** Codes the SDK client raises itself, not an upstream's answer. */
const LOCAL_CODES = new Set<number>([ErrorCode.ConnectionClosed, ErrorCode.RequestTimeout]);

/** Most pages of one upstream listing followed (a server that pages forever is cut off). */
const MAX_PAGES = 50;

export interface McpProxySettings {
  upstreams: Upstream[];
  access: McpAccess;
  /** Deadline of one upstream request (a listing page, a tool call). */
  timeoutMs: number;
  metrics: McpMetrics;
  where: { policy: string; node: string };
  logger: Logger;
}

/** One tool call as the trace shows it (`message.mcp.tool_calls`). */
interface ToolCallRecord {
  tool: string;
  server: string;
  status: 'ok' | 'error' | 'denied';
  duration_ms: number;
  error?: string;
}

/** `gateway_mcp_tool_calls_total`, one series set per gateway. */
export class McpMetrics {
  readonly toolCalls: Counter<'policy' | 'node' | 'server' | 'tool' | 'status'>;
  constructor(registry: Registry) {
    this.toolCalls = new Counter({
      name: 'gateway_mcp_tool_calls_total',
      help: 'MCP tool calls through mcp-proxy, by policy, node, upstream server, prefixed tool name and status (ok, error: the upstream failed or answered isError, denied: refused by the access rules).',
      labelNames: ['policy', 'node', 'server', 'tool', 'status'],
      registers: [registry],
    });
  }
}

export function mcpMetrics(scope: GatewayScope): McpMetrics {
  return scope.shared('ai:mcp-metrics', () => new McpMetrics(scope.metrics.registry));
}

/** Headers of the client's request the MCP transport reads. */
const PASSED_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'];

/**
 * The mcp-proxy node: every request is one Streamable HTTP exchange with a fresh stateless MCP
 * server whose tools, prompts and resources are those of the upstreams, tool and prompt names
 * prefixed `<server>_`.
 */
export class McpProxyNode implements NodeInstance<'success'> {
  readonly #s: McpProxySettings;
  readonly #byName: Map<string, Upstream>;

  constructor(settings: McpProxySettings) {
    this.#s = settings;
    this.#byName = new Map(settings.upstreams.map((u) => [u.name, u]));
  }

  async run(ctx: Context): Promise<'success'> {
    const method = ctx.request.method;
    if (method !== 'POST') {
      // Stateless: no server-initiated stream (GET) and no session to end (DELETE).
      ctx.response.json(405, {
        jsonrpc: '2.0',
        error: { code: -32000, message: 'Method not allowed: this MCP server is stateless (POST only).' },
        id: null,
      });
      ctx.response.headers.allow = 'POST';
      return 'success';
    }
    const live = await this.#live();
    if (live.length === 0) {
      const why = this.#s.upstreams.map((u) => `${u.name} (${u.lastError || 'unavailable'})`).join(', ');
      throw new NodeError('MCP_UPSTREAM_UNAVAILABLE', `every MCP server is down: ${why}`, {
        metadata: { servers: this.#s.upstreams.map((u) => u.name) },
      });
    }
    const server = this.#server(ctx);
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true });
    await server.connect(transport);
    try {
      const headers = new Headers();
      for (const name of PASSED_HEADERS) {
        const v = ctx.request.header(name);
        if (v !== undefined) headers.set(name, v);
      }
      const body = ctx.request.body;
      const request = new Request('http://mcp-proxy.local/', {
        method: 'POST',
        headers,
        body: body === null ? '' : new Uint8Array(body),
        signal: ctx.signal,
      });
      const answer = await transport.handleRequest(request);
      const res = ctx.response;
      const payload = Buffer.from(await answer.arrayBuffer());
      res.setBody(payload);
      res.status = answer.status;
      answer.headers.forEach((value, name) => {
        if (name !== 'content-length') res.headers[name] = value;
      });
      return 'success';
    } finally {
      void transport.close().catch(() => {});
      void server.close().catch(() => {});
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.#s.upstreams.map((u) => u.close()));
  }

  /** Upstreams with a session now (those down and due for a retry are tried first). */
  async #live(): Promise<{ upstream: Upstream; client: Client }[]> {
    const clients = await Promise.all(this.#s.upstreams.map((u) => u.ready()));
    const out: { upstream: Upstream; client: Client }[] = [];
    clients.forEach((client, i) => {
      if (client !== undefined) out.push({ upstream: this.#s.upstreams[i]!, client });
    });
    return out;
  }

  /** The upstream a prefixed name belongs to and the name there. */
  #route(prefixed: string): { upstream: Upstream; name: string } | undefined {
    const cut = prefixed.indexOf('_');
    if (cut <= 0) return undefined;
    const upstream = this.#byName.get(prefixed.slice(0, cut));
    if (upstream === undefined) return undefined;
    return { upstream, name: prefixed.slice(cut + 1) };
  }

  /** Runs `fn` on every live upstream with the capability; one that fails is left out (and logged). */
  async #each<T>(
    capability: 'tools' | 'prompts' | 'resources',
    what: string,
    fn: (client: Client, upstream: Upstream) => Promise<T[]>,
  ): Promise<T[]> {
    const live = await this.#live();
    const lists = await Promise.all(
      live.map(async ({ upstream, client }) => {
        if (client.getServerCapabilities()?.[capability] === undefined) return [];
        try {
          return await fn(client, upstream);
        } catch (err) {
          this.#s.logger.warn(
            { ...this.#s.where, server: upstream.name, err: messageOf(err) },
            `mcp-proxy: listing ${what} failed; the server is left out`,
          );
          upstream.drop(err);
          return [];
        }
      }),
    );
    return lists.flat();
  }

  async #toolsOf(client: Client, upstream: Upstream): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const r = await client.listTools(cursor === undefined ? {} : { cursor }, {
        timeout: this.#s.timeoutMs,
      });
      tools.push(...r.tools);
      cursor = r.nextCursor;
      if (cursor === undefined) break;
    }
    upstream.knownTools = new Set(tools.map((t) => t.name));
    return tools;
  }

  #server(ctx: Context): Server {
    const s = this.#s;
    const server = new Server(
      { name: 'switchyard-mcp-proxy', version: '1' },
      { capabilities: { tools: {}, prompts: {}, resources: {} } },
    );
    const opts = { timeout: s.timeoutMs };

    server.setRequestHandler(ListToolsRequestSchema, async () => {
      const tools = await this.#each('tools', 'tools', async (client, upstream) =>
        (await this.#toolsOf(client, upstream))
          .map((t) => ({ ...t, name: `${upstream.name}_${t.name}` }))
          .filter((t) => s.access.verdict(ctx.consumer, t.name).allowed),
      );
      return { tools };
    });

    server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
      const prefixed = req.params.name;
      const route = this.#route(prefixed);
      if (route === undefined) throw new McpError(ErrorCode.InvalidParams, `unknown tool '${prefixed}'`);
      const { upstream, name } = route;
      const started = performance.now();
      const record = (status: ToolCallRecord['status'], error?: string): void => {
        const entry: ToolCallRecord = {
          tool: prefixed,
          server: upstream.name,
          status,
          duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
          ...(error === undefined ? {} : { error }),
        };
        const list = (ctx.message['mcp.tool_calls'] as ToolCallRecord[] | undefined) ?? [];
        list.push(entry);
        ctx.message['mcp.tool_calls'] = list;
        s.metrics.toolCalls.inc({ ...s.where, server: upstream.name, tool: prefixed, status });
        const log = { ...s.where, consumer: ctx.consumer?.name, ...entry };
        if (status === 'ok') s.logger.info(log, 'mcp-proxy: tool call');
        else s.logger.warn(log, 'mcp-proxy: tool call');
      };
      const verdict = s.access.verdict(ctx.consumer, prefixed);
      if (!verdict.allowed) {
        const who = ctx.consumer === undefined ? 'an anonymous client' : `consumer '${ctx.consumer.name}'`;
        const text = `tool '${prefixed}' is denied for ${who} by the gateway (${verdict.reason})`;
        record('denied', text);
        return { content: [{ type: 'text', text }], isError: true } satisfies CallToolResult;
      }
      const client = await upstream.ready();
      if (client === undefined) {
        const text = `MCP server '${upstream.name}' is unavailable: ${upstream.lastError || 'not connected'}`;
        record('error', text);
        return { content: [{ type: 'text', text }], isError: true } satisfies CallToolResult;
      }
      if (!upstream.knownTools.has(name)) {
        try {
          await this.#toolsOf(client, upstream);
        } catch {
          // The call below reports the failure.
        }
        if (!upstream.knownTools.has(name))
          throw new McpError(ErrorCode.InvalidParams, `unknown tool '${prefixed}'`);
      }
      try {
        const result = (await client.callTool(
          { name, ...(req.params.arguments === undefined ? {} : { arguments: req.params.arguments }) },
          undefined,
          { ...opts, signal: extra.signal },
        )) as CallToolResult;
        record(result.isError === true ? 'error' : 'ok', result.isError === true ? 'isError' : undefined);
        return result;
      } catch (err) {
        record('error', messageOf(err));
        // The upstream's own JSON-RPC error goes to the client as it is; a lost session or a
        // deadline (the SDK's local codes) is this upstream failing.
        if (err instanceof McpError && !LOCAL_CODES.has(err.code)) throw err;
        upstream.drop(err);
        const text = `MCP server '${upstream.name}' failed: ${messageOf(err)}`;
        return { content: [{ type: 'text', text }], isError: true } satisfies CallToolResult;
      }
    });

    server.setRequestHandler(ListPromptsRequestSchema, async () => {
      const prompts = await this.#each('prompts', 'prompts', async (client, upstream) => {
        const out: Prompt[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < MAX_PAGES; page++) {
          const r = await client.listPrompts(cursor === undefined ? {} : { cursor }, opts);
          out.push(...r.prompts.map((p) => ({ ...p, name: `${upstream.name}_${p.name}` })));
          cursor = r.nextCursor;
          if (cursor === undefined) break;
        }
        return out;
      });
      return { prompts };
    });

    server.setRequestHandler(GetPromptRequestSchema, async (req) => {
      const route = this.#route(req.params.name);
      const client = route === undefined ? undefined : await route.upstream.ready();
      if (route === undefined || client === undefined)
        throw new McpError(ErrorCode.InvalidParams, `unknown prompt '${req.params.name}'`);
      return client.getPrompt({ ...req.params, name: route.name }, opts);
    });

    server.setRequestHandler(ListResourcesRequestSchema, async () => {
      const resources = await this.#each('resources', 'resources', async (client) => {
        const out: Resource[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < MAX_PAGES; page++) {
          const r = await client.listResources(cursor === undefined ? {} : { cursor }, opts);
          out.push(...r.resources);
          cursor = r.nextCursor;
          if (cursor === undefined) break;
        }
        return out;
      });
      return { resources };
    });

    server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => {
      const resourceTemplates = await this.#each('resources', 'resource templates', async (client) => {
        const out: ResourceTemplate[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < MAX_PAGES; page++) {
          const r = await client.listResourceTemplates(cursor === undefined ? {} : { cursor }, opts);
          out.push(...r.resourceTemplates);
          cursor = r.nextCursor;
          if (cursor === undefined) break;
        }
        return out;
      });
      return { resourceTemplates };
    });

    // Resource URIs are the upstreams' own: each server is asked in order until one has it.
    server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
      let last: unknown;
      for (const { client } of await this.#live()) {
        if (client.getServerCapabilities()?.resources === undefined) continue;
        try {
          return await client.readResource(req.params, opts);
        } catch (err) {
          last = err;
        }
      }
      throw new McpError(
        ErrorCode.InvalidParams,
        `no MCP server has resource '${req.params.uri}'${last === undefined ? '' : `: ${messageOf(last)}`}`,
      );
    });

    return server;
  }
}
