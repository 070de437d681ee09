/**
 * ai-rate-limit `policy: local` in a real gateway with `workers: 2`: the token windows are the
 * primary's, so calls answered by either worker spend one budget per key, exactly as in one
 * process (same headers, 429 with retry-after), and the budget outlives a killed worker
 * (docs/plugins/ai-rate-limit.md#windows, docs/workers.md).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startClusterGateway, waitForWorkers, type ClusterGateway } from '../../cluster/harness.js';
import { request, type SimpleResponse } from '../../support/http.js';
import { skipWithoutRedis, startRedis, type RedisServer } from '../../support/redis.js';
import type { Origin } from '../../support/origins.js';
import { waitFor } from '../../support/wait.js';
import { startStandInLlm } from './stand-in-llm.js';

const skip = skipWithoutRedis();
let redis: RedisServer | undefined;
let llm: Origin;
let gw: ClusterGateway;

const gatewayYaml = (port: number) => `
${redis === undefined ? '' : `stores:\n  - { name: main, type: redis, url: "${redis.url}" }`}
routes:
  - { name: chat, match: { path: /v1/* }, policy: p }
  - { name: estimated, match: { path: /estimated/* }, policy: e }
  - { name: stored, match: { path: /stored/* }, policy: ${redis === undefined ? 'e' : 's'} }
policies:${policy('p', '{ limit: 100, time_window: 600, key: $http_x_user }', port)}${policy('e', '{ limit: 100, time_window: 600, key: $http_x_user, estimate: true }', port)}${
  redis === undefined
    ? ''
    : policy(
        's',
        '{ limit: 100, time_window: 600, key: $http_x_user, estimate: true, policy: kvstore, store: main }',
        port,
      )
}
`;

/** listener → budget (check, `budget` its config) → llm → count → client. */
const policy = (name: string, budget: string, port: number) => `
  - name: ${name}
    nodes:
      - { id: listener, type: listener }
      - { id: budget, type: ai-rate-limit, config: ${budget} }
      - { id: llm, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
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
      - { from: count.error, to: client.in }`;

before(async () => {
  llm = await startStandInLlm();
  if (skip === false) redis = await startRedis();
  gw = await startClusterGateway(gatewayYaml(llm.port), { workers: 2 });
  await waitForWorkers(gw, 2);
});

after(async () => {
  await gw?.stop();
  await llm?.close();
  await redis?.stop();
});

