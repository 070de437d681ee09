/**
 * ai-rate-limit in a real gateway in front of a stand-in OpenAI/Anthropic server: token budgets
 * counted from the real usage after the call (whole answers and streams), the budget headers,
 * the 429, local and Redis windows (exact across `workers: 2`), the error port, config rejections.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { closeAllStores } from '../../../src/stores/index.js';
import { aiRateLimit } from '../../../src/plugins/ai/ai-rate-limit.js';
import { openAiDuration } from '../../../src/plugins/ai/ai-rate-limit-counter.js';
import { startClusterGateway, waitForWorkers, type ClusterGateway } from '../../cluster/harness.js';
import { assertConfigError } from '../../support/assertions.js';
import { deadPort, type Origin } from '../../support/origins.js';
import { request, type SimpleResponse } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { instantiate } from '../../support/plugin-env.js';
import { skipWithoutRedis, startRedis, testStores, type RedisServer } from '../../support/redis.js';
import { startStandInLlm } from './stand-in-llm.js';

const skip = skipWithoutRedis();
let redis: RedisServer | undefined;
let llm: Origin;
const gateways: RunningGateway[] = [];
const clusters: ClusterGateway[] = [];

before(async () => {
  llm = await startStandInLlm();
  if (skip === false) redis = await startRedis();
});

after(async () => {
  await Promise.all(clusters.map((c) => c.stop()));
  await Promise.all(gateways.map((g) => g.stop()));
  await closeAllStores();
  await llm?.close();
  await redis?.stop();
});

/** listener → budget (check) → llm (plain upstream) → count → client; `budget` is the check half's config. */
const budgetYaml = (budget: string, stores = '') => `
${stores}
routes:
  - { name: ready, match: { path: /ready }, policy: ready }
  - { name: chat, match: { path: /v1/* }, policy: p }
policies:
  - name: ready
    nodes:
      - { id: listener, type: listener }
      - { id: ok, type: mocking, config: { response_example: ready, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: ok.in }
      - { from: ok.success, to: client.in }
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: budget, type: ai-rate-limit, config: ${budget} }
      - { id: llm, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${llm.port} }] } }
      - { id: count, type: ai-rate-limit, config: { phase: count } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: budget.in }
      - { from: budget.success, to: llm.in }
      - { from: budget.limited, to: client.in }
      - { from: budget.error, to: client.in }
      - { from: llm.success, to: count.in }
      - { from: count.success, to: client.in }
      - { from: count.limited, to: client.in }
      - { from: count.error, to: client.in }
`;

