/**
 * ai-proxy to a Gemini target: the openai and Anthropic SDKs get Gemini's answers in their own
 * format, whole and streamed (`:streamGenerateContent?alt=sse`), with function calls and usage,
 * the key in `x-goog-api-key`, and a Gemini 429 falls back to the next target.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type Anthropic from '@anthropic-ai/sdk';
import { anthropicTarget, geminiTarget, startAiHarness, type AiHarness } from './ai-proxy-harness.js';

describe('ai-proxy: Gemini targets', () => {
  let h: AiHarness;
  before(async () => {
    h = await startAiHarness(({ gemini, anthropic }) => ({
      og: { targets: [geminiTarget(gemini)] },
      ag: { targets: [geminiTarget(gemini)] },
      gfb: { targets: [geminiTarget(gemini, { priority: 1 }), anthropicTarget(anthropic)] },
    }));
  });
  after(() => h.stop());

  test('ai-proxy: openai SDK to a Gemini target: contents, systemInstruction, generationConfig and the answer with usage', async () => {
    const seen = h.geminiProvider.requests.length;
    const answer = await h.openai('og').chat.completions.create({
      model: 'x',
      max_tokens: 40,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'say hi' },
      ],
    });
    assert.equal(answer.choices[0]?.message.content, 'Hello from Gemini: say hi');
    assert.equal(answer.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(answer.usage, { prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 });
    const got = h.geminiProvider.requests[seen]!;
    assert.equal(got.path, '/v1beta/models/gemini-2.0-flash:generateContent');
    assert.equal(got.headers['x-goog-api-key'], 'gemini-test-key');
    assert.equal(got.headers.authorization, undefined);
    assert.deepEqual(got.body.systemInstruction, { parts: [{ text: 'be brief' }] });
    assert.deepEqual(got.body.contents, [{ role: 'user', parts: [{ text: 'say hi' }] }]);
    assert.deepEqual(got.body.generationConfig, { maxOutputTokens: 40 });
  });

  test('ai-proxy: openai SDK streaming from a Gemini target gets chunks, the usage chunk it asked for and [DONE]', async () => {
    const stream = await h.openai('og').chat.completions.create({
      model: 'x',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'count to three' }],
    });
    const list = [];
    for await (const c of stream) list.push(c);
    assert.equal(
      list.map((c) => c.choices[0]?.delta.content ?? '').join(''),
      'Hello from Gemini: count to three',
    );
    assert.equal(list.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(list.at(-1)?.usage, { prompt_tokens: 3, completion_tokens: 6, total_tokens: 9 });
    assert.match(h.geminiProvider.requests.at(-1)!.path, /:streamGenerateContent\?alt=sse$/);
  });

  test('ai-proxy: a Gemini function call reaches the openai SDK as a tool call, and its result goes back as a functionResponse', async () => {
    const client = h.openai('og');
    const tools = [
      {
        type: 'function' as const,
        function: {
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ];
    const first = await client.chat.completions.create({
      model: 'x',
      tools,
      messages: [{ role: 'user', content: 'weather?' }],
    });
    const call = first.choices[0]?.message.tool_calls?.[0];
    assert.ok(call?.type === 'function');
    assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
    assert.deepEqual(h.geminiProvider.requests.at(-1)!.body.tools, [
      { functionDeclarations: [{ name: 'get_weather', parameters: tools[0]!.function.parameters }] },
    ]);
    const second = await client.chat.completions.create({
      model: 'x',
      tools,
      messages: [
        { role: 'user', content: 'weather?' },
        first.choices[0]?.message ?? { role: 'assistant', content: '' },
        { role: 'tool', tool_call_id: call.id, content: 'sunny' },
      ],
    });
    assert.equal(second.choices[0]?.message.content, 'tool said: sunny');
    const contents = h.geminiProvider.requests.at(-1)!.body.contents as { role: string; parts: unknown[] }[];
    assert.deepEqual(contents[1], {
      role: 'model',
      parts: [{ functionCall: { id: call.id, name: 'get_weather', args: { city: 'Paris' } } }],
    });
    assert.deepEqual(contents[2], {
      role: 'user',
      parts: [{ functionResponse: { id: call.id, name: 'get_weather', response: { content: 'sunny' } } }],
    });
  });

  test('ai-proxy: Anthropic SDK to a Gemini target, whole and streamed, with usage in message_delta', async () => {
    const client = h.anthropic('ag');
    const whole = await client.messages.create({
      model: 'x',
      max_tokens: 20,
      messages: [{ role: 'user', content: 'say hi' }],
    });
    assert.equal((whole.content[0] as Anthropic.TextBlock).text, 'Hello from Gemini: say hi');
    assert.equal(whole.stop_reason, 'end_turn');
    assert.deepEqual([whole.usage.input_tokens, whole.usage.output_tokens], [2, 5]);
    const stream = client.messages.stream({
      model: 'x',
      max_tokens: 20,
      messages: [{ role: 'user', content: 'count to three' }],
    });
    let usage: Anthropic.MessageDeltaUsage | undefined;
    stream.on('streamEvent', (e) => {
      if (e.type === 'message_delta') usage = e.usage;
    });
    const message = await stream.finalMessage();
    assert.equal((message.content[0] as Anthropic.TextBlock).text, 'Hello from Gemini: count to three');
    assert.deepEqual([usage?.input_tokens, usage?.output_tokens], [3, 6]);
  });

  test('ai-proxy: a Gemini function call streamed to the openai SDK is a tool call chunk with finish_reason tool_calls', async () => {
    const stream = await h.openai('og').chat.completions.create({
      model: 'x',
      stream: true,
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        },
      ],
      messages: [{ role: 'user', content: 'weather?' }],
    });
    const list = [];
    for await (const c of stream) list.push(c);
    const calls = list.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    assert.equal(calls[0]?.function?.name, 'get_weather');
    assert.ok((calls[0]?.id ?? '') !== '', 'the tool call has an id');
    assert.deepEqual(JSON.parse(calls.map((c) => c.function?.arguments ?? '').join('')), { city: 'Paris' });
    assert.equal(list.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, 'tool_calls');
  });

  test('ai-proxy: Anthropic SDK tool use over a Gemini target, whole and streamed; the tool_use id comes back as the functionResponse id', async () => {
    const client = h.anthropic('ag');
    const tools = [
      {
        name: 'get_weather',
        input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
      },
    ];
    const whole = await client.messages.create({
      model: 'x',
      max_tokens: 50,
      tools,
      messages: [{ role: 'user', content: 'weather?' }],
    });
    assert.equal(whole.stop_reason, 'tool_use');
    const use = whole.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    assert.ok(use !== undefined, 'a tool_use block');
    assert.equal(use.name, 'get_weather');
    assert.deepEqual(use.input, { city: 'Paris' });
    const streamed = await client.messages
      .stream({ model: 'x', max_tokens: 50, tools, messages: [{ role: 'user', content: 'weather?' }] })
      .finalMessage();
    assert.equal(streamed.stop_reason, 'tool_use');
    const streamedUse = streamed.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    assert.equal(streamedUse?.name, 'get_weather');
    assert.deepEqual(streamedUse?.input, { city: 'Paris' });
    const answer = await client.messages.create({
      model: 'x',
      max_tokens: 50,
      tools,
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: whole.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] },
      ],
    });
    assert.equal((answer.content[0] as Anthropic.TextBlock).text, 'tool said: sunny');
    const contents = h.geminiProvider.requests.at(-1)!.body.contents as { role: string; parts: unknown[] }[];
    assert.deepEqual(contents[2], {
      role: 'user',
      parts: [{ functionResponse: { id: use.id, name: 'get_weather', response: { content: 'sunny' } } }],
    });
  });

  test('ai-proxy: a Gemini 429 (RESOURCE_EXHAUSTED) falls back to the next target', async () => {
    h.geminiProvider.next(429);
    const answer = await h
      .openai('gfb')
      .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(answer.choices[0]?.message.content, 'Hello from Anthropic: hi');
  });
});
