/**
 * ai-proxy, OpenAI embeddings client format (issue 33 item 2): the openai SDK's
 * `embeddings.create` (which asks for base64 unless told otherwise) through a route to OpenAI,
 * Azure OpenAI, Mistral, OpenAI-compatible, Gemini (`:batchEmbedContents`) and Bedrock
 * (InvokeModel, Titan and Cohere) providers; vectors, usage on the context and in metrics,
 * fallback, and a clear 400 when no target of the route can embed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startBedrockProvider, type BedrockProvider } from '../../support/bedrock-provider.js';
import { embeddingOf } from '../../support/llm-providers.js';
import {
  anthropicTarget,
  geminiTarget,
  openaiTarget,
  startAiHarness,
  type AiHarness,
} from './ai-proxy-harness.js';

const KEY_ID = 'AKIAIOSFODNN7EXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const USAGE_HEADERS = {
  'x-ai-provider': '{{message.ai.provider}}',
  'x-ai-prompt-tokens': '{{message.ai.usage.prompt_tokens}}',
  'x-ai-total-tokens': '{{message.ai.usage.total_tokens}}',
};
/** What the openai SDK decodes from base64: float32 values. */
const f32 = (v: number[]): number[] => v.map((x) => Math.fround(x));

describe('ai-proxy: OpenAI embeddings through every provider that has them', () => {
  let bedrock: BedrockProvider;
  let h: AiHarness;
  before(async () => {
    bedrock = await startBedrockProvider('us-west-2');
    bedrock.addCredentials(KEY_ID, SECRET);
    const aws = { region: 'us-west-2', access_key_id: KEY_ID, secret_access_key: SECRET };
    h = await startAiHarness(({ openai, anthropic, gemini }) => ({
      compat: { targets: [openaiTarget(openai, { model: 'nomic-embed-text' })], headers: USAGE_HEADERS },
      oai: {
        targets: [openaiTarget(openai, { name: 'oai', provider: 'openai', model: 'text-embedding-3-small' })],
      },
      az: {
        targets: [
          openaiTarget(openai, {
            name: 'az',
            provider: 'azure-openai',
            model: 'embed-deploy',
            api_version: '2024-10-21',
          }),
        ],
      },
      mi: { targets: [openaiTarget(openai, { name: 'mi', provider: 'mistral', model: 'mistral-embed' })] },
      gem: { targets: [geminiTarget(gemini, { model: 'text-embedding-004' })], headers: USAGE_HEADERS },
      titan: {
        targets: [
          {
            name: 'titan',
            provider: 'bedrock',
            endpoint: bedrock.url,
            model: 'amazon.titan-embed-text-v2:0',
            aws,
          },
        ],
        headers: USAGE_HEADERS,
      },
      cohere: {
        targets: [
          {
            name: 'cohere',
            provider: 'bedrock',
            endpoint: bedrock.url,
            model: 'cohere.embed-english-v3',
            aws,
          },
        ],
      },
      claude: { targets: [anthropicTarget(anthropic)] },
      brchat: {
        targets: [
          {
            name: 'br',
            provider: 'bedrock',
            endpoint: bedrock.url,
            model: 'anthropic.claude-3-5-haiku-20241022-v1:0',
            aws,
          },
        ],
      },
      mixed: {
        targets: [
          anthropicTarget(anthropic, { priority: 2 }),
          geminiTarget(gemini, { model: 'text-embedding-004', priority: 1 }),
          openaiTarget(openai, { model: 'nomic-embed-text' }),
        ],
      },
    }));
  });
  after(async () => {
    await h.stop();
    await bedrock.close();
  });

  test('embeddings: openai SDK (base64 by default) to an OpenAI-compatible target: float32 vectors, usage on the context', async () => {
    const { data, response } = await h
      .openai('compat')
      .embeddings.create({ model: 'alias', input: ['the quick fox', 'lazy dog'] })
      .withResponse();
    assert.deepEqual(
      data.data.map((d) => d.embedding),
      [f32(embeddingOf('the quick fox')), f32(embeddingOf('lazy dog'))],
    );
    assert.deepEqual(data.usage, { prompt_tokens: 5, total_tokens: 5 });
    assert.equal(data.model, 'nomic-embed-text');
    const sent = h.openaiProvider.requests.at(-1)!;
    assert.equal(sent.path, '/v1/embeddings');
    // The gateway asks an OpenAI-compatible server for floats and encodes base64 itself.
    assert.equal(sent.body.encoding_format, undefined);
    assert.equal(sent.body.model, 'nomic-embed-text');
    assert.equal(response.headers.get('x-ai-prompt-tokens'), '5');
    assert.equal(response.headers.get('x-ai-total-tokens'), '5');
  });

  test('embeddings: encoding_format float gets the provider numbers unchanged', async () => {
    const answer = await h
      .openai('compat')
      .embeddings.create({ model: 'x', input: 'hello', encoding_format: 'float' });
    assert.deepEqual(answer.data[0]?.embedding, embeddingOf('hello'));
  });

  test('embeddings: openai and azure-openai targets get the body as sent (base64 included) on their own paths', async () => {
    const a = await h.openai('oai').embeddings.create({ model: 'x', input: 'hello there' });
    assert.deepEqual(a.data[0]?.embedding, f32(embeddingOf('hello there')));
    let sent = h.openaiProvider.requests.at(-1)!;
    assert.equal(sent.path, '/v1/embeddings');
    assert.equal(sent.body.encoding_format, 'base64');
    assert.equal(sent.headers.authorization, 'Bearer openai-test-key');

    const z = await h.openai('az').embeddings.create({ model: 'x', input: 'hello there', dimensions: 4 });
    assert.deepEqual(z.data[0]?.embedding, f32(embeddingOf('hello there', 4)));
    sent = h.openaiProvider.requests.at(-1)!;
    assert.equal(sent.path, '/openai/deployments/embed-deploy/embeddings?api-version=2024-10-21');
    assert.equal(sent.headers['api-key'], 'openai-test-key');

    const m = await h.openai('mi').embeddings.create({ model: 'x', input: 'bonjour' });
    assert.deepEqual(m.data[0]?.embedding, f32(embeddingOf('bonjour')));
    assert.equal(h.openaiProvider.requests.at(-1)!.body.model, 'mistral-embed');
  });

  test('embeddings: a Gemini target gets :batchEmbedContents; usage is estimated (Gemini reports none)', async () => {
    const { data, response } = await h
      .openai('gem')
      .embeddings.create({ model: 'x', input: ['abcdefgh', 'xyz'], dimensions: 6 })
      .withResponse();
    assert.deepEqual(
      data.data.map((d) => d.embedding),
      [f32(embeddingOf('abcdefgh', 6)), f32(embeddingOf('xyz', 6))],
    );
    const sent = h.geminiProvider.requests.at(-1)!;
    assert.equal(sent.path, '/v1beta/models/text-embedding-004:batchEmbedContents');
    assert.deepEqual(sent.body.requests, [
      {
        model: 'models/text-embedding-004',
        content: { parts: [{ text: 'abcdefgh' }] },
        outputDimensionality: 6,
      },
      { model: 'models/text-embedding-004', content: { parts: [{ text: 'xyz' }] }, outputDimensionality: 6 },
    ]);
    assert.equal(sent.headers['x-goog-api-key'], 'gemini-test-key');
    assert.deepEqual(data.usage, { prompt_tokens: 3, total_tokens: 3 });
    assert.equal(response.headers.get('x-ai-provider'), 'gemini');
  });

  test('embeddings: Bedrock Titan (one signed InvokeModel per input) and Cohere (one call), tokens from Bedrock', async () => {
    const seen = bedrock.requests.length;
    const { data, response } = await h
      .openai('titan')
      .embeddings.create({ model: 'x', input: ['one two', 'three'], dimensions: 4 })
      .withResponse();
    assert.deepEqual(
      data.data.map((d) => d.embedding),
      [f32(embeddingOf('one two', 4)), f32(embeddingOf('three', 4))],
    );
    assert.deepEqual(data.usage, { prompt_tokens: 3, total_tokens: 3 });
    assert.equal(response.headers.get('x-ai-total-tokens'), '3');
    const calls = bedrock.requests.slice(seen);
    assert.deepEqual(
      calls.map((c) => [c.path, c.verdict, c.body]),
      [
        ['/model/amazon.titan-embed-text-v2%3A0/invoke', 'ok', { inputText: 'one two', dimensions: 4 }],
        ['/model/amazon.titan-embed-text-v2%3A0/invoke', 'ok', { inputText: 'three', dimensions: 4 }],
      ],
    );

    const c = await h.openai('cohere').embeddings.create({ model: 'x', input: ['alpha beta', 'gamma'] });
    assert.deepEqual(
      c.data.map((d) => d.embedding),
      [f32(embeddingOf('alpha beta')), f32(embeddingOf('gamma'))],
    );
    assert.deepEqual(c.usage, { prompt_tokens: 3, total_tokens: 3 });
    assert.deepEqual(bedrock.requests.at(-1)!.body, {
      texts: ['alpha beta', 'gamma'],
      input_type: 'search_document',
    });
  });

  test('embeddings: gateway_ai_tokens_total counts the prompt tokens of embeddings calls', async () => {
    await h.openai('compat').embeddings.create({ model: 'x', input: 'count these four words' });
    const text = await (await h.call('GET', '/metrics')).text();
    const line = text
      .split('\n')
      .find((l) =>
        l.startsWith(
          'gateway_ai_tokens_total{policy="compat",node="ai",provider="openai-compatible",model="nomic-embed-text",type="prompt"}',
        ),
      );
    assert.ok(line !== undefined, 'no embeddings token series');
    assert.ok(Number(line.split(' ').at(-1)) >= 4);
  });

  test('embeddings: targets that cannot embed are skipped; a route with none answers 400 saying why', async () => {
    h.geminiProvider.next(429);
    const fell = await h
      .openai('mixed')
      .embeddings.create({ model: 'x', input: 'hi', encoding_format: 'float' });
    assert.deepEqual(fell.data[0]?.embedding, embeddingOf('hi'));
    await assert.rejects(
      h.openai('claude').embeddings.create({ model: 'x', input: 'hi' }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 400);
        assert.match(err.message, /anthropic has no embeddings API/);
        return true;
      },
    );
    await assert.rejects(
      h.openai('brchat').embeddings.create({ model: 'x', input: 'hi' }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 400);
        assert.match(err.message, /Titan \(amazon\.titan-embed-\*\) or Cohere/);
        return true;
      },
    );
    await assert.rejects(h.openai('compat').embeddings.create({ model: 'x', input: [] }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal(err.status, 400);
      assert.match(err.message, /'input' must be/);
      return true;
    });
  });
});
