/**
 * ai-proxy, streamed answers: server-sent events translated event by event between the OpenAI and
 * Anthropic formats (both ways, and passed through when the formats match), tool calls in
 * streams, the usage chunk only for OpenAI clients that asked for it, and the first token sent
 * on while the provider is still writing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { ANTHROPIC_TOOL_USE_ID, OPENAI_TOOL_CALL_ID } from '../../support/llm-providers.js';
import { anthropicTarget, openaiTarget, startAiHarness, type AiHarness } from './ai-proxy-harness.js';

const TOOL = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

/** Every chunk of an openai SDK stream. */
async function chunks(
  stream: AsyncIterable<OpenAI.ChatCompletionChunk>,
): Promise<OpenAI.ChatCompletionChunk[]> {
  const out: OpenAI.ChatCompletionChunk[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

const textOf = (list: OpenAI.ChatCompletionChunk[]): string =>
  list.map((c) => c.choices[0]?.delta.content ?? '').join('');

/** Rejects after `ms`: a stream the gateway held back would never yield its first token. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not arrive within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

describe('ai-proxy: streamed answers through the official SDKs', () => {
  let h: AiHarness;
  before(async () => {
    h = await startAiHarness(({ openai, anthropic }) => ({
      oo: { targets: [openaiTarget(openai)] },
      oa: { targets: [anthropicTarget(anthropic)] },
      ao: { targets: [openaiTarget(openai)] },
      aa: { targets: [anthropicTarget(anthropic)] },
    }));
  });
  after(() => h.stop());

  test('ai-proxy: openai SDK streaming from an OpenAI provider; the gateway asks for usage and keeps the chunk from a client that did not', async () => {
    const seen = h.openaiProvider.requests.length;
    const list = await chunks(
      await h.openai('oo').chat.completions.create({
        model: 'x',
        stream: true,
        messages: [{ role: 'user', content: 'count to three' }],
      }),
    );
    assert.equal(textOf(list), 'Hello from OpenAI: count to three');
    assert.equal(list.at(-1)?.choices[0]?.finish_reason, 'stop');
    for (const c of list) {
      assert.ok(c.choices.length > 0, 'no usage-only chunk');
      assert.ok(!('usage' in c), 'no usage field on the chunks');
    }
    assert.deepEqual(h.openaiProvider.requests[seen]!.body.stream_options, { include_usage: true });
  });

  test('ai-proxy: openai SDK streaming with include_usage gets the usage chunk', async () => {
    const list = await chunks(
      await h.openai('oo').chat.completions.create({
        model: 'x',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'count to three' }],
      }),
    );
    const last = list.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.deepEqual(last.usage, { prompt_tokens: 3, completion_tokens: 6, total_tokens: 9 });
  });

  test('ai-proxy: openai SDK streaming from an Anthropic provider: text deltas, finish reason and usage chunk translated', async () => {
    const seen = h.anthropicProvider.requests.length;
    const list = await chunks(
      await h.openai('oa').chat.completions.create({
        model: 'x',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'count to three' }],
      }),
    );
    assert.equal(list[0]?.object, 'chat.completion.chunk');
    assert.equal(list[0]?.choices[0]?.delta.role, 'assistant');
    assert.equal(textOf(list), 'Hello from Anthropic: count to three');
    assert.ok(
      list.filter((c) => (c.choices[0]?.delta.content ?? '') !== '').length > 1,
      'several text deltas',
    );
    assert.equal(list.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(list.at(-1)?.usage, { prompt_tokens: 3, completion_tokens: 6, total_tokens: 9 });
    const sent = h.anthropicProvider.requests[seen]!.body;
    assert.equal(sent.stream, true);
    assert.equal(sent.stream_options, undefined, 'an Anthropic request carries no OpenAI stream_options');
  });

  test('ai-proxy: Anthropic SDK streaming from an OpenAI provider: the event sequence, final message and usage in message_delta', async () => {
    const stream = h.anthropic('ao').messages.stream({
      model: 'x',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'count to three' }],
    });
    const types: string[] = [];
    let deltaUsage: Anthropic.MessageDeltaUsage | undefined;
    stream.on('streamEvent', (event) => {
      types.push(event.type);
      if (event.type === 'message_delta') deltaUsage = event.usage;
    });
    const message = await stream.finalMessage();
    assert.equal(message.content.length, 1);
    assert.equal(message.content[0]?.type, 'text');
    assert.equal((message.content[0] as Anthropic.TextBlock).text, 'Hello from OpenAI: count to three');
    assert.equal(message.stop_reason, 'end_turn');
    assert.equal(types[0], 'message_start');
    assert.equal(types[1], 'content_block_start');
    assert.ok(types.filter((t) => t === 'content_block_delta').length > 1);
    assert.deepEqual(types.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
    assert.equal(deltaUsage?.input_tokens, 3);
    assert.equal(deltaUsage?.output_tokens, 6);
    assert.equal(message.usage.output_tokens, 6);
  });

  test('ai-proxy: Anthropic SDK streaming from an Anthropic provider passes the events through', async () => {
    const stream = h.anthropic('aa').messages.stream({
      model: 'x',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'count to three' }],
    });
    const types: string[] = [];
    stream.on('streamEvent', (event) => types.push(event.type));
    const message = await stream.finalMessage();
    assert.equal(message.id, 'msg_013Zva2CMHLNnXjNJJKqJ2EF');
    assert.equal((message.content[0] as Anthropic.TextBlock).text, 'Hello from Anthropic: count to three');
    assert.equal(message.usage.input_tokens, 3);
    assert.equal(message.usage.output_tokens, 6);
    assert.deepEqual(types.slice(0, 2), ['message_start', 'content_block_start']);
    assert.equal(types.at(-1), 'message_stop');
  });

  test('ai-proxy: a streamed tool call reaches the openai SDK with its id and arguments (Anthropic provider)', async () => {
    const list = await chunks(
      await h.openai('oa').chat.completions.create({
        model: 'x',
        stream: true,
        tools: [TOOL],
        messages: [{ role: 'user', content: 'weather in Paris?' }],
      }),
    );
    const calls = list.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    assert.equal(calls[0]?.id, ANTHROPIC_TOOL_USE_ID);
    assert.equal(calls[0]?.function?.name, 'get_weather');
    assert.deepEqual(JSON.parse(calls.map((c) => c.function?.arguments ?? '').join('')), { city: 'Paris' });
    assert.equal(list.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, 'tool_calls');
  });

  test('ai-proxy: a streamed tool call reaches the Anthropic SDK with its id and input (OpenAI provider)', async () => {
    const message = await h
      .anthropic('ao')
      .messages.stream({
        model: 'x',
        max_tokens: 64,
        tools: [
          { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
        ],
        messages: [{ role: 'user', content: 'weather in Paris?' }],
      })
      .finalMessage();
    assert.equal(message.stop_reason, 'tool_use');
    const use = message.content.find((b) => b.type === 'tool_use');
    assert.ok(use?.type === 'tool_use');
    assert.equal(use.id, OPENAI_TOOL_CALL_ID);
    assert.equal(use.name, 'get_weather');
    assert.deepEqual(use.input, { city: 'Paris' });
  });

  test('ai-proxy: the first token reaches the client while the provider still holds the rest (both directions)', async () => {
    for (const [provider, run] of [
      [
        h.anthropicProvider,
        async () => {
          const stream = await h.openai('oa').chat.completions.create({
            model: 'x',
            stream: true,
            messages: [{ role: 'user', content: 'count to three' }],
          });
          const it = stream[Symbol.asyncIterator]();
          let first = '';
          while (first === '') {
            const next = await it.next();
            assert.ok(next.done !== true, 'the stream ended before a token');
            first = next.value.choices[0]?.delta.content ?? '';
          }
          return {
            first,
            rest: async () => first + textOf(await chunks({ [Symbol.asyncIterator]: () => it })),
          };
        },
      ],
      [
        h.openaiProvider,
        async () => {
          const stream = await h.anthropic('ao').messages.create({
            model: 'x',
            max_tokens: 64,
            stream: true,
            messages: [{ role: 'user', content: 'count to three' }],
          });
          const it = stream[Symbol.asyncIterator]();
          let first = '';
          while (first === '') {
            const next = await it.next();
            assert.ok(next.done !== true, 'the stream ended before a token');
            const ev = next.value;
            if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') first = ev.delta.text;
          }
          return {
            first,
            rest: async () => {
              let text = first;
              for (let n = await it.next(); n.done !== true; n = await it.next()) {
                const ev = n.value;
                if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta')
                  text += ev.delta.text;
              }
              return text;
            },
          };
        },
      ],
    ] as const) {
      const release = provider.holdAfterFirstToken();
      try {
        const { first, rest } = await within(
          run(),
          15_000,
          `the first token from the ${provider.kind} provider`,
        );
        assert.equal(first, 'Hello ');
        release();
        assert.match(await rest(), /^Hello from (OpenAI|Anthropic): count to three$/);
      } finally {
        release();
      }
    }
  });
});
