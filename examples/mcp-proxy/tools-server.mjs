// A small MCP server over stdio for examples/mcp-proxy/gateway.yaml, built with the official SDK
// (@modelcontextprotocol/sdk, a dependency of switchyard). `node tools-server.mjs notes` serves
// tools add_note, list_notes and delete_notes, a prompt and a resource; `node tools-server.mjs
// clock` serves the tool now. Notes live in this process's memory.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

const kind = process.argv[2] === 'clock' ? 'clock' : 'notes';
const notes = [];
const text = (t) => ({ content: [{ type: 'text', text: t }] });
const input = (properties = {}) => ({ type: 'object', properties, required: Object.keys(properties) });

const tools =
  kind === 'clock'
    ? {
        now: {
          description: 'The current time (ISO 8601, UTC)',
          inputSchema: input(),
          run: () => text(new Date().toISOString()),
        },
      }
    : {
        add_note: {
          description: 'Add a note',
          inputSchema: input({ text: { type: 'string' } }),
          run: (args) => {
            notes.push(String(args.text));
            return text(`noted (${notes.length} notes)`);
          },
        },
        list_notes: {
          description: 'List the notes',
          inputSchema: input(),
          run: () => text(notes.join('\n')),
        },
        delete_notes: {
          description: 'Delete every note',
          inputSchema: input(),
          run: () => text(`deleted ${notes.splice(0).length} notes`),
        },
      };

const server = new Server(
  { name: kind, version: '1.0.0' },
  { capabilities: { tools: {}, prompts: {}, resources: {} } },
);
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: Object.entries(tools).map(([name, t]) => ({
    name,
    description: t.description,
    inputSchema: t.inputSchema,
  })),
}));
server.setRequestHandler(CallToolRequestSchema, (req) => {
  const tool = tools[req.params.name];
  if (tool === undefined) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${req.params.name}`);
  return tool.run(req.params.arguments ?? {});
});
server.setRequestHandler(ListPromptsRequestSchema, () => ({
  prompts: kind === 'notes' ? [{ name: 'review', description: 'Review the notes' }] : [],
}));
server.setRequestHandler(GetPromptRequestSchema, () => ({
  messages: [{ role: 'user', content: { type: 'text', text: `Review these notes:\n${notes.join('\n')}` } }],
}));
server.setRequestHandler(ListResourcesRequestSchema, () => ({
  resources: [{ uri: `memo://${kind}/about`, name: 'about', mimeType: 'text/plain' }],
}));
server.setRequestHandler(ReadResourceRequestSchema, (req) => {
  if (req.params.uri !== `memo://${kind}/about`)
    throw new McpError(ErrorCode.InvalidParams, `no resource ${req.params.uri}`);
  return { contents: [{ uri: req.params.uri, mimeType: 'text/plain', text: `the ${kind} example server` }] };
});

await server.connect(new StdioServerTransport());
