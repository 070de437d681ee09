import { randomBytes } from 'node:crypto';
import { anthropicResponseToOpenAi, openAiResponseToAnthropic, textOf } from './formats/anthropic.js';
import { toOpenAiRequest, type AiRequest } from './formats/client.js';
import { SseReader, sseFrame } from './formats/sse.js';
import { StreamTranslator } from './formats/stream.js';
import type {
  AiUsage,
  AnthropicRequest,
  AnthropicResponse,
  ClientFormat,
  OpenAiChatRequest,
  OpenAiChatResponse,
  OpenAiChunk,
  OpenAiFinishReason,
  OpenAiToolCall,
  SseEvent,
} from './formats/types.js';

/**
 * What ai-cache keeps of one answer, whatever format it was asked and answered in: the text, the
 * tool calls, the stop reason (OpenAI's names) and the usage of the call that produced it.
 */
export interface NeutralAnswer {
  model: string;
  text: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  finish: OpenAiFinishReason;
  usage: AiUsage | undefined;
}

/** The parts of a request that decide its answer: the cache key (exact) and the semantic text. */
export interface NormalRequest {
  /** Model, messages, tools and sampling parameters, canonical JSON: the exact key's input. */
  exact: string;
  /** Everything but the messages' text: semantic matches are only among requests alike in it. */
  rest: string;
  /** The conversation as `role: text` lines, what the semantic match embeds. */
  text: string;
}

/** Sampling and output parameters that change the answer; anything else (stream, user…) does not. */
const SAMPLING = [
  'temperature',
  'top_p',
  'top_k',
  'max_tokens',
  'stop',
  'seed',
  'presence_penalty',
  'frequency_penalty',
  'logit_bias',
  'response_format',
  'tool_choice',
  'parallel_tool_calls',
  'reasoning_effort',
] as const;

/** JSON with object keys sorted, so two equal requests give one text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A message's content as text when it is only text (string or text parts), else its parts. */
function normalContent(content: unknown): unknown {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content) && content.every((p: { type?: unknown }) => p?.type === 'text'))
    return textOf(content as OpenAiChatRequest['messages'][number]['content']);
  return content;
}

/**
 * The request in the gateway's pivot shape (OpenAI's), reduced to what decides the answer, so an
 * OpenAI and an Anthropic client asking the same question share one entry. `undefined` when the
 * request asks for several choices (`n` > 1): a cached single answer would not do.
 */
export function normalise(req: AiRequest): NormalRequest | undefined {
  const pivot = toOpenAiRequest(req);
  const body = req.body as OpenAiChatRequest & AnthropicRequest;
  if (typeof body.n === 'number' && body.n > 1) return undefined;
  const messages = pivot.messages.map((m) => {
    const out: Record<string, unknown> = {
      role: m.role === 'developer' ? 'system' : m.role,
      content: normalContent(m.content),
    };
    if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0)
      out.tool_calls = m.tool_calls.map((c) => ({
        id: c.id,
        name: c.function.name,
        arguments: c.function.arguments,
      }));
    if (typeof m.tool_call_id === 'string') out.tool_call_id = m.tool_call_id;
    return out;
  });
  const params: Record<string, unknown> = {};
  for (const name of SAMPLING) {
    const value = (pivot as Record<string, unknown>)[name] ?? (body as Record<string, unknown>)[name];
    if (value !== undefined && value !== null) params[name] = value;
  }
  const maxTokens = pivot.max_completion_tokens ?? pivot.max_tokens;
  if (maxTokens !== undefined) params.max_tokens = maxTokens;
  if (typeof params.stop === 'string') params.stop = [params.stop];
  const tools = (pivot.tools ?? []).map((t) => ({
    name: t.function.name,
    description: t.function.description ?? '',
    parameters: t.function.parameters ?? {},
  }));
  const rest = canonical({ model: req.model, tools, params });
  const text = messages
    .map((m) => `${String(m.role)}: ${typeof m.content === 'string' ? m.content : canonical(m.content)}`)
    .join('\n');
  return { exact: canonical({ model: req.model, tools, params, messages }), rest, text };
}

// --- answers from the cache -------------------------------------------------------------------

const cacheId = (prefix: string): string => `${prefix}${randomBytes(12).toString('base64url')}`;

