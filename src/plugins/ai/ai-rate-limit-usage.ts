import { Transform, type TransformCallback } from 'node:stream';
import type { Context } from '../../core/context.js';

/** Token counts of one LLM call. */
export interface TokenUsage {
  prompt: number;
  completion: number;
  total: number;
}

export type TokenType = 'total' | 'prompt' | 'completion';

export const tokensOf = (usage: TokenUsage, type: TokenType): number => usage[type];

const count = (value: unknown): number | undefined => {
  const n = typeof value === 'string' && value !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? Math.floor(n) : undefined;
};

/** What ai-proxy put on the context (`message.ai.usage.*`), if it did. */
export function contextUsage(ctx: Context): TokenUsage | undefined {
  const prompt = count(ctx.message['ai.usage.prompt_tokens']);
  const completion = count(ctx.message['ai.usage.completion_tokens']);
  const total = count(ctx.message['ai.usage.total_tokens']);
  if (prompt === undefined && completion === undefined && total === undefined) return undefined;
  return complete(prompt, completion, total);
}

function complete(prompt = 0, completion = 0, total?: number): TokenUsage {
  return { prompt, completion, total: total ?? prompt + completion };
}

/**
 * The usage object of an OpenAI (`prompt_tokens`, `completion_tokens`, `total_tokens`) or
 * Anthropic (`input_tokens`, `output_tokens`, cache reads and writes counted as input) answer.
 */
export function usageObject(value: unknown): TokenUsage | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const u = value as Record<string, unknown>;
  const prompt = count(u.prompt_tokens);
  const completion = count(u.completion_tokens);
  if (prompt !== undefined || completion !== undefined)
    return complete(prompt, completion, count(u.total_tokens));
  const input = count(u.input_tokens);
  const output = count(u.output_tokens);
  if (input === undefined && output === undefined) return undefined;
  const cached = (count(u.cache_read_input_tokens) ?? 0) + (count(u.cache_creation_input_tokens) ?? 0);
  return complete((input ?? 0) + cached, output);
}

/** The usage of a whole JSON answer (OpenAI chat/embeddings, Anthropic messages). */
export function bodyUsage(body: Buffer): TokenUsage | undefined {
  if (body.length === 0 || !body.includes('"usage"')) return undefined;
  try {
    return usageObject((JSON.parse(body.toString('utf8')) as { usage?: unknown }).usage);
  } catch {
    return undefined;
  }
}

/** The usage of a whole answer: a JSON body, or a stream of server-sent events held whole. */
export function answerUsage(body: Buffer, contentType: string | undefined): TokenUsage | undefined {
  if (!(contentType ?? '').includes('text/event-stream')) return bodyUsage(body);
  const events = new SseUsage();
  events.push(body);
  return events.end();
}

/**
 * Usage found in server-sent events as they pass: OpenAI's last chunk (`usage`, with
 * `stream_options.include_usage`), Anthropic's `message_start` (input) and `message_delta`
 * (output). Only lines that name `"usage"` are parsed, so a long stream costs one scan per chunk.
 */
export class SseUsage {
  #partial = '';
  #prompt: number | undefined;
  #completion: number | undefined;
  #total: number | undefined;

  push(chunk: Buffer): void {
    const text = this.#partial + chunk.toString('utf8');
    const lines = text.split('\n');
    this.#partial = lines.pop() ?? '';
    // A line this long without a newline is not an event we can read: drop it rather than grow.
    if (this.#partial.length > 1 << 20) this.#partial = '';
    for (const line of lines) this.#line(line);
  }

  end(): TokenUsage | undefined {
    if (this.#partial !== '') this.#line(this.#partial);
    this.#partial = '';
    if (this.#prompt === undefined && this.#completion === undefined && this.#total === undefined)
      return undefined;
    return complete(this.#prompt, this.#completion, this.#total);
  }

  #line(line: string): void {
    if (!line.startsWith('data:') || !line.includes('"usage"')) return;
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line.slice(5).trim()) as Record<string, unknown>;
    } catch {
      return;
    }
    const message = event.message as { usage?: unknown } | undefined;
    const raw = (event.usage ?? message?.usage) as Record<string, unknown> | undefined;
    const usage = usageObject(raw);
    if (usage === undefined || raw === undefined) return;
    // Anthropic sends input on message_start and output on message_delta: keep what each names.
    if (raw.prompt_tokens !== undefined || raw.input_tokens !== undefined) this.#prompt = usage.prompt;
    if (raw.completion_tokens !== undefined || raw.output_tokens !== undefined)
      this.#completion = usage.completion;
    if (raw.total_tokens !== undefined) this.#total = usage.total;
  }
}

/** Most bytes of a relayed JSON answer kept to read its usage (a bigger one is relayed, not read). */
const MAX_JSON_BYTES = 8 << 20;

/**
 * Relays an answer unchanged and, when it has ended, hands `settle` the usage it carried
 * (`message.ai.usage.*` first: ai-proxy sets them as its own stream ends, before this one does).
 * The end of the relay waits for `settle`, so the count is in before the client sees the end.
 */
export class UsageTap extends Transform {
  readonly #ctx: Context;
  readonly #sse: SseUsage | undefined;
  #json: Buffer[] | undefined = [];
  #jsonBytes = 0;
  readonly #settle: (usage: TokenUsage | undefined) => Promise<void> | void;

  constructor(ctx: Context, sse: boolean, settle: (usage: TokenUsage | undefined) => Promise<void> | void) {
    super();
    this.#ctx = ctx;
    this.#sse = sse ? new SseUsage() : undefined;
    if (sse) this.#json = undefined;
    this.#settle = settle;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.#sse !== undefined) this.#sse.push(chunk);
    else if (this.#json !== undefined) {
      this.#jsonBytes += chunk.length;
      if (this.#jsonBytes > MAX_JSON_BYTES) this.#json = undefined;
      else this.#json.push(chunk);
    }
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    const usage =
      contextUsage(this.#ctx) ??
      this.#sse?.end() ??
      (this.#json === undefined ? undefined : bodyUsage(Buffer.concat(this.#json)));
    Promise.resolve(this.#settle(usage)).then(
      () => done(),
      () => done(),
    );
  }
}
