/**
 * ai-proxy, whole answers: the official openai and Anthropic SDKs, pointed at the gateway, get
 * answers from local OpenAI and Anthropic providers in their own format (same format and
 * translated both ways), tool calls with their ids, usage, model aliasing, the provider's key
 * (never the client's), and a viewer never sees the keys.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { basic } from '../../admin/harness.js';
import { ANTHROPIC_TOOL_USE_ID, OPENAI_TOOL_CALL_ID } from '../../support/llm-providers.js';
import {
  anthropicTarget,
  openaiTarget,
  startAiHarness,
  VIEWER_PASSWORD,
  type AiHarness,
} from './ai-proxy-harness.js';

const WEATHER_TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('ai-proxy: whole answers through the official SDKs', () => {
  let h: AiHarness;
  before(async () => {
    h = await startAiHarness(({ openai, anthropic }) => ({
      oo: { targets: [openaiTarget(openai)] },
      oa: { targets: [anthropicTarget(anthropic)] },
      ao: { targets: [openaiTarget(openai)] },
      aa: { targets: [anthropicTarget(anthropic)] },
      usage: {
        targets: [anthropicTarget(anthropic)],
        headers: {
          'x-ai-model': '{{message.ai.model}}',
          'x-ai-provider': '{{message.ai.provider}}',
          'x-ai-prompt-tokens': '{{message.ai.usage.prompt_tokens}}',
          'x-ai-completion-tokens': '{{message.ai.usage.completion_tokens}}',
          'x-ai-total-tokens': '{{message.ai.usage.total_tokens}}',
        },
      },
      byo: {
        targets: [openaiTarget(openai, { api_key: undefined })],
        config: { pass_client_key: true },
      },
    }));
  });
  after(() => h.stop());

  test('ai-proxy: openai SDK to an OpenAI provider: the answer, usage, the target model and key, never the client key', async () => {
    const seen = h.openaiProvider.requests.length;
    const answer = await h.openai('oo').chat.completions.create({
      model: 'my-alias',
      messages: [{ role: 'user', content: 'say hi' }],
    });
    assert.equal(answer.choices[0]?.message.content, 'Hello from OpenAI: say hi');
    assert.equal(answer.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(
      { p: answer.usage?.prompt_tokens, c: answer.usage?.completion_tokens, t: answer.usage?.total_tokens },
      { p: 2, c: 5, t: 7 },
    );
    const got = h.openaiProvider.requests[seen]!;
    assert.equal(got.path, '/v1/chat/completions');
    assert.equal(got.body.model, 'gpt-4o-mini', "the target's model replaces the client's");
    assert.equal(got.headers.authorization, 'Bearer openai-test-key');
    assert.doesNotMatch(JSON.stringify(got.headers), /client-own-key/);
  });

  test('ai-proxy: openai SDK to an Anthropic provider: system prompt, max tokens and stop reason translated', async () => {
    const seen = h.anthropicProvider.requests.length;
    const answer = await h.openai('oa').chat.completions.create({
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'say hi' },
      ],
      max_completion_tokens: 100,
      stop: ['END'],
    });
    assert.equal(answer.object, 'chat.completion');
    assert.equal(answer.choices[0]?.message.content, 'Hello from Anthropic: say hi');
    assert.equal(answer.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(answer.usage, { prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 });
    const got = h.anthropicProvider.requests[seen]!;
    assert.equal(got.path, '/v1/messages');
    assert.equal(got.headers['x-api-key'], 'anthropic-test-key');
    assert.equal(got.headers['anthropic-version'], '2023-06-01');
    assert.equal(got.headers.authorization, undefined);
    assert.equal(got.body.model, 'claude-3-5-haiku-20241022');
    assert.equal(got.body.system, 'be brief');
    assert.equal(got.body.max_tokens, 100, 'max_completion_tokens becomes max_tokens');
    assert.deepEqual(got.body.stop_sequences, ['END']);
    assert.deepEqual(got.body.messages, [{ role: 'user', content: 'say hi' }]);
  });

  test('ai-proxy: a translated request without a token limit gets default_max_tokens (4096)', async () => {
    const seen = h.anthropicProvider.requests.length;
    await h.openai('oa').chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(h.anthropicProvider.requests[seen]!.body.max_tokens, 4096);
  });

  test('ai-proxy: Anthropic SDK to an OpenAI provider: system first, stop reason and usage translated', async () => {
    const seen = h.openaiProvider.requests.length;
    const message = await h.anthropic('ao').messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 50,
      system: 'be brief',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'say hi' }] }],
    });
    assert.equal(message.type, 'message');
    assert.equal(message.role, 'assistant');
    assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from OpenAI: say hi' }]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.equal(message.usage.input_tokens, 4);
    assert.equal(message.usage.output_tokens, 5);
    const got = h.openaiProvider.requests[seen]!;
    assert.deepEqual(got.body.messages, [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'say hi' },
    ]);
    assert.equal(got.body.max_tokens, 50);
    assert.equal(got.body.model, 'gpt-4o-mini');
  });

  test('ai-proxy: Anthropic SDK to an Anthropic provider: the answer as the provider gave it, with the target key', async () => {
    const seen = h.anthropicProvider.requests.length;
    const message = await h.anthropic('aa').messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'say hi' }],
    });
    assert.equal(message.id, 'msg_013Zva2CMHLNnXjNJJKqJ2EF');
    assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from Anthropic: say hi' }]);
    const got = h.anthropicProvider.requests[seen]!;
    assert.equal(got.headers['x-api-key'], 'anthropic-test-key');
    assert.doesNotMatch(JSON.stringify(got.headers), /client-own-key/);
  });

  test('ai-proxy: tool calls round-trip with their ids, openai SDK over an Anthropic provider', async () => {
    const client = h.openai('oa');
    const first = await client.chat.completions.create({
      model: 'x',
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools: [WEATHER_TOOL],
    });
    const choice = first.choices[0]!;
    assert.equal(choice.finish_reason, 'tool_calls');
    const call = choice.message.tool_calls?.[0];
    assert.ok(call !== undefined && call.type === 'function');
    assert.equal(call.id, ANTHROPIC_TOOL_USE_ID);
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
    const sentTools = h.anthropicProvider.requests.at(-1)!.body.tools;
    assert.deepEqual(sentTools, [
      {
        name: 'get_weather',
        description: 'Current weather of a city',
        input_schema: WEATHER_TOOL.function.parameters,
      },
    ]);
    const second = await client.chat.completions.create({
      model: 'x',
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        choice.message,
        { role: 'tool', tool_call_id: call.id, content: 'sunny' },
      ],
      tools: [WEATHER_TOOL],
    });
    assert.equal(second.choices[0]?.message.content, 'tool said: sunny');
    const messages = h.anthropicProvider.requests.at(-1)!.body.messages as {
      role: string;
      content: unknown;
    }[];
    assert.deepEqual(messages[1], {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: ANTHROPIC_TOOL_USE_ID, name: 'get_weather', input: { city: 'Paris' } },
      ],
    });
    assert.deepEqual(messages[2], {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: ANTHROPIC_TOOL_USE_ID, content: 'sunny' }],
    });
  });

  test('ai-proxy: tool calls round-trip with their ids, Anthropic SDK over an OpenAI provider', async () => {
    const client = h.anthropic('ao');
    const tools: Anthropic.Tool[] = [
      {
        name: 'get_weather',
        description: 'Current weather of a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ];
    const first = await client.messages.create({
      model: 'x',
      max_tokens: 100,
      tools,
      messages: [{ role: 'user', content: 'weather in Paris?' }],
    });
    assert.equal(first.stop_reason, 'tool_use');
    const use = first.content.find((b) => b.type === 'tool_use');
    assert.ok(use !== undefined && use.type === 'tool_use');
    assert.equal(use.id, OPENAI_TOOL_CALL_ID);
    assert.deepEqual(use.input, { city: 'Paris' });
    const second = await client.messages.create({
      model: 'x',
      max_tokens: 100,
      tools,
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'rainy' }] },
      ],
    });
    assert.deepEqual(second.content, [{ type: 'text', text: 'tool said: rainy' }]);
    const messages = h.openaiProvider.requests.at(-1)!.body.messages as Record<string, unknown>[];
    assert.deepEqual(messages[1], {
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: OPENAI_TOOL_CALL_ID,
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
        },
      ],
    });
    assert.deepEqual(messages[2], { role: 'tool', tool_call_id: OPENAI_TOOL_CALL_ID, content: 'rainy' });
  });

  test('ai-proxy: model, provider and usage are on the context for later nodes (message.ai.*)', async () => {
    const { data, response } = await h
      .openai('usage')
      .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'one two three' }] })
      .withResponse();
    assert.equal(data.usage?.total_tokens, 9);
    assert.equal(response.headers.get('x-ai-model'), 'claude-3-5-haiku-20241022');
    assert.equal(response.headers.get('x-ai-provider'), 'anthropic');
    assert.equal(response.headers.get('x-ai-prompt-tokens'), '3');
    assert.equal(response.headers.get('x-ai-completion-tokens'), '6');
    assert.equal(response.headers.get('x-ai-total-tokens'), '9');
  });

  test("ai-proxy: pass_client_key sends the client's key the provider's way; a key it refuses comes back as its 401", async () => {
    const good = new OpenAI({ apiKey: 'openai-test-key', baseURL: `${h.data}/byo/v1`, maxRetries: 0 });
    const answer = await good.chat.completions.create({
      model: 'x',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(answer.choices[0]?.message.content, 'Hello from OpenAI: hi');
    assert.equal(h.openaiProvider.requests.at(-1)!.headers.authorization, 'Bearer openai-test-key');
    const bad = new OpenAI({ apiKey: 'wrong-key', baseURL: `${h.data}/byo/v1`, maxRetries: 0 });
    await assert.rejects(
      bad.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 401);
        assert.match(err.message, /Incorrect API key/);
        return true;
      },
    );
  });

  test('ai-proxy: a body that is not a chat request is a 400 in the OpenAI error shape; an unknown path a 404', async () => {
    const res = await fetch(`${h.data}/oo/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model": "x"}',
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /messages/);
    const unknown = await fetch(`${h.data}/oo/v1/completions`, { method: 'POST', body: '{}' });
    assert.equal(unknown.status, 404);
  });

  test('ai-proxy: a viewer reads the configuration with every api_key masked; the admin sees them', async () => {
    const viewer = await fetch(`${h.url}/api/config/export`, {
      headers: { authorization: basic('viewer', VIEWER_PASSWORD) },
    });
    assert.equal(viewer.status, 200);
    const text = await viewer.text();
    assert.match(text, /ai-proxy/);
    assert.doesNotMatch(text, /openai-test-key|anthropic-test-key/);
    const admin = await (await h.call('GET', '/api/config/export')).text();
    assert.match(admin, /anthropic-test-key/);
  });
});
