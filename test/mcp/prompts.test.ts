import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { READ_TOKEN, startMcp, type McpHarness } from './harness.js';

const PROMPTS = [
  'troubleshoot_trace',
  'explain_trace',
  'why_this_port',
  'why_this_response',
  'review_policy',
  'design_policy',
  'design_supernode',
  'design_route',
  'diagnose_route',
];

describe('mcp prompts', () => {
  let h: McpHarness;
  let client: Client;
  before(async () => {
    h = await startMcp();
    client = await h.connect(READ_TOKEN);
  });
  after(() => h.stop());

  test('mcp prompts: all nine are listed with their arguments', async () => {
    const { prompts } = await client.listPrompts();
    assert.deepEqual(
      prompts.map((p) => p.name),
      PROMPTS,
    );
    const port = prompts.find((p) => p.name === 'why_this_port');
    assert.deepEqual(
      port?.arguments?.map((a) => [a.name, a.required]),
      [
        ['trace_id', true],
        ['node_id', true],
      ],
    );
  });

  test('mcp prompts: a rendered prompt names the arguments and the tools to call', async () => {
    const port = await client.getPrompt({
      name: 'why_this_port',
      arguments: { trace_id: 't-1', node_id: 'auth' },
    });
    const first = port.messages[0];
    assert.equal(first?.role, 'user');
    const text = first?.content.type === 'text' ? first.content.text : '';
    assert.match(text, /get_trace_step\(id="t-1", node_id="auth"\)/);

    const route = await client.getPrompt({
      name: 'diagnose_route',
      arguments: { method: 'GET', path: '/orders/1' },
    });
    const routeText = route.messages[0]?.content.type === 'text' ? route.messages[0].content.text : '';
    assert.match(routeText, /list_routes/);
    assert.match(routeText, /run_sandbox/);
  });

  test('mcp prompts: a missing required argument or an unknown prompt is a protocol error', async () => {
    await assert.rejects(client.getPrompt({ name: 'explain_trace', arguments: {} }), /trace_id/);
    await assert.rejects(client.getPrompt({ name: 'no_such_prompt' }), /unknown prompt/);
  });
});
