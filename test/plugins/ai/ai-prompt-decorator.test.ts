/** ai-prompt-decorator in a real gateway: the LLM receives the prepended and appended messages, in both formats. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { aiPromptDecorator } from '../../../src/plugins/ai/ai-prompt-decorator.js';
import { assertConfigError } from '../../support/assertions.js';
import { instantiate } from '../../support/plugin-env.js';
import { promptRoute, type PromptRoute } from './prompt-echo.js';

let route: PromptRoute;

before(async () => {
  route = await promptRoute(
    'ai-prompt-decorator',
    `
          prepend: [{ role: system, content: Answer briefly. }]
          append: [{ role: user, content: End with a summary. }]`,
  );
});

after(async () => {
  await route?.stop();
});

test('ai-prompt-decorator success: an OpenAI body gets the messages before and after its own', async () => {
  const { status, sent } = await route.send('/v1/chat/completions', {
    model: 'm',
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(status, 200);
  assert.deepEqual(sent, {
    model: 'm',
    messages: [
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'hi' },
      { role: 'user', content: 'End with a summary.' },
    ],
  });
});

test('ai-prompt-decorator success: an Anthropic body gets system text in its top-level system (string or blocks)', async () => {
  const plain = await route.send('/v1/messages', {
    model: 'claude',
    max_tokens: 10,
    system: 'You are Ada.',
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.deepEqual(plain.sent, {
    model: 'claude',
    max_tokens: 10,
    system: 'Answer briefly.\n\nYou are Ada.',
    messages: [
      { role: 'user', content: 'hi' },
      { role: 'user', content: 'End with a summary.' },
    ],
  });
  const blocks = await route.send('/v1/messages', {
    system: [{ type: 'text', text: 'You are Ada.' }],
    messages: [],
  });
  assert.deepEqual((blocks.sent as { system: unknown }).system, [
    { type: 'text', text: 'Answer briefly.' },
    { type: 'text', text: 'You are Ada.' },
  ]);
  const none = await route.send('/v1/messages', { messages: [{ role: 'user', content: 'hi' }] });
  assert.equal((none.sent as { system: unknown }).system, 'Answer briefly.');
});

test('ai-prompt-decorator error: a body that is not JSON is a 400 invalid_request_error', async () => {
  const res = await route.send('/v1/chat/completions', 'hello');
  assert.equal(res.status, 400);
  assert.match(res.answer, /"type":"invalid_request_error"/);
});

test('ai-prompt-decorator config: nothing to add is refused; an unknown role is a schema error', () => {
  assertConfigError(() => instantiate(aiPromptDecorator, {}), 'prepend');
  assert.throws(() => instantiate(aiPromptDecorator, { append: [{ role: 'tool', content: 'x' }] }));
});