/** The cached answer as an OpenAI chat completion. */
export function chatCompletionOf(entry: NeutralAnswer): OpenAiChatResponse {
  const calls: OpenAiToolCall[] = entry.toolCalls.map((c) => ({
    id: c.id,
    type: 'function',
    function: { name: c.name, arguments: c.arguments },
  }));
  return {
    id: cacheId('chatcmpl-'),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: entry.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: entry.text === '' && calls.length > 0 ? null : entry.text,
          refusal: null,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        },
        finish_reason: entry.finish,
        logprobs: null,
      },
    ],
    ...(entry.usage === undefined ? {} : { usage: entry.usage }),
  };
}

/** The cached answer as a whole body in `format`. */
export function wholeAnswer(entry: NeutralAnswer, format: ClientFormat): string {
  const completion = chatCompletionOf(entry);
  if (format === 'openai') return JSON.stringify(completion);
  const message = openAiResponseToAnthropic(completion);
  message.id = cacheId('msg_');
  return JSON.stringify(message);
}

/** Splits text into pieces of a few words each, as a model streams them. */
function pieces(text: string): string[] {
  const words = text.match(/\s*\S+\s*/g) ?? (text === '' ? [] : [text]);
  const out: string[] = [];
  for (let i = 0; i < words.length; i += 3) out.push(words.slice(i, i + 3).join(''));
  return out;
}

/** The OpenAI chunks of the cached answer: role, content pieces, tool calls, finish, usage. */
function chunksOf(entry: NeutralAnswer, withUsage: boolean): OpenAiChunk[] {
  const id = cacheId('chatcmpl-');
  const created = Math.floor(Date.now() / 1000);
  const chunk = (
    delta: OpenAiChunk['choices'][number]['delta'],
    finish: OpenAiFinishReason | null,
  ): OpenAiChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: entry.model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  });
  const out: OpenAiChunk[] = [chunk({ role: 'assistant', content: '' }, null)];
  for (const piece of pieces(entry.text)) out.push(chunk({ content: piece }, null));
  entry.toolCalls.forEach((c, index) => {
    out.push(
      chunk(
        { tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] },
        null,
      ),
    );
    if (c.arguments !== '')
      out.push(chunk({ tool_calls: [{ index, function: { arguments: c.arguments } }] }, null));
  });
  out.push(chunk({}, entry.finish));
  if (withUsage && entry.usage !== undefined)
    out.push({
      id,
      object: 'chat.completion.chunk',
      created,
      model: entry.model,
      choices: [],
      usage: entry.usage,
    });
  return out;
}

/**
 * The cached answer as the server-sent events of `format`: OpenAI chunks ending with
 * `data: [DONE]` (the usage chunk only when the client asked for it), or Anthropic's event
 * sequence (message_start … message_delta with usage, message_stop) through the shared translator.
 */
export function streamedAnswer(entry: NeutralAnswer, format: ClientFormat, includeUsage: boolean): string {
  if (format === 'openai') {
    let out = '';
    for (const c of chunksOf(entry, includeUsage)) out += sseFrame(JSON.stringify(c));
    return out + sseFrame('[DONE]');
  }
  const translator = new StreamTranslator({ client: 'anthropic', wire: 'openai', clientWantsUsage: true });
  let out = '';
  for (const c of chunksOf(entry, true))
    out += translator.push({ event: undefined, data: JSON.stringify(c) });
  return out + translator.push({ event: undefined, data: '[DONE]' }) + translator.end();
}

// --- answers into the cache -------------------------------------------------------------------

/** The neutral form of a whole answer in `format`; undefined when it is not one. */
export function neutralOfWhole(format: ClientFormat, raw: Buffer): NeutralAnswer | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  let completion: OpenAiChatResponse;
  if (format === 'anthropic') {
    const message = parsed as AnthropicResponse;
    if (message.type !== 'message' || !Array.isArray(message.content)) return undefined;
    completion = anthropicResponseToOpenAi(message);
  } else {
    completion = parsed as OpenAiChatResponse;
    if (completion.object !== 'chat.completion') return undefined;
  }
  const choice = completion.choices?.[0];
  if (choice === undefined || choice.finish_reason === null) return undefined;
  return {
    model: typeof completion.model === 'string' ? completion.model : '',
    text: typeof choice.message?.content === 'string' ? choice.message.content : '',
    toolCalls: (choice.message?.tool_calls ?? []).map((c) => ({
      id: c.id,
      name: c.function.name,
      arguments: c.function.arguments,
    })),
    finish: choice.finish_reason,
    usage: completion.usage ?? undefined,
  };
}

