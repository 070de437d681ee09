/**
 * ai-proxy fallback: a 429, a 5xx, a timeout or a refused connection moves the call to the next
 * target (priority first, weight within one) before anything reached the client, the trace
 * records each failed target, and when every target failed the client gets 503/504 with an
 * OpenAI-style error body. The gateway's AI metrics and the access log carry model, provider and
 * tokens.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { freePort } from '../../support/free-port.js';
import { tempDir } from '../../support/temp-dir.js';
import { waitFor } from '../../support/wait.js';
import { anthropicTarget, openaiTarget, startAiHarness, type AiHarness } from './ai-proxy-harness.js';

const TRIGGER = { 'x-switchyard-debug': '1' };

interface TraceStep {
  node_id: string;
  after: { message: Record<string, unknown> };
}

describe('ai-proxy: fallback across targets, metrics and the access log', () => {
  let h: AiHarness;
  const logDir = tempDir('switchyard-ai-log-');
  const logFile = join(logDir.path, 'access.log');
  before(async () => {
    const dead = await freePort();
    const deadTarget = {
      name: 'dead',
      provider: 'openai-compatible',
      endpoint: `http://127.0.0.1:${dead}`,
      priority: 5,
    };
    h = await startAiHarness(
      ({ openai, anthropic }) => ({
        fb: {
          targets: [
            anthropicTarget(anthropic, { name: 'secondary', priority: 0 }),
            openaiTarget(openai, { name: 'primary', priority: 1, timeout_ms: 400 }),
          ],
        },
        refused: { targets: [deadTarget, anthropicTarget(anthropic, { name: 'live' })] },
        down: { targets: [deadTarget, openaiTarget(openai, { name: 'last', timeout_ms: 400 })] },
        drained: {
          targets: [
            openaiTarget(openai, { name: 'a', weight: 3 }),
            anthropicTarget(anthropic, { name: 'b', weight: 0 }),
          ],
        },
        badkey: {
          targets: [
            openaiTarget(openai, { name: 'misconfigured', api_key: 'revoked-key', priority: 1 }),
            anthropicTarget(anthropic),
          ],
        },
        badkeyonly: { targets: [openaiTarget(openai, { name: 'misconfigured', api_key: 'revoked-key' })] },
        shared: {
          targets: [
            openaiTarget(openai, { name: 'a', weight: 3 }),
            anthropicTarget(anthropic, { name: 'b', weight: 1 }),
          ],
        },
      }),
      { system: `access_log: { output: '${logFile}', format: json }` },
    );
  });
  after(async () => {
    await h.stop();
    logDir.remove();
  });

  async function traceSteps(response: Response): Promise<TraceStep[]> {
    const id = response.headers.get('x-switchyard-trace-id');
    assert.ok(id !== null, 'the answer names its trace');
    const res = await h.call('GET', `/api/debug/traces/${id}`);
    assert.equal(res.status, 200);
    return ((await res.json()) as { steps: TraceStep[] }).steps;
  }

  for (const mishap of [429, 500, 'hang'] as const) {
    test(`ai-proxy: the primary target answering ${mishap === 'hang' ? 'nothing (timeout)' : mishap} falls back to the next priority, and the trace says so`, async () => {
      h.openaiProvider.next(mishap);
      const { data, response } = await h
        .openai('fb')
        .chat.completions.create(
          { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
          { headers: TRIGGER },
        )
        .withResponse();
      assert.equal(data.choices[0]?.message.content, 'Hello from Anthropic: hi');
      const step = (await traceSteps(response)).find((s) => s.node_id === 'ai')!;
      const fallbacks = step.after.message['ai.fallbacks'] as { target: string; status: number }[];
      assert.deepEqual(
        fallbacks.map((f) => [f.target, f.status]),
        [['primary', mishap === 'hang' ? 504 : mishap]],
      );
      assert.equal(step.after.message['ai.target'], 'secondary');
      assert.equal(step.after.message['ai.provider'], 'anthropic');
    });
  }

  test('ai-proxy: a streamed request falls back too, before any byte reached the client', async () => {
    h.openaiProvider.next(500);
    const stream = await h.openai('fb').chat.completions.create({
      model: 'x',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'Hello from Anthropic: hi');
  });

  test('ai-proxy: a refused connection falls back to the next target', async () => {
    const answer = await h.anthropic('refused').messages.create({
      model: 'x',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.deepEqual(answer.content, [{ type: 'text', text: 'Hello from Anthropic: hi' }]);
  });

  test('ai-proxy: every target failed: 503 after a 429, 504 after a timeout, in the OpenAI error shape both SDKs read', async () => {
    h.openaiProvider.next(429);
    await assert.rejects(
      h.openai('down').chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 503);
        assert.equal(err.type, 'api_error');
        assert.equal(err.code, 'ai_provider_error');
        assert.match(err.message, /dead .*last \(429\)/);
        return true;
      },
    );
    h.openaiProvider.next('hang');
    await assert.rejects(
      h
        .anthropic('down')
        .messages.create({ model: 'x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => {
        assert.ok(err instanceof Anthropic.APIError);
        assert.equal(err.status, 504);
        assert.match(err.message, /every AI target failed/);
        return true;
      },
    );
  });

  test('ai-proxy: a target whose own api_key the provider refuses (401) is skipped, and its message never reaches the client', async () => {
    const answer = await h
      .openai('badkey')
      .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(answer.choices[0]?.message.content, 'Hello from Anthropic: hi');
    await assert.rejects(
      h
        .openai('badkeyonly')
        .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 502);
        assert.match(err.message, /misconfigured \(401\)/);
        assert.doesNotMatch(err.message, /Incorrect API key/);
        return true;
      },
    );
  });

  test('ai-proxy: a target of weight 0 gets no traffic; weights share the rest within one priority', async () => {
    const before = h.anthropicProvider.requests.length;
    for (let i = 0; i < 5; i++)
      await h
        .openai('drained')
        .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(h.anthropicProvider.requests.length, before, 'the drained target was never called');
    const answers = new Set<string>();
    for (let i = 0; i < 40 && answers.size < 2; i++) {
      const a = await h
        .openai('shared')
        .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
      answers.add(a.choices[0]?.message.content ?? '');
    }
    assert.deepEqual([...answers].sort(), ['Hello from Anthropic: hi', 'Hello from OpenAI: hi']);
  });

  test('ai-proxy: gateway_ai_* metrics count tokens, calls by status, fallbacks and time to first token', async () => {
    h.openaiProvider.next(429);
    await h
      .openai('fb')
      .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'one two' }] });
    const text = await (await h.call('GET', '/metrics')).text();
    const value = (pattern: RegExp): number => {
      const line = text.split('\n').find((l) => pattern.test(l));
      assert.ok(line !== undefined, `no series matching ${pattern}`);
      return Number(line.split(' ').at(-1));
    };
    const anthropicLabels = 'policy="fb",node="ai",provider="anthropic",model="claude-3-5-haiku-20241022"';
    assert.ok(value(new RegExp(`^gateway_ai_tokens_total\\{${anthropicLabels},type="prompt"\\}`)) >= 2);
    assert.ok(value(new RegExp(`^gateway_ai_tokens_total\\{${anthropicLabels},type="completion"\\}`)) >= 4);
    assert.ok(value(new RegExp(`^gateway_ai_requests_total\\{${anthropicLabels},status="200"\\}`)) >= 1);
    assert.ok(
      value(
        /^gateway_ai_requests_total\{policy="fb",node="ai",provider="openai-compatible",model="gpt-4o-mini",status="429"\}/,
      ) >= 1,
    );
    assert.ok(
      value(/^gateway_ai_fallbacks_total\{policy="fb",node="ai",from="primary",to="secondary"\}/) >= 1,
    );
    assert.ok(value(/^gateway_ai_fallbacks_total\{policy="down",node="ai",from="last",to=""\}/) >= 1);
    assert.ok(
      value(new RegExp(`^gateway_ai_time_to_first_token_seconds_count\\{${anthropicLabels}\\}`)) >= 1,
    );
    assert.ok(value(new RegExp(`^gateway_ai_request_duration_seconds_count\\{${anthropicLabels}\\}`)) >= 1);
  });

  test('ai-proxy: the access log line of an LLM call carries ai_model, ai_provider and its tokens, streamed or not', async () => {
    await h
      .openai('refused')
      .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'whole answer' }] });
    const stream = await h.anthropic('refused').messages.create({
      model: 'x',
      max_tokens: 10,
      stream: true,
      messages: [{ role: 'user', content: 'streamed answer please' }],
    });
    for await (const _event of stream) void _event;
    const lines = (): Record<string, unknown>[] =>
      readFileSync(logFile, 'utf8')
        .split('\n')
        // Only whole lines: the logger may be halfway through writing the last one.
        .filter((l) => l.endsWith('}'))
        .flatMap((l) => {
          try {
            return [JSON.parse(l) as Record<string, unknown>];
          } catch {
            return [];
          }
        })
        .filter((l) => l.route === 'refused');
    await waitFor(() => lines().length >= 2, { what: 'two access-log lines of route refused' });
    const [whole, streamed] = lines().slice(-2);
    assert.deepEqual(
      [whole?.ai_model, whole?.ai_provider, whole?.ai_prompt_tokens, whole?.ai_completion_tokens],
      ['claude-3-5-haiku-20241022', 'anthropic', 2, 5],
    );
    assert.deepEqual(
      [streamed?.ai_model, streamed?.ai_provider, streamed?.ai_prompt_tokens, streamed?.ai_completion_tokens],
      ['claude-3-5-haiku-20241022', 'anthropic', 3, 6],
    );
  });
});
