import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  McpError,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { validateAgainst } from '../../config/schema-validate.js';
import { errorResult, forbidden, issueLines, okResult, ToolError, toToolError } from './errors.js';
import { PROMPTS, promptByName } from './prompts.js';
import { listResources, readResource, RESOURCE_TEMPLATES } from './resources.js';
import { TOOLS, toolByName, type ToolContext, type ToolDef } from './tools/index.js';
import { asActor } from '../../config/history.js';

const VERSION = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

const INSTRUCTIONS = `Switchyard is a policy-graph API gateway. A route matches requests (first match wins) and runs a policy: a graph of plugin nodes wired from named output ports to input ports, listener.out → … → client.in. Every success and outcome port of a node must be wired or the policy does not compile; error ports fall back to the policy's catch-all.
Authoring: list_node_types, then get_node_type for each type you use (ports, config schema, docs) → draft → validate_policy → put_policy(dry_run=true) → put_policy. Writes are live at once; no reload is needed.
Debugging: list_traces / get_trace / get_trace_step and run_sandbox need debug.enabled (and debug.sandbox) in system.yaml.
A read token lists and reads (secrets masked); validate_*, run_sandbox and every change need a write token, which is admin-equivalent.
Resources: the documentation (switchyard://docs/concepts/<page>, switchyard://docs/plugins/<type>) and each node type's ports and config JSON Schema (switchyard://node-types/<type>).
Tool failures come back as {code, message, errors?, hint?}. With a read-only token, write tools answer forbidden: return the YAML for a human to apply.`;

/** JSON-RPC code the MCP specification gives an unknown resource URI. */
const RESOURCE_NOT_FOUND = -32002;

const allowed = (tool: ToolDef, ctx: ToolContext): boolean =>
  tool.scope === 'read' || ctx.principal.scope === 'write';

/**
 * One MCP server for one HTTP request (stateless Streamable HTTP): the
 * principal of this request decides which tools are listed and callable.
 * It uses the SDK's low-level Server because tools/list depends on the
 * caller's scope and tool errors carry our own `{code, …}` body.
 */
export function createMcpServer(ctx: ToolContext): Server {
  const server = new Server(
    { name: 'switchyard', version: VERSION },
    { capabilities: { tools: {}, prompts: {}, resources: {} }, instructions: INSTRUCTIONS },
  );

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.filter((t) => allowed(t, ctx)).map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: t.inputSchema,
    })),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: raw } = request.params;
    const tool = toolByName(name);
    if (tool === undefined) throw new McpError(ErrorCode.InvalidParams, `unknown tool '${name}'`);
    const started = performance.now();
    const error = await callTool(tool, structuredClone(raw ?? {}), ctx);
    const result = error instanceof ToolError ? errorResult(error) : error;
    ctx.logger.info(
      {
        tool: name,
        token: ctx.principal.name ?? 'unnamed',
        scope: ctx.principal.scope,
        outcome: error instanceof ToolError ? `error:${error.code}` : 'ok',
        duration_ms: Math.round(performance.now() - started),
      },
      'mcp tool call',
    );
    return result;
  });

  // The docs and the node type catalog: the same for every scope, nothing of the configuration.
  server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: listResources() }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: RESOURCE_TEMPLATES,
  }));
  server.setRequestHandler(ReadResourceRequestSchema, (request) => {
    const contents = readResource(request.params.uri);
    if (contents === undefined)
      throw new McpError(RESOURCE_NOT_FOUND, `no resource '${request.params.uri}'`, {
        uri: request.params.uri,
      });
    return { contents: [contents] };
  });

  server.setRequestHandler(ListPromptsRequestSchema, () => ({
    prompts: PROMPTS.map(({ name, description, arguments: args }) => ({
      name,
      description,
      arguments: args,
    })),
  }));

  server.setRequestHandler(GetPromptRequestSchema, (request) => {
    const prompt = promptByName(request.params.name);
    if (prompt === undefined)
      throw new McpError(ErrorCode.InvalidParams, `unknown prompt '${request.params.name}'`);
    const args = request.params.arguments ?? {};
    const missing = prompt.arguments.filter((a) => a.required && (args[a.name] ?? '').trim() === '');
    if (missing.length > 0)
      throw new McpError(
        ErrorCode.InvalidParams,
        `prompt '${prompt.name}' needs ${missing.map((a) => a.name).join(', ')}`,
      );
    return {
      description: prompt.description,
      messages: [{ role: 'user' as const, content: { type: 'text' as const, text: prompt.render(args) } }],
    };
  });

  return server;
}

/** The tool's result, or the ToolError it ended with. */
async function callTool(
  tool: ToolDef,
  args: Record<string, unknown>,
  ctx: ToolContext,
): Promise<CallToolResult | ToolError> {
  if (!allowed(tool, ctx)) return forbidden(tool.name);
  const issues = validateAgainst(tool.inputSchema, args, '');
  if (issues.length > 0)
    return new ToolError('invalid_input', `invalid arguments for ${tool.name}`, issueLines(issues));
  try {
    // Applies it makes are the token's, source `mcp` in the history (docs/config-as-code.md#history).
    return okResult(
      await asActor({ user: ctx.principal.name ?? null, via: 'mcp' }, () => tool.run(args, ctx)),
    );
  } catch (err) {
    const error = toToolError(err);
    if (error.code === 'internal') ctx.logger.error({ err, tool: tool.name }, 'mcp tool failed');
    return error;
  }
}
