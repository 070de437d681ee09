/**
 * The format module ai-proxy and the prompt nodes share (src/plugins/ai/formats/): the SSE
 * reader takes bytes cut anywhere, and the stream translator keeps event order and tool-call
 * blocks when an OpenAI stream becomes an Anthropic one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientFormatOf, parseAiRequest, promptMessages } from '../../../src/plugins/ai/formats/client.js';
import { SseReader } from '../../../src/plugins/ai/formats/sse.js';
import { StreamTranslator } from '../../../src/plugins/ai/formats/stream.js';

test('ai-proxy formats: the SSE reader gives the same events whatever the byte cuts (CRLF, UTF-8 split, comments)', () => {
  const text =
    ': keep-alive\r\nevent: message_start\r\ndata: {"a":"é€"}\r\n\r\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n';
  const bytes = Buffer.from(text, 'utf8');
  const whole = new SseReader().push(bytes);
  assert.deepEqual(whole, [
    { event: 'message_start', data: '{"a":"é€"}' },
    { event: undefined, data: 'line1\nline2' },
    { event: undefined, data: '[DONE]' },
  ]);
  for (let cut = 1; cut < bytes.length; cut++) {
    const reader = new SseReader();
    const events = [
      ...reader.push(bytes.subarray(0, cut)),
      ...reader.push(bytes.subarray(cut)),
      ...reader.end(),
    ];
    assert.deepEqual(events, whole, `cut at byte ${cut}`);
  }
});

test('ai-proxy formats: an OpenAI stream with text then two tool calls becomes Anthropic blocks in order, usage in message_delta', () => {
  const t = new StreamTranslator({ client: 'anthropic', wire: 'openai', clientWantsUsage: false });
  const chunk = (delta: unknown, finish: string | null = null) => ({
    event: undefined,
    data: JSON.stringify({
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [{ index: 0, delta, finish_reason: finish }],
    }),
  });
  let out = '';
  out += t.push(chunk({ role: 'assistant', content: 'Checking.' }));
  out += t.push(
    chunk({
      tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"x":' } }],
    }),
  );
  out += t.push(chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }));
  out += t.push(
    chunk({
      tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'g', arguments: '{}' } }],
    }),
  );
  out += t.push(chunk({}, 'tool_calls'));
  out += t.push({
    event: undefined,
    data: JSON.stringify({
      id: 'c',
      choices: [],
      usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
    }),
  });
  out += t.push({ event: undefined, data: '[DONE]' });
  const events = [...new SseReader().push(out)].map((e) => ({
    event: e.event,
    data: JSON.parse(e.data) as Record<string, unknown>,
  }));
  assert.deepEqual(
    events.map((e) => e.event),
    [
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ],
  );
  assert.deepEqual(events[4]?.data.content_block, { type: 'tool_use', id: 'call_a', name: 'f', input: {} });
  assert.deepEqual(events[8]?.data.content_block, { type: 'tool_use', id: 'call_b', name: 'g', input: {} });
  assert.deepEqual(events[11]?.data, {
    type: 'message_delta',
    delta: { stop_reason: 'tool_use', stop_sequence: null },
    usage: { input_tokens: 7, output_tokens: 3 },
  });
  assert.deepEqual(t.usage, { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
});

test('ai-proxy formats: client format by path, request checks, and prompt messages with the system prompt first', () => {
  assert.equal(clientFormatOf('/x/v1/chat/completions'), 'openai');
  assert.equal(clientFormatOf('/v1/messages'), 'anthropic');
  assert.equal(clientFormatOf('/v1/embeddings'), undefined);
  assert.equal(typeof parseAiRequest('openai', Buffer.from('{"messages": 3}')), 'string');
  const req = parseAiRequest(
    'anthropic',
    Buffer.from(
      JSON.stringify({
        model: 'm',
        system: [{ type: 'text', text: 'sys' }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
        stream: true,
      }),
    ),
  );
  assert.ok(typeof req !== 'string');
  assert.deepEqual([req.model, req.stream], ['m', true]);
  assert.deepEqual(promptMessages(req), [
    { role: 'system', text: 'sys' },
    { role: 'user', text: 'hi' },
  ]);
});
