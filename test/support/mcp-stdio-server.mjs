// An upstream MCP server over stdio for test/plugins/ai/mcp-proxy.test.ts, built with the
// official SDK: tools `echo`, `whoami` (its pid, so a test can kill it and see the restart),
// `write_note` (a tool tests deny), `calls` (how many times each tool ran in this process);
// a prompt `summarize`; a resource `memo://notes/readme`.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  McpError,
  ErrorCode,
} from '@modelcontextprotocol/sdk/types.js';

const counts = {};
const text = (t) => ({ content: [{ type: 'text', text: t }] });
const object = (properties = {}) => ({ type: 'object', properties, required: Object.keys(properties) });
const tools = {
  echo: {
    description: 'Echo a text',
    inputSchema: object({ text: { type: 'string' } }),
    run: (args) => text(`notes: ${args.text}`),
  },
  whoami: {
    description: 'The pid of this server',
    inputSchema: object(),
    run: () => text(String(process.pid)),
  },
  write_note: {
    description: 'Write a note',
    inputSchema: object({ note: { type: 'string' } }),
    run: () => text('written'),
  },
  calls: {
    description: 'Calls per tool in this process',
    inputSchema: object(),
    run: () => text(JSON.stringify(counts)),
  },
};

const server = new Server(
  { name: 'notes', version: '1.0.0' },
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
  if (tool === undefined) return { ...text(`no tool ${req.params.name}`), isError: true };
  if (req.params.name !== 'calls') counts[req.params.name] = (counts[req.params.name] ?? 0) + 1;
  return tool.run(req.params.arguments ?? {});
});
server.setRequestHandler(ListPromptsRequestSchema, () => ({
  prompts: [
    { name: 'summarize', description: 'Summarize a text', arguments: [{ name: 'text', required: true }] },
  ],
}));
server.setRequestHandler(GetPromptRequestSchema, (req) => ({
  messages: [
    { role: 'user', content: { type: 'text', text: `Summarize: ${req.params.arguments?.text ?? ''}` } },
  ],
}));
server.setRequestHandler(ListResourcesRequestSchema, () => ({
  resources: [{ uri: 'memo://notes/readme', name: 'readme', mimeType: 'text/plain' }],
}));
server.setRequestHandler(ReadResourceRequestSchema, (req) => {
  if (req.params.uri !== 'memo://notes/readme')
    throw new McpError(ErrorCode.InvalidParams, `no resource ${req.params.uri}`);
  return {
    contents: [
      { uri: req.params.uri, mimeType: 'text/plain', text: process.env.NOTES_README ?? 'the notes readme' },
    ],
  };
});

await server.connect(new StdioServerTransport());