const chat = (
  base: string,
  options: { user?: string; prompt?: number; completion?: number; body?: unknown; path?: string } = {},
): Promise<SimpleResponse> =>
  request(`${base}${options.path ?? '/v1/chat/completions'}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-user': options.user ?? 'ada',
      'x-prompt-tokens': String(options.prompt ?? 10),
      'x-completion-tokens': String(options.completion ?? 5),
    },
    body: JSON.stringify(options.body ?? { model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });

const budgetHeaders = (res: SimpleResponse) => [
  res.headers['x-ratelimit-limit-tokens'],
  res.headers['x-ratelimit-remaining-tokens'],
];

test('ai-rate-limit: the usage of a call counts after it; the call that crosses is admitted, the next gets 429', async () => {
  const gw = await startGateway(budgetYaml('{ limit: 25, time_window: 60, key: $http_x_user }'));
  gateways.push(gw);
  const seen = llm.requests.length;
  const first = await chat(gw.url);
  assert.equal(first.status, 200);
  assert.deepEqual(budgetHeaders(first), ['25', '10'], 'remaining after the call: 25 - 15');
  assert.match(String(first.headers['x-ratelimit-reset-tokens']), /^(1m0s|59s|58s)$/);
  const second = await chat(gw.url);
  assert.equal(second.status, 200, 'used 15 < 25: admitted although it crosses');
  assert.deepEqual(budgetHeaders(second), ['25', '0'], 'max(0, 25 - 30)');
  const third = await chat(gw.url);
  assert.equal(third.status, 429);
  assert.deepEqual(budgetHeaders(third), ['25', '0']);
  const retryAfter = Number(third.headers['retry-after']);
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `retry-after ${String(third.headers['retry-after'])}`);
  const error = (JSON.parse(third.body) as { error: Record<string, unknown> }).error;
  assert.equal(error.type, 'rate_limit_exceeded');
  assert.equal(error.code, 'rate_limit_exceeded');
  assert.equal(llm.requests.length - seen, 2, 'the refused call never reached the LLM');
  assert.equal((await chat(gw.url, { user: 'bob' })).status, 200, 'another key has its own budget');
});

test('ai-rate-limit token_type: completion counts only completion tokens; prompt only prompt tokens', async () => {
  const gw = await startGateway(
    budgetYaml('{ limit: 12, time_window: 60, key: $http_x_user, token_type: completion }'),
  );
  gateways.push(gw);
  const first = await chat(gw.url, { prompt: 1000, completion: 6 });
  assert.deepEqual(budgetHeaders(first), ['12', '6']);
  assert.equal((await chat(gw.url, { prompt: 1000, completion: 6 })).status, 200);
  assert.equal((await chat(gw.url)).status, 429);
  const prompt = await startGateway(budgetYaml('{ limit: 100, time_window: 60, token_type: prompt }'));
  gateways.push(prompt);
  assert.deepEqual(budgetHeaders(await chat(prompt.url, { prompt: 30, completion: 500 })), ['100', '70']);
});

test('ai-rate-limit: a streamed answer is relayed as it comes and counted from its usage chunk at its end', async () => {
  const gw = await startGateway(budgetYaml('{ limit: 40, time_window: 60, key: $http_x_user }'));
  gateways.push(gw);
  const stream = {
    model: 'm',
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'hi' }],
  };
  const first = await chat(gw.url, { body: stream, prompt: 20, completion: 10 });
  assert.equal(first.status, 200, first.body);
  assert.match(first.body, /data: \[DONE\]/);
  assert.match(first.body, /"total_tokens":30/, 'the stream reaches the client unchanged');
  assert.deepEqual(
    budgetHeaders(first),
    ['40', '40'],
    'a stream carries the budget as it was before the call',
  );
  const second = await chat(gw.url, { body: stream, prompt: 20, completion: 10 });
  assert.deepEqual(budgetHeaders(second), ['40', '10'], 'the first stream was counted: 40 - 30');
  assert.equal((await chat(gw.url)).status, 429, '60 of 40 used');
});

test('ai-rate-limit: an Anthropic Messages answer counts input_tokens + output_tokens', async () => {
  const gw = await startGateway(budgetYaml('{ limit: 100, time_window: 60 }'));
  gateways.push(gw);
  const res = await chat(gw.url, {
    path: '/v1/messages',
    prompt: 7,
    completion: 3,
    body: { model: 'claude', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal(res.status, 200);
  assert.deepEqual(budgetHeaders(res), ['100', '90']);
});

test('ai-rate-limit estimate: a prompt whose estimate (chars / 4) would cross the budget is refused before the call', async () => {
  const gw = await startGateway(
    budgetYaml('{ limit: 20, time_window: 60, key: $http_x_user, estimate: true }'),
  );
  gateways.push(gw);
  const seen = llm.requests.length;
  const long = { messages: [{ role: 'user', content: 'x'.repeat(200) }] };
  const refused = await chat(gw.url, { body: long });
  assert.equal(refused.status, 429, 'an estimate of 50 tokens does not fit in 20');
  assert.equal(llm.requests.length, seen);
  // A short prompt: estimated 1 token, then replaced by the real 15.
  const ok = await chat(gw.url, { body: { messages: [{ role: 'user', content: 'hi' }] } });
  assert.equal(ok.status, 200);
  assert.deepEqual(budgetHeaders(ok), ['20', '5']);
});

test('ai-rate-limit kvstore: two workers count into one Redis window exactly', { skip }, async () => {
  const stores = `stores:\n  - { name: main, type: redis, url: "${redis?.url ?? ''}" }`;
  const cluster = await startClusterGateway(
    budgetYaml(
      '{ limit: 100, time_window: 60, key: shared, key_type: constant, policy: kvstore, store: main }',
      stores,
    ),
    { workers: 2 },
  );
  clusters.push(cluster);
  await waitForWorkers(cluster, 2);
  const statuses: number[] = [];
  const remaining: string[] = [];
  // One call at a time, each on a fresh connection (node:cluster spreads them over both workers).
  for (let i = 0; i < 6; i++) {
    const res = await chat(cluster.data, { prompt: 20, completion: 10 });
    statuses.push(res.status);
    remaining.push(String(res.headers['x-ratelimit-remaining-tokens']));
  }
  assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429], 'used 0, 30, 60, 90 admitted; 120 refused');
  assert.deepEqual(remaining, ['70', '40', '10', '0', '0', '0']);
});

test('ai-rate-limit error: with the store down the check fails with RATE_LIMIT_UNAVAILABLE; allow_degradation lets it through', async () => {
  const stores = `stores:\n  - { name: down, type: redis, url: "redis://127.0.0.1:${await deadPort()}", connect_timeout_ms: 200, connect_budget_ms: 400 }`;
  const closed = await startGateway(
    budgetYaml('{ limit: 10, time_window: 60, policy: kvstore, store: down }', stores),
  );
  const open = await startGateway(
    budgetYaml(
      '{ limit: 10, time_window: 60, policy: kvstore, store: down, allow_degradation: true }',
      stores,
    ),
  );
  gateways.push(closed, open);
  const failed = await chat(closed.url);
  assert.equal(failed.status, 500);
  assert.match(failed.body, /failed to check the token budget/);
  assert.equal((await chat(open.url)).status, 200);
});

test('ai-rate-limit config: the check half needs limit and time_window; a store policy needs a known store', () => {
  assertConfigError(() => instantiate(aiRateLimit, { time_window: 60 }), 'limit');
  assertConfigError(() => instantiate(aiRateLimit, { limit: 5 }), 'time_window');
  assertConfigError(
    () => instantiate(aiRateLimit, { limit: 5, time_window: 1, policy: 'kvstore' }),
    'store',
    /required/,
  );
  assertConfigError(
    () => instantiate(aiRateLimit, { limit: 5, time_window: 1, policy: 'kvstore', store: 'nope' }),
    'store',
    /unknown store 'nope'/,
  );
  const stores = testStores({});
  assert.ok(stores !== undefined);
});

test("ai-rate-limit: x-ratelimit-reset-tokens uses OpenAI's duration form", () => {
  assert.equal(openAiDuration(12_000), '12s');
  assert.equal(openAiDuration(360_000), '6m0s');
  assert.equal(openAiDuration(3_723_000), '1h2m3s');
  assert.equal(openAiDuration(400), '1s');
});

test('ai-rate-limit behind ai-proxy: the count half takes message.ai.usage.* (whole and streamed answers)', async () => {
  // ai-proxy builds its own provider request (no x-*-tokens headers): each call costs the stand-in's 10 + 5.
  const yaml = budgetYaml('{ limit: 40, time_window: 60, key: $http_x_user }').replace(
    /- \{ id: llm, type: upstream, config: [^\n]*/,
    `- { id: llm, type: ai-proxy, config: { targets: [{ name: local, provider: openai-compatible, endpoint: "http://127.0.0.1:${llm.port}" }] } }`,
  );
  const gw = await startGateway(yaml);
  gateways.push(gw);
  const whole = await chat(gw.url, {});
  assert.equal(whole.status, 200, whole.body);
  assert.deepEqual(budgetHeaders(whole), ['40', '25']);
  // The client did not ask for the usage chunk: ai-proxy asks the provider for it and keeps it.
  const streamed = await chat(gw.url, {
    body: { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal(streamed.status, 200);
  assert.doesNotMatch(streamed.body, /total_tokens/);
  const third = await chat(gw.url, {});
  assert.deepEqual(
    budgetHeaders(third),
    ['40', '0'],
    'the stream was counted from message.ai.usage: 40 - 45',
  );
  assert.equal((await chat(gw.url)).status, 429);
});