/** One call costing 20 prompt + 10 completion tokens, on a fresh connection (node:cluster spreads them). */
const chat = (user: string): Promise<SimpleResponse> =>
  request(`${gw.data}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-user': user,
      'x-prompt-tokens': '20',
      'x-completion-tokens': '10',
    },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });

/** `count` calls one after another; asserts both workers answered some of them (gateway_cluster_worker_requests_total). */
async function callsOverBothWorkers(user: string, count: number): Promise<SimpleResponse[]> {
  const before = await gw.workers();
  const answers: SimpleResponse[] = [];
  for (let i = 0; i < count; i++) answers.push(await chat(user));
  let served: number[] = [];
  // A worker counts a request when its answer is finished: wait until all of them are in.
  await waitFor(
    async () => {
      served = [...(await gw.workers())].map(([slot, w]) => {
        const was = before.get(slot);
        return w.requests - (was?.pid === w.pid ? was.requests : 0);
      });
      return served.reduce((a, b) => a + b, 0) >= count;
    },
    { timeoutMs: 30_000, intervalMs: 100, what: `${count} requests counted by the workers` },
  );
  assert.equal(served.length, 2, `serving workers: ${served.join(', ')}`);
  assert.ok(
    served.every((n) => n > 0),
    `both workers answered: ${served.join(', ')}`,
  );
  return answers;
}

const remaining = (answers: SimpleResponse[]): string[] =>
  answers.map((a) => String(a.headers['x-ratelimit-remaining-tokens']));

test('ai-rate-limit local, workers: 2: calls answered by both workers spend one budget; the next call gets 429 on either', async () => {
  const seen = llm.requests.length;
  const answers = await callsOverBothWorkers('ada', 6);
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 200, 200, 200, 429, 429],
    'used 0, 30, 60, 90 admitted (the fourth crosses); 120 refused',
  );
  assert.deepEqual(
    remaining(answers),
    ['70', '40', '10', '0', '0', '0'],
    'down monotonically across workers',
  );
  assert.equal(llm.requests.length - seen, 4, 'the refused calls never reached the LLM');
  for (const a of answers) {
    assert.equal(a.headers['x-ratelimit-limit-tokens'], '100');
    assert.match(String(a.headers['x-ratelimit-reset-tokens']), /^(10m0s|9m\d+s)$/);
  }
  const refused = answers[4] as SimpleResponse;
  const retryAfter = Number(refused.headers['retry-after']);
  assert.ok(retryAfter >= 1 && retryAfter <= 600, `retry-after ${String(refused.headers['retry-after'])}`);
  const error = (JSON.parse(refused.body) as { error: Record<string, unknown> }).error;
  assert.equal(error.type, 'rate_limit_exceeded');

  // Whichever worker answers, the spent budget stays spent.
  const more = await callsOverBothWorkers('ada', 6);
  assert.deepEqual(
    more.map((a) => a.status),
    Array.from({ length: 6 }, () => 429),
  );
  assert.deepEqual(
    (await callsOverBothWorkers('bob', 2)).map((a) => a.status),
    [200, 200],
    'another key has its own budget',
  );
});

test('ai-rate-limit local, workers: 2: the budget is the primary’s and outlives a killed worker', async () => {
  const first = await callsOverBothWorkers('kim', 2);
  assert.deepEqual(remaining(first), ['70', '40']);
  const victim = (await gw.workers()).get(1)?.pid as number;
  process.kill(victim, 'SIGKILL');
  await waitFor(
    async () => {
      const now = await gw.workers();
      return now.size === 2 && now.get(1) !== undefined && now.get(1)?.pid !== victim;
    },
    { timeoutMs: 60_000, intervalMs: 200, what: 'worker 1 to be replaced' },
  );
  const rest = await callsOverBothWorkers('kim', 4);
  assert.deepEqual(
    rest.map((a) => a.status),
    [200, 200, 429, 429],
    'the replacement and the survivor go on from 60 used',
  );
  assert.deepEqual(remaining(rest), ['10', '0', '0', '0']);
});

/** 8 concurrent estimated calls of 30 tokens on `path` (both workers): exactly 3 fit in 100. */
async function concurrentEstimates(path: string): Promise<void> {
  // 120 characters: an estimate of 30 tokens, and the call really costs 30 (no completion tokens).
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(120) }] });
  const call = (): Promise<SimpleResponse> =>
    request(`${gw.data}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-user': 'eve',
        'x-prompt-tokens': '30',
        'x-completion-tokens': '0',
      },
      body,
    });
  const before = await gw.workers();
  const answers = await Promise.all(Array.from({ length: 8 }, call));
  await waitFor(
    async () => {
      const now = await gw.workers();
      return (
        [...now].reduce((sum, [slot, w]) => sum + w.requests - (before.get(slot)?.requests ?? 0), 0) >= 8
      );
    },
    { timeoutMs: 30_000, intervalMs: 100, what: 'eight requests counted by the workers' },
  );
  const statuses = answers.map((a) => a.status).sort();
  assert.deepEqual(
    statuses,
    [200, 200, 200, 429, 429, 429, 429, 429],
    '30 + 30 + 30 fit in 100; a fourth would not',
  );
  const last = await call();
  assert.equal(last.status, 429);
  assert.equal(last.headers['x-ratelimit-remaining-tokens'], '10');
}

test('ai-rate-limit local estimate, workers: 2: concurrent calls on both workers cannot share the room an estimate takes', async () => {
  await concurrentEstimates('/estimated/chat');
});

test(
  'ai-rate-limit kvstore estimate, workers: 2: the store checks and counts an estimate in one script',
  { skip },
  async () => {
    await concurrentEstimates('/stored/chat');
  },
);
