/**
 * ai-proxy, the fixed interface details of issue 33 not shown elsewhere: Azure OpenAI and Mistral
 * chat targets (their paths and key headers), an `endpoint` with a path prefix, `client_format`
 * chosen by configuration instead of the path, a target's own `default_max_tokens`, an
 * Anthropic-format client's own key from `x-api-key` or `Authorization: Bearer` under
 * `pass_client_key`, and target keys that never appear in a trace.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { anthropicTarget, openaiTarget, startAiHarness, type AiHarness } from './ai-proxy-harness.js';

const TRIGGER = { 'x-switchyard-debug': '1' };

describe('ai-proxy: interface details', () => {
  let h: AiHarness;
  before(async () => {
    h = await startAiHarness(({ openai, anthropic }) => ({
      azure: {
        targets: [
          openaiTarget(openai, {
            name: 'azure',
            provider: 'azure-openai',
            model: 'my-gpt-deployment',
            api_key: 'openai-test-key',
          }),
        ],
      },
      mistral: {
        targets: [
          openaiTarget(openai, { name: 'mistral', provider: 'mistral', model: 'mistral-small-latest' }),
        ],
      },
      prefixed: { targets: [openaiTarget(openai, { endpoint: `${openai.url}/serving/llm` })] },
      fixedopenai: { targets: [openaiTarget(openai)], config: { client_format: 'openai' } },
      fixedanthropic: { targets: [openaiTarget(openai)], config: { client_format: 'anthropic' } },
      auto: { targets: [openaiTarget(openai)] },
      maxtok: { targets: [anthropicTarget(anthropic, { default_max_tokens: 321 })] },
      byoanthropic: {
        targets: [anthropicTarget(anthropic, { api_key: undefined })],
        config: { pass_client_key: true },
      },
    }));
  });
  after(() => h.stop());

  test('azure-openai: the deployment path with api-version and the key in api-key, whole and streamed', async () => {
    const seen = h.openaiProvider.requests.length;
    const answer = await h.openai('azure').chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'say hi' }],
    });
    assert.equal(answer.choices[0]?.message.content, 'Hello from OpenAI: say hi');
    const got = h.openaiProvider.requests[seen]!;
    assert.equal(got.path, '/openai/deployments/my-gpt-deployment/chat/completions?api-version=2024-10-21');
    assert.equal(got.headers['api-key'], 'openai-test-key');
    assert.equal(got.headers.authorization, undefined);
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    const stream = await h.openai('azure').chat.completions.create({
      model: 'gpt-4o',
      stream: true,
      messages: [{ role: 'user', content: 'count to three' }],
    });
    for await (const c of stream) chunks.push(c);
    assert.ok(chunks.length > 1);
    assert.ok(
      chunks.every((c) => c.usage === undefined || c.usage === null),
      'no usage chunk it did not ask for',
    );
    assert.deepEqual(h.openaiProvider.requests.at(-1)!.body.stream_options, { include_usage: true });
  });

  test('mistral: /v1/chat/completions with Authorization: Bearer and the target model', async () => {
    const seen = h.openaiProvider.requests.length;
    const answer = await h.openai('mistral').chat.completions.create({
      model: 'x',
      messages: [{ role: 'user', content: 'say hi' }],
    });
    assert.equal(answer.choices[0]?.message.content, 'Hello from OpenAI: say hi');
    const got = h.openaiProvider.requests[seen]!;
    assert.equal(got.path, '/v1/chat/completions');
    assert.equal(got.headers.authorization, 'Bearer openai-test-key');
    assert.equal(got.body.model, 'mistral-small-latest');
  });

  test("endpoint with a path prefix: the provider's own path goes after it", async () => {
    const seen = h.openaiProvider.requests.length;
    await h
      .openai('prefixed')
      .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(h.openaiProvider.requests[seen]!.path, '/serving/llm/v1/chat/completions');
  });

  test('client_format: a configured format serves a path that names none; auto answers such a path 404', async () => {
    const openaiShaped = await fetch(`${h.data}/fixedopenai/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'say hi' }] }),
    });
    assert.equal(openaiShaped.status, 200);
    const chat = (await openaiShaped.json()) as {
      object: string;
      choices: { message: { content: string } }[];
    };
    assert.equal(chat.object, 'chat.completion');
    assert.equal(chat.choices[0]?.message.content, 'Hello from OpenAI: say hi');

    const anthropicShaped = await fetch(`${h.data}/fixedanthropic/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x', max_tokens: 20, messages: [{ role: 'user', content: 'say hi' }] }),
    });
    assert.equal(anthropicShaped.status, 200);
    const message = (await anthropicShaped.json()) as {
      type: string;
      content: { type: string; text: string }[];
    };
    assert.equal(message.type, 'message');
    assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from OpenAI: say hi' }]);

    const auto = await fetch(`${h.data}/auto/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'say hi' }] }),
    });
    assert.equal(auto.status, 404);
  });

  test("default_max_tokens: a target's own value is sent to Anthropic when the client names no limit", async () => {
    const seen = h.anthropicProvider.requests.length;
    await h
      .openai('maxtok')
      .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(h.anthropicProvider.requests[seen]!.body.max_tokens, 321);
  });

  test('pass_client_key: an Anthropic-format client authenticates with x-api-key or Authorization: Bearer', async () => {
    const viaApiKey = new Anthropic({
      apiKey: 'anthropic-test-key',
      baseURL: `${h.data}/byoanthropic`,
      maxRetries: 0,
    });
    const a = await viaApiKey.messages.create({
      model: 'x',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.deepEqual(a.content, [{ type: 'text', text: 'Hello from Anthropic: hi' }]);
    const first = h.anthropicProvider.requests.at(-1)!;
    assert.equal(first.headers['x-api-key'], 'anthropic-test-key');
    assert.equal(first.headers['anthropic-version'], '2023-06-01');

    const viaBearer = new Anthropic({
      apiKey: null,
      authToken: 'anthropic-test-key',
      baseURL: `${h.data}/byoanthropic`,
      maxRetries: 0,
    });
    const b = await viaBearer.messages.create({
      model: 'x',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.deepEqual(b.content, [{ type: 'text', text: 'Hello from Anthropic: hi' }]);
    const second = h.anthropicProvider.requests.at(-1)!;
    assert.equal(
      second.headers['x-api-key'],
      'anthropic-test-key',
      'the bearer token goes the provider’s way',
    );
    assert.equal(second.headers.authorization, undefined);
  });

  test("a target's api_key never appears in the trace of the call", async () => {
    const { response } = await h
      .openai('azure')
      .chat.completions.create(
        { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
        { headers: TRIGGER },
      )
      .withResponse();
    const id = response.headers.get('x-switchyard-trace-id');
    assert.ok(id !== null, 'the answer names its trace');
    const trace = await h.call('GET', `/api/debug/traces/${id}`);
    assert.equal(trace.status, 200);
    const text = await trace.text();
    assert.match(text, /"node_id":"ai"/);
    assert.doesNotMatch(text, /openai-test-key/);
  });
});
