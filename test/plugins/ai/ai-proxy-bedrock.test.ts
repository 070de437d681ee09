/**
 * ai-proxy to Amazon Bedrock (issue 33 item 1, provider `bedrock`): the Converse and
 * ConverseStream APIs, every call signed with SigV4 and checked by the local provider
 * independently of the project's signer, the AWS event-stream framing of streams; the openai and
 * Anthropic SDKs parse the translated answers, whole and streamed, tool calls included.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { aiProxy } from '../../../src/plugins/ai/ai-proxy.js';
import { EventStreamReader } from '../../../src/plugins/ai/formats/event-stream.js';
import { assertConfigError } from '../../support/assertions.js';
import {
  BEDROCK_TOOL_USE_ID,
  eventFrame,
  exceptionFrame,
  startBedrockProvider,
  type BedrockProvider,
} from '../../support/bedrock-provider.js';
import { instantiate } from '../../support/plugin-env.js';
import { anthropicTarget, startAiHarness, type AiHarness } from './ai-proxy-harness.js';

const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const KEY_ID = 'AKIAIOSFODNN7EXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const TEMP_KEY_ID = 'ASIAIOSFODNN7TEMPKEY';
const TEMP_SECRET = 'tEmPsEcReT/K7MDENG/bPxRfiCYEXAMPLEKEY';
const SESSION_TOKEN = 'IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ==';

const TOOLS = [
  {
    type: 'function' as const,
    function: {
      name: 'get_weather',
      description: 'Weather of a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  },
];

const bedrockTarget = (p: BedrockProvider, extra: Record<string, unknown> = {}) => ({
  name: 'bedrock-local',
  provider: 'bedrock',
  endpoint: p.url,
  model: MODEL,
  aws: { region: p.region, access_key_id: KEY_ID, secret_access_key: SECRET },
  ...extra,
});

describe('ai-proxy: Bedrock targets (Converse, ConverseStream, SigV4)', () => {
  let bedrock: BedrockProvider;
  let h: AiHarness;
  before(async () => {
    bedrock = await startBedrockProvider('eu-central-1');
    bedrock.addCredentials(KEY_ID, SECRET);
    bedrock.addCredentials(TEMP_KEY_ID, TEMP_SECRET, SESSION_TOKEN);
    bedrock.addApiKey('ABSKbedrock-api-key-example');
    h = await startAiHarness(({ anthropic }) => ({
      br: { targets: [bedrockTarget(bedrock)] },
      temp: {
        targets: [
          bedrockTarget(bedrock, {
            aws: {
              region: bedrock.region,
              access_key_id: TEMP_KEY_ID,
              secret_access_key: TEMP_SECRET,
              session_token: SESSION_TOKEN,
            },
          }),
        ],
      },
      apikey: {
        targets: [
          bedrockTarget(bedrock, { aws: { region: bedrock.region }, api_key: 'ABSKbedrock-api-key-example' }),
        ],
      },
      badsecret: {
        targets: [
          bedrockTarget(bedrock, {
            name: 'bad',
            priority: 1,
            aws: { region: bedrock.region, access_key_id: KEY_ID, secret_access_key: 'not-the-secret' },
          }),
          anthropicTarget(anthropic),
        ],
      },
      fb: { targets: [bedrockTarget(bedrock, { priority: 1 }), anthropicTarget(anthropic)] },
    }));
  });
  after(async () => {
    await h.stop();
    await bedrock.close();
  });

  test('bedrock: openai SDK, whole answer: Converse body, SigV4 that verifies, answer and usage translated', async () => {
    const seen = bedrock.requests.length;
    const answer = await h.openai('br').chat.completions.create({
      model: 'alias',
      max_tokens: 50,
      temperature: 0.2,
      stop: ['END'],
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'say hi' },
      ],
    });
    assert.equal(answer.choices[0]?.message.content, 'Hello from Bedrock: say hi');
    assert.equal(answer.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(answer.usage, { prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 });
    assert.equal(answer.model, MODEL);
    const got = bedrock.requests[seen]!;
    assert.equal(got.verdict, 'ok');
    assert.equal(got.accessKeyId, KEY_ID);
    assert.equal(got.path, '/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse');
    assert.equal(got.modelId, MODEL);
    assert.equal(got.headers['x-amz-security-token'], undefined);
    assert.deepEqual(got.body, {
      messages: [{ role: 'user', content: [{ text: 'say hi' }] }],
      system: [{ text: 'be brief' }],
      inferenceConfig: { maxTokens: 50, temperature: 0.2, stopSequences: ['END'] },
    });
    assert.doesNotMatch(JSON.stringify(got.headers), /client-own-key/);
  });

  test('bedrock: openai SDK streaming: event-stream frames become chunks, the usage chunk it asked for and [DONE]', async () => {
    const stream = await h.openai('br').chat.completions.create({
      model: 'x',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'count to three' }],
    });
    const list = [];
    for await (const c of stream) list.push(c);
    assert.equal(
      list.map((c) => c.choices[0]?.delta.content ?? '').join(''),
      'Hello from Bedrock: count to three',
    );
    assert.equal(list.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(list.at(-1)?.usage, { prompt_tokens: 3, completion_tokens: 6, total_tokens: 9 });
    const got = bedrock.requests.at(-1)!;
    assert.equal(got.path, '/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream');
    assert.equal(got.headers.accept, 'application/vnd.amazon.eventstream');
    assert.equal(got.verdict, 'ok');
  });

  test('bedrock: the first streamed token reaches the openai SDK while Bedrock still holds the rest', async () => {
    const release = bedrock.holdAfterFirstToken();
    try {
      const stream = await h.openai('br').chat.completions.create({
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
      assert.equal(first, 'Hello ');
      release();
      let rest = first;
      for (let n = await it.next(); n.done !== true; n = await it.next())
        rest += n.value.choices[0]?.delta.content ?? '';
      assert.equal(rest, 'Hello from Bedrock: count to three');
    } finally {
      release();
    }
  });

  test('bedrock: tool calls reach the openai SDK, whole and streamed, with the toolUseId; the result goes back as toolResult', async () => {
    const client = h.openai('br');
    const first = await client.chat.completions.create({
      model: 'x',
      tools: TOOLS,
      tool_choice: 'required',
      messages: [{ role: 'user', content: 'weather?' }],
    });
    const call = first.choices[0]?.message.tool_calls?.[0];
    assert.ok(call?.type === 'function');
    assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
    assert.equal(call.id, BEDROCK_TOOL_USE_ID);
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
    assert.deepEqual(bedrock.requests.at(-1)!.body.toolConfig, {
      tools: [
        {
          toolSpec: {
            name: 'get_weather',
            description: 'Weather of a city',
            inputSchema: { json: TOOLS[0]!.function.parameters },
          },
        },
      ],
      toolChoice: { any: {} },
    });

    const stream = await client.chat.completions.create({
      model: 'x',
      stream: true,
      tools: TOOLS,
      messages: [{ role: 'user', content: 'weather?' }],
    });
    let args = '';
    let id: string | undefined;
    let finish: string | null | undefined;
    for await (const c of stream) {
      const delta = c.choices[0]?.delta;
      for (const t of delta?.tool_calls ?? []) {
        id ??= t.id;
        args += t.function?.arguments ?? '';
      }
      finish ??= c.choices[0]?.finish_reason;
    }
    assert.equal(id, BEDROCK_TOOL_USE_ID);
    assert.deepEqual(JSON.parse(args), { city: 'Paris' });
    assert.equal(finish, 'tool_calls');

    const second = await client.chat.completions.create({
      model: 'x',
      tools: TOOLS,
      messages: [
        { role: 'user', content: 'weather?' },
        first.choices[0].message,
        { role: 'tool', tool_call_id: call.id, content: 'sunny' },
      ],
    });
    assert.equal(second.choices[0]?.message.content, 'tool said: sunny');
    const messages = bedrock.requests.at(-1)!.body.messages as unknown[];
    assert.deepEqual(messages[1], {
      role: 'assistant',
      content: [
        { text: 'Let me check.' },
        { toolUse: { toolUseId: BEDROCK_TOOL_USE_ID, name: 'get_weather', input: { city: 'Paris' } } },
      ],
    });
    assert.deepEqual(messages[2], {
      role: 'user',
      content: [{ toolResult: { toolUseId: BEDROCK_TOOL_USE_ID, content: [{ text: 'sunny' }] } }],
    });
  });

  test('bedrock: Anthropic SDK, whole and streamed (text and tool_use), usage in message_delta', async () => {
    const client = h.anthropic('br');
    const whole = await client.messages.create({
      model: 'x',
      max_tokens: 20,
      system: 'be brief',
      messages: [{ role: 'user', content: 'say hi' }],
    });
    assert.equal((whole.content[0] as Anthropic.TextBlock).text, 'Hello from Bedrock: say hi');
    assert.equal(whole.stop_reason, 'end_turn');
    assert.deepEqual([whole.usage.input_tokens, whole.usage.output_tokens], [4, 5]);
    assert.deepEqual(bedrock.requests.at(-1)!.body.inferenceConfig, { maxTokens: 20 });

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
    assert.equal((message.content[0] as Anthropic.TextBlock).text, 'Hello from Bedrock: count to three');
    assert.deepEqual([usage?.input_tokens, usage?.output_tokens], [3, 6]);

    const tools = client.messages.stream({
      model: 'x',
      max_tokens: 64,
      tools: [
        { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
      ],
      messages: [{ role: 'user', content: 'weather?' }],
    });
    const withTool = await tools.finalMessage();
    assert.equal(withTool.stop_reason, 'tool_use');
    assert.equal((withTool.content[0] as Anthropic.TextBlock).text, 'Let me check.');
    const use = withTool.content[1] as Anthropic.ToolUseBlock;
    assert.equal(use.type, 'tool_use');
    assert.equal(use.id, BEDROCK_TOOL_USE_ID);
    assert.deepEqual(use.input, { city: 'Paris' });
  });

  test('bedrock: temporary credentials send and sign x-amz-security-token; a Bedrock API key goes as a bearer token', async () => {
    const a = await h
      .openai('temp')
      .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(a.choices[0]?.message.content, 'Hello from Bedrock: hi');
    const signed = bedrock.requests.at(-1)!;
    assert.equal(signed.verdict, 'ok');
    assert.equal(signed.accessKeyId, TEMP_KEY_ID);
    assert.equal(signed.headers['x-amz-security-token'], SESSION_TOKEN);
    assert.match(String(signed.headers.authorization), /SignedHeaders=[^,]*x-amz-security-token/);

    const b = await h
      .openai('apikey')
      .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(b.choices[0]?.message.content, 'Hello from Bedrock: hi');
    assert.equal(bedrock.requests.at(-1)!.headers.authorization, 'Bearer ABSKbedrock-api-key-example');
  });

  test('bedrock: a signature Bedrock refuses (wrong secret) is the target’s fault: the next target answers', async () => {
    const seen = bedrock.requests.length;
    const answer = await h
      .openai('badsecret')
      .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(answer.choices[0]?.message.content, 'Hello from Anthropic: hi');
    assert.equal(bedrock.requests[seen]!.verdict, 'InvalidSignatureException');
  });

  test('bedrock: a ThrottlingException (429) falls back to the next target; a 400 reaches the client in its format', async () => {
    bedrock.next(429);
    const answer = await h
      .openai('fb')
      .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(answer.choices[0]?.message.content, 'Hello from Anthropic: hi');
    await assert.rejects(
      h.openai('br').chat.completions.create({ model: 'x', messages: [{ role: 'system', content: 'only' }] }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 400);
        assert.match(err.message, /conversation must start with a user message/);
        return true;
      },
    );
  });

  test('bedrock: an exception frame in the stream reaches the openai SDK as a stream error, the Anthropic SDK as an error event', async () => {
    bedrock.next('stream-exception');
    const stream = await h.openai('br').chat.completions.create({
      model: 'x',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    await assert.rejects(
      (async () => {
        for await (const _ of stream) void _;
      })(),
      /The model stream failed/,
    );
    bedrock.next('stream-exception');
    const a = h.anthropic('br').messages.stream({
      model: 'x',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
    });
    await assert.rejects(a.finalMessage(), /The model stream failed/);
  });

  test('bedrock: gateway_ai_* metrics carry provider bedrock and the model id', async () => {
    await h
      .openai('br')
      .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'one' }] });
    const text = await (await h.call('GET', '/metrics')).text();
    const labels = `policy="br",node="ai",provider="bedrock",model="${MODEL}"`;
    const line = text
      .split('\n')
      .find((l) => l.startsWith(`gateway_ai_tokens_total{${labels},type="prompt"}`));
    assert.ok(line !== undefined, 'no bedrock token series');
    assert.ok(Number(line.split(' ').at(-1)) >= 1);
    assert.doesNotMatch(text, /wJalrXUtnFEMI|not-the-secret|IQoJb3JpZ2lu/);
  });

  test('bedrock: a viewer reads the configuration with the secret key and session token masked', async () => {
    const text = await (await h.call('GET', '/api/config/export')).text();
    assert.match(text, /bedrock/);
    const viewer = await fetch(`${h.url}/api/config/export`, {
      headers: { authorization: `Basic ${Buffer.from('viewer:Viewer-Pw-123456').toString('base64')}` },
    });
    const masked = await viewer.text();
    assert.equal(viewer.status, 200);
    assert.doesNotMatch(masked, /wJalrXUtnFEMI|IQoJb3JpZ2lu|ABSKbedrock/);
  });
});

describe('event-stream framing (the reader ai-proxy uses for ConverseStream)', () => {
  test('bedrock: frames cut at many byte offsets come out whole; a corrupted CRC ends the stream with an exception', () => {
    const bytes = Buffer.concat([
      eventFrame('messageStart', { role: 'assistant' }),
      eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Grüße ' } }),
      exceptionFrame('throttlingException', 'slow down'),
    ]);
    for (let cut = 1; cut < bytes.length; cut += 7) {
      const reader = new EventStreamReader();
      const events = [
        ...reader.push(bytes.subarray(0, cut)),
        ...reader.push(bytes.subarray(cut)),
        ...reader.end(),
      ];
      assert.deepEqual(
        events.map((e) => e.event),
        ['messageStart', 'contentBlockDelta', 'exception'],
      );
      assert.equal((JSON.parse(events[1]!.data) as { delta: { text: string } }).delta.text, 'Grüße ');
      assert.deepEqual(JSON.parse(events[2]!.data), { type: 'throttlingException', message: 'slow down' });
    }
    const bad = Buffer.from(bytes);
    bad.writeUInt8(bad.readUInt8(bad.length - 1) ^ 0xff, bad.length - 1);
    const reader = new EventStreamReader();
    const events = reader.push(bad);
    assert.equal(events.at(-1)?.event, 'exception');
    assert.match(events.at(-1)!.data, /CRC32/);
    assert.deepEqual(reader.push(eventFrame('messageStop', { stopReason: 'end_turn' })), []);
  });
});

test('bedrock config: aws (with a region) is required, keys go in pairs, api_key or keys but not both', () => {
  const target = (extra: Record<string, unknown>) => ({
    targets: [{ name: 'b', provider: 'bedrock', model: MODEL, ...extra }],
  });
  assertConfigError(() => instantiate(aiProxy, target({})), 'targets[0].aws', /region/);
  assertConfigError(
    () => instantiate(aiProxy, target({ aws: { region: 'us-east-1', access_key_id: KEY_ID } })),
    'targets[0].aws',
    /go together/,
  );
  assertConfigError(
    () =>
      instantiate(
        aiProxy,
        target({
          api_key: 'k',
          aws: { region: 'us-east-1', access_key_id: KEY_ID, secret_access_key: SECRET },
        }),
      ),
    'targets[0].api_key',
  );
  const saved = { id: process.env['AWS_ACCESS_KEY_ID'], secret: process.env['AWS_SECRET_ACCESS_KEY'] };
  delete process.env['AWS_ACCESS_KEY_ID'];
  delete process.env['AWS_SECRET_ACCESS_KEY'];
  try {
    assertConfigError(
      () => instantiate(aiProxy, target({ aws: { region: 'us-east-1' } })),
      'targets[0].aws',
      /needs credentials/,
    );
  } finally {
    if (saved.id !== undefined) process.env['AWS_ACCESS_KEY_ID'] = saved.id;
    if (saved.secret !== undefined) process.env['AWS_SECRET_ACCESS_KEY'] = saved.secret;
  }
});
