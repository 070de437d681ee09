import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { read, startAdmin } from '../admin/harness.js';
import { READ_TOKEN, WRITE_TOKEN, startMcp, type McpHarness } from './harness.js';

const doc = (path: string): string => readFileSync(new URL(`../../docs/${path}`, import.meta.url), 'utf8');

/** The text of the first content of a resources/read answer. */
const textOf = (contents: readonly ({ text: string } | { blob: string })[]): string | undefined => {
  const first = contents[0];
  return first !== undefined && 'text' in first ? first.text : undefined;
};

describe('mcp resources over Streamable HTTP', () => {
  let h: McpHarness;
  let reader: Client;
  before(async () => {
    h = await startMcp();
    reader = await h.connect(READ_TOKEN);
  });
  after(() => h.stop());

  test('mcp resources: the docs pages and one resource per node type are listed', async () => {
    const { resources } = await reader.listResources();
    const uris = new Set(resources.map((r) => r.uri));
    for (const uri of [
      'switchyard://docs/concepts/configuration',
      'switchyard://docs/concepts/mcp',
      'switchyard://docs/concepts/reference-compatibility',
      'switchyard://docs/plugins/README',
      'switchyard://docs/plugins/limit-count',
      'switchyard://node-types/limit-count',
      'switchyard://node-types/upstream',
    ])
      assert.ok(uris.has(uri), uri);
    const page = resources.find((r) => r.uri === 'switchyard://docs/concepts/mcp');
    assert.equal(page?.mimeType, 'text/markdown');
    assert.equal(page?.title, 'MCP: the agent endpoint');
    assert.equal(
      resources.find((r) => r.uri === 'switchyard://node-types/cors')?.mimeType,
      'application/json',
    );
    const { resourceTemplates } = await reader.listResourceTemplates();
    assert.ok(resourceTemplates.some((t) => t.uriTemplate === 'switchyard://node-types/{type}'));
  });

  test('mcp resources: a docs page reads as its Markdown file', async () => {
    const { contents } = await reader.readResource({ uri: 'switchyard://docs/concepts/configuration' });
    assert.equal(contents.length, 1);
    assert.equal(contents[0]?.mimeType, 'text/markdown');
    assert.equal(textOf(contents), doc('configuration.md'));
    const plugin = await reader.readResource({ uri: 'switchyard://docs/plugins/limit-count' });
    assert.equal(textOf(plugin.contents), doc('plugins/limit-count.md'));
  });

  test('mcp resources: a node type resource carries its ports and config JSON Schema', async () => {
    const { contents } = await reader.readResource({ uri: 'switchyard://node-types/limit-count' });
    assert.equal(contents[0]?.mimeType, 'application/json');
    const entry = JSON.parse(String(textOf(contents))) as {
      type: string;
      ports: { outputs: { name: string; kind: string }[] };
      schema: { properties: Record<string, unknown> };
    };
    assert.equal(entry.type, 'limit-count');
    assert.deepEqual(
      entry.ports.outputs.map((p) => [p.name, p.kind]),
      [
        ['success', 'success'],
        ['limited', 'outcome'],
        ['error', 'error'],
      ],
    );
    assert.ok('count' in entry.schema.properties && 'time_window' in entry.schema.properties);
  });

  test("mcp resources: the reference's featherbit:// URIs read the same pages", async () => {
    const ours = await reader.readResource({ uri: 'switchyard://docs/plugins/cors' });
    const theirs = await reader.readResource({ uri: 'featherbit://docs/plugins/cors' });
    assert.equal(textOf(theirs.contents), textOf(ours.contents));
  });

  test('mcp resources: an unknown or escaping URI is a resource-not-found error', async () => {
    for (const uri of [
      'switchyard://docs/concepts/nope',
      'switchyard://docs/concepts/../../package',
      'switchyard://node-types/nope',
      'file:///etc/passwd',
    ]) {
      await assert.rejects(reader.readResource({ uri }), (err: unknown) => {
        assert.ok(err instanceof McpError, String(err));
        assert.equal(err.code, -32002, uri);
        return true;
      });
    }
  });

  test('mcp resources: a write token sees the same resources', async () => {
    const writer = await h.connect(WRITE_TOKEN);
    assert.equal(
      (await writer.listResources()).resources.length,
      (await reader.listResources()).resources.length,
    );
  });
});

describe('mcp Admin API companions', () => {
  test('GET /api/mcp/status: enabled, path, token count and scopes, never a token', async () => {
    const h = await startMcp({ mcp: 'path: /agent' });
    try {
      const { status, body } = await read(await h.call('GET', '/api/mcp/status'));
      assert.equal(status, 200);
      assert.deepEqual(body, {
        compiled: true,
        enabled: true,
        path: '/agent',
        token_count: 2,
        scopes: ['read', 'write'],
        transports: ['streamable-http', 'stdio'],
      });
      assert.ok(!JSON.stringify(body).includes(READ_TOKEN.slice(0, 10)));
      assert.equal((await fetch(`${h.url}/api/mcp/status`)).status, 401);
    } finally {
      await h.stop();
    }
  });

  test('GET /api/mcp/status answers with MCP off too', async () => {
    const h = await startAdmin();
    try {
      const { status, body } = await read(await h.call('GET', '/api/mcp/status'));
      assert.equal(status, 200);
      assert.deepEqual(body, {
        compiled: true,
        enabled: false,
        path: '/mcp',
        token_count: 0,
        scopes: [],
        transports: ['streamable-http', 'stdio'],
      });
    } finally {
      await h.stop();
    }
  });

  describe('GET /api/mcp/prompts', () => {
    let h: McpHarness;
    before(async () => {
      h = await startMcp();
    });
    after(() => h.stop());

    test('the list matches prompts/list of the MCP endpoint', async () => {
      const { status, body } = await read(await h.call('GET', '/api/mcp/prompts'));
      assert.equal(status, 200);
      const listed = (
        body as { prompts: { name: string; arguments: { name: string; required: boolean }[] }[] }
      ).prompts;
      const client = await h.connect(READ_TOKEN);
      const { prompts } = await client.listPrompts();
      assert.deepEqual(
        listed.map((p) => p.name),
        prompts.map((p) => p.name),
      );
      assert.deepEqual(
        listed.find((p) => p.name === 'why_this_port')?.arguments.map((a) => [a.name, a.required]),
        [
          ['trace_id', true],
          ['node_id', true],
        ],
      );
    });

    test('a prompt renders with its arguments from the query, as prompts/get does', async () => {
      const { status, body } = await read(
        await h.call('GET', '/api/mcp/prompts/review_policy?policy_name=echo'),
      );
      assert.equal(status, 200);
      const rendered = body as { name: string; description: string; text: string };
      assert.equal(rendered.name, 'review_policy');
      const client = await h.connect(READ_TOKEN);
      const viaMcp = await client.getPrompt({ name: 'review_policy', arguments: { policy_name: 'echo' } });
      const message = viaMcp.messages[0]?.content;
      assert.equal(rendered.text, message?.type === 'text' ? message.text : undefined);
      assert.equal(rendered.description, viaMcp.description);
    });

    test('an unknown prompt is 404, a missing required argument 400 invalid_input', async () => {
      const unknown = await read(await h.call('GET', '/api/mcp/prompts/nope'));
      assert.deepEqual(unknown, { status: 404, body: { error: 'not_found' } });
      const missing = await read(await h.call('GET', '/api/mcp/prompts/explain_trace'));
      assert.equal(missing.status, 400);
      assert.equal((missing.body as { error: string }).error, 'invalid_input');
      assert.match((missing.body as { message: string }).message, /trace_id/);
    });
  });
});
