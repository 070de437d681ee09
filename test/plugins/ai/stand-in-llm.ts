/**
 * A stand-in LLM for the ai-rate-limit and prompt tests: OpenAI Chat Completions
 * (`/v1/chat/completions`, whole or streamed as server-sent events with the usage chunk
 * when `stream_options.include_usage` is set) and Anthropic Messages (`/v1/messages`).
 * The usage of each answer is `x-prompt-tokens` / `x-completion-tokens` of the request
 * (10 and 5 by default), so a test decides what a call costs.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startOrigin, type Origin } from '../../support/origins.js';

const tokens = (req: IncomingMessage, name: string, fallback: number): number => {
  const value = req.headers[name];
  return typeof value === 'string' ? Number(value) : fallback;
};

function answer(req: IncomingMessage, res: ServerResponse, raw: Buffer): void {
  const body = JSON.parse(raw.toString('utf8') || '{}') as {
    model?: string;
    stream?: boolean;
    stream_options?: { include_usage?: boolean };
  };
  const prompt = tokens(req, 'x-prompt-tokens', 10);
  const completion = tokens(req, 'x-completion-tokens', 5);
  const model = body.model ?? 'stand-in';
  if (req.url?.endsWith('/messages') === true) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model,
        content: [{ type: 'text', text: 'ok' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: prompt, output_tokens: completion },
      }),
    );
    return;
  }
  if (body.stream === true) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta: Record<string, unknown>, finish: string | null) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.write(chunk({ role: 'assistant', content: 'o' }, null));
    // The rest after a pause, as a model generates: the gateway relays the stream rather than
    // receiving it whole with the headers.
    setTimeout(() => {
      res.write(chunk({ content: 'k' }, 'stop'));
      if (body.stream_options?.include_usage === true) {
        const usage = {
          prompt_tokens: prompt,
          completion_tokens: completion,
          total_tokens: prompt + completion,
        };
        res.write(
          `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model, choices: [], usage })}\n\n`,
        );
      }
      res.end('data: [DONE]\n\n');
    }, 100);
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: 'c1',
      object: 'chat.completion',
      model,
      choices: [
        { index: 0, message: { role: 'assistant', content: raw.toString('utf8') }, finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    }),
  );
}

export function startStandInLlm(): Promise<Origin> {
  return startOrigin(answer, { name: 'stand-in-llm' });
}