/**
 * Assembles a streamed answer from the client's events as they pass: the text and the tool-call
 * deltas concatenated, the stop reason, the usage. An Anthropic stream is read through the shared
 * translator as OpenAI chunks. `result` is undefined until a complete, error-free stream ended.
 */
export class StreamAssembler {
  readonly #reader = new SseReader();
  readonly #toChunks: StreamTranslator | null;
  readonly #chunkReader = new SseReader();
  #model = '';
  #text = '';
  readonly #calls = new Map<number, { id: string; name: string; arguments: string }>();
  #finish: OpenAiFinishReason | null = null;
  #usage: AiUsage | undefined = undefined;
  #failed = false;
  #done = false;

  constructor(format: ClientFormat) {
    this.#toChunks =
      format === 'anthropic'
        ? new StreamTranslator({ client: 'openai', wire: 'anthropic', clientWantsUsage: true })
        : null;
  }

  push(bytes: Buffer | string): void {
    this.#events(this.#reader.push(bytes));
  }

  /** The stream ended; the answer, when it was a whole one. */
  end(): NeutralAnswer | undefined {
    this.#events(this.#reader.end());
    if (this.#toChunks !== null) {
      this.#openAi(this.#chunkReader.push(this.#toChunks.end()));
      this.#openAi(this.#chunkReader.end());
      if (this.#toChunks.failed) this.#failed = true;
      this.#usage ??= this.#toChunks.usage;
    }
    if (this.#failed || this.#finish === null || !this.#done) return undefined;
    return {
      model: this.#model,
      text: this.#text,
      toolCalls: [...this.#calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => c),
      finish: this.#finish,
      usage: this.#usage,
    };
  }

  #events(events: SseEvent[]): void {
    if (this.#toChunks === null) {
      this.#openAi(events);
      return;
    }
    for (const ev of events) this.#openAi(this.#chunkReader.push(this.#toChunks.push(ev)));
  }

  #openAi(events: SseEvent[]): void {
    for (const ev of events) {
      if (ev.data.trim() === '[DONE]') {
        this.#done = true;
        continue;
      }
      let chunk: (OpenAiChunk & { error?: unknown }) | undefined;
      try {
        chunk = JSON.parse(ev.data) as OpenAiChunk & { error?: unknown };
      } catch {
        continue;
      }
      if (chunk === null || typeof chunk !== 'object') continue;
      if (chunk.error !== undefined) {
        this.#failed = true;
        continue;
      }
      if (typeof chunk.model === 'string' && chunk.model !== '') this.#model = chunk.model;
      if (chunk.usage !== null && typeof chunk.usage === 'object') {
        const u = chunk.usage;
        this.#usage = {
          prompt_tokens: u.prompt_tokens ?? 0,
          completion_tokens: u.completion_tokens ?? 0,
          total_tokens: u.total_tokens ?? (u.prompt_tokens ?? 0) + (u.completion_tokens ?? 0),
        };
      }
      const choice = chunk.choices?.find((c) => c.index === 0);
      if (choice === undefined) continue;
      const delta = choice.delta ?? {};
      if (typeof delta.content === 'string') this.#text += delta.content;
      for (const call of delta.tool_calls ?? []) {
        const got = this.#calls.get(call.index) ?? { id: '', name: '', arguments: '' };
        if (typeof call.id === 'string' && call.id !== '') got.id = call.id;
        if (typeof call.function?.name === 'string' && call.function.name !== '')
          got.name = call.function.name;
        if (typeof call.function?.arguments === 'string') got.arguments += call.function.arguments;
        this.#calls.set(call.index, got);
      }
      if (choice.finish_reason !== null && choice.finish_reason !== undefined)
        this.#finish = choice.finish_reason;
    }
  }
}

/** A stored entry as text (the backends keep strings); `undefined` when it does not parse as one. */
export function encodeAnswer(entry: NeutralAnswer): string {
  return JSON.stringify({ v: 1, ...entry });
}

export function decodeAnswer(text: string): NeutralAnswer | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const e = parsed as Partial<NeutralAnswer> & { v?: unknown };
  if (
    e === null ||
    typeof e !== 'object' ||
    e.v !== 1 ||
    typeof e.text !== 'string' ||
    typeof e.model !== 'string' ||
    typeof e.finish !== 'string' ||
    !Array.isArray(e.toolCalls)
  )
    return undefined;
  return { model: e.model, text: e.text, toolCalls: e.toolCalls, finish: e.finish, usage: e.usage };
}
