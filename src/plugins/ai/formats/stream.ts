import { finishReasonOf, stopReasonOf, usageFromAnthropic } from './anthropic.js';
import { BedrockToChunks, bedrockUsage, type BedrockStreamEvent } from './bedrock.js';
import { GeminiToChunks, geminiUsage, type GeminiResponse } from './gemini.js';
import { sseFrame } from './sse.js';
import type {
  AiUsage,
  AnthropicUsage,
  ClientFormat,
  OpenAiChunk,
  OpenAiFinishReason,
  SseEvent,
} from './types.js';

/** The wire format a provider streams in. */
export type StreamWire = 'openai' | 'anthropic' | 'gemini' | 'bedrock';

export interface StreamOptions {
  client: ClientFormat;
  wire: StreamWire;
  /** The OpenAI client asked for `stream_options.include_usage`: it gets the usage chunk. */
  clientWantsUsage: boolean;
  /** The model called (Gemini streams may not name it, Bedrock streams never do). */
  model?: string;
}

/**
 * Translates a provider's server-sent events, one at a time, into the client's format: `push`
 * returns the text to send for that event at once ('' when it maps to nothing), so the first token
 * leaves as soon as it arrived. Same-format streams pass through byte for byte, except the usage
 * chunk an OpenAI client did not ask for. Usage and the first token are observed on the way.
 */
export class StreamTranslator {
  usage: AiUsage | undefined = undefined;
  /** The model the provider says answered. */
  model: string | undefined = undefined;
  /** A content or tool-call delta went by (time to first token). */
  sawToken = false;
  /** The provider sent an in-stream error event. */
  failed = false;
  readonly #options: StreamOptions;
  readonly #toChunks: AnthropicToChunks | null;
  readonly #toAnthropic: ChunksToAnthropic | null;
  readonly #gemini: GeminiToChunks | null;
  readonly #bedrock: BedrockToChunks | null;
  #done = false;

  constructor(options: StreamOptions) {
    this.#options = options;
    const cross = options.client !== options.wire;
    this.#toChunks = cross && options.wire === 'anthropic' ? new AnthropicToChunks() : null;
    this.#toAnthropic = cross && options.client === 'anthropic' ? new ChunksToAnthropic() : null;
    this.#gemini = options.wire === 'gemini' ? new GeminiToChunks(options.model ?? '') : null;
    this.#bedrock = options.wire === 'bedrock' ? new BedrockToChunks(options.model ?? '') : null;
  }

  push(ev: SseEvent): string {
    if (this.#done) return '';
    const { client, wire } = this.#options;
    if (wire === 'gemini') return this.#geminiEvent(ev);
    if (wire === 'bedrock') return this.#bedrockEvent(ev);
    if (wire === 'openai') {
      if (ev.data.trim() === '[DONE]') return this.#openAiDone();
      const chunk = parseJson(ev.data) as (OpenAiChunk & { error?: unknown }) | undefined;
      if (chunk === undefined) return '';
      if (chunk.error !== undefined) {
        this.failed = true;
        return client === 'openai' ? sseFrame(ev.data) : this.#toAnthropic!.error(chunk.error);
      }
      this.#observeChunk(chunk);
      if (client === 'openai') return this.#openAiPassthrough(ev, chunk);
      return this.#toAnthropic!.chunk(chunk);
    }
    const event = parseJson(ev.data) as AnthropicEvent | undefined;
    if (event === undefined) return '';
    const type = ev.event ?? event.type;
    this.#observeAnthropic(type, event);
    if (client === 'anthropic') {
      if (type === 'message_stop') this.#done = true;
      return sseFrame(ev.data, type);
    }
    let out = '';
    for (const chunk of this.#toChunks!.event(type, event)) {
      if (chunk === DONE) {
        out += this.#openAiClientUsage();
        out += sseFrame('[DONE]');
        this.#done = true;
      } else if (chunk === ERROR) {
        out += sseFrame(JSON.stringify({ error: anthropicError(event) }));
      } else {
        out += sseFrame(JSON.stringify(chunk));
      }
    }
    return out;
  }

  /** The provider's stream ended: what closes the client's stream if the provider did not. */
  end(): string {
    if (this.#done) return '';
    this.#done = true;
    const { wire, client } = this.#options;
    if (wire !== 'anthropic' && client === 'anthropic') return this.#toAnthropic!.finish(this.usage);
    // Gemini streams simply end: the OpenAI client still expects its usage chunk and [DONE].
    if (wire === 'gemini') return this.#usageChunk(this.#gemini!) + sseFrame('[DONE]');
    if (wire === 'bedrock') return this.#usageChunk(this.#bedrock!) + sseFrame('[DONE]');
    return '';
  }

  /** One ConverseStream event (from the event-stream reader); `metadata`, the last, closes the stream. */
  #bedrockEvent(ev: SseEvent): string {
    const client = this.#options.client;
    if (ev.event === 'exception') {
      this.failed = true;
      const error = parseJson(ev.data) as { type?: string; message?: string } | undefined;
      const body = { message: error?.message ?? 'the provider failed while streaming', type: error?.type };
      if (client === 'anthropic') return this.#toAnthropic!.error(body);
      return sseFrame(
        JSON.stringify({ error: { ...body, type: body.type ?? 'api_error', param: null, code: null } }),
      );
    }
    const payload = parseJson(ev.data) as BedrockStreamEvent | undefined;
    if (payload === undefined || typeof payload !== 'object' || payload === null) return '';
    const type = ev.event ?? '';
    if (type === 'metadata') {
      const usage = bedrockUsage(payload.usage);
      if (usage !== undefined) this.usage = usage;
      this.#done = true;
      if (client === 'anthropic') return this.#toAnthropic!.finish(this.usage);
      return this.#usageChunk(this.#bedrock!) + sseFrame('[DONE]');
    }
    let out = '';
    for (const chunk of this.#bedrock!.event(type, payload)) {
      const delta = chunk.choices[0]?.delta;
      if ((typeof delta?.content === 'string' && delta.content !== '') || delta?.tool_calls !== undefined)
        this.sawToken = true;
      out += client === 'openai' ? sseFrame(JSON.stringify(chunk)) : this.#toAnthropic!.chunk(chunk);
    }
    return out;
  }

  #geminiEvent(ev: SseEvent): string {
    const res = parseJson(ev.data) as (GeminiResponse & { error?: unknown }) | undefined;
    if (res === undefined) return '';
    const client = this.#options.client;
    if (res.error !== undefined) {
      this.failed = true;
      return client === 'openai' ? sseFrame(ev.data) : this.#toAnthropic!.error(res.error);
    }
    const usage = geminiUsage(res.usageMetadata);
    if (usage !== undefined) this.usage = usage;
    const chunks = this.#gemini!.event(res);
    this.model = this.#gemini!.model;
    let out = '';
    for (const chunk of chunks) {
      const delta = chunk.choices[0]?.delta;
      if ((typeof delta?.content === 'string' && delta.content !== '') || delta?.tool_calls !== undefined)
        this.sawToken = true;
      out += client === 'openai' ? sseFrame(JSON.stringify(chunk)) : this.#toAnthropic!.chunk(chunk);
    }
    return out;
  }

  #openAiDone(): string {
    this.#done = true;
    if (this.#options.client === 'openai') return sseFrame('[DONE]');
    return this.#toAnthropic!.finish(this.usage);
  }

  #openAiPassthrough(ev: SseEvent, chunk: OpenAiChunk): string {
    if (this.#options.clientWantsUsage || !('usage' in chunk)) return sseFrame(ev.data);
    // The gateway asked for usage; a client that did not gets the stream it would have had.
    if (Array.isArray(chunk.choices) && chunk.choices.length === 0) return '';
    delete chunk.usage;
    return sseFrame(JSON.stringify(chunk));
  }

  #openAiClientUsage(): string {
    return this.#usageChunk(this.#toChunks!);
  }

  #usageChunk(from: { id: string; created: number; model: string }): string {
    if (!this.#options.clientWantsUsage || this.usage === undefined) return '';
    const { id, created, model } = from;
    return sseFrame(
      JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: this.usage }),
    );
  }

  #observeChunk(chunk: OpenAiChunk): void {
    if (typeof chunk.model === 'string') this.model = chunk.model;
    const usage = chunk.usage;
    if (usage !== null && typeof usage === 'object') {
      const prompt = usage.prompt_tokens ?? 0;
      const completion = usage.completion_tokens ?? 0;
      this.usage = {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: usage.total_tokens ?? prompt + completion,
      };
    }
    if (!this.sawToken)
      for (const c of chunk.choices ?? [])
        if (
          (typeof c.delta?.content === 'string' && c.delta.content !== '') ||
          c.delta?.tool_calls !== undefined
        )
          this.sawToken = true;
  }

  #observeAnthropic(type: string, event: AnthropicEvent): void {
    if (type === 'message_start') {
      const message = event.message;
      if (typeof message?.model === 'string') this.model = message.model;
      this.#anthropicUsage = { ...message?.usage };
      this.usage = usageFromAnthropic(this.#anthropicUsage);
    } else if (type === 'message_delta' && event.usage !== undefined) {
      // message_delta usage is cumulative; the input figures appear there too on newer versions.
      for (const [key, value] of Object.entries(event.usage))
        if (typeof value === 'number') (this.#anthropicUsage as Record<string, number>)[key] = value;
      this.usage = usageFromAnthropic(this.#anthropicUsage);
    } else if (type === 'content_block_delta' || type === 'content_block_start') {
      if (type === 'content_block_delta' || event.content_block?.type === 'tool_use') this.sawToken = true;
    } else if (type === 'error') {
      this.failed = true;
    }
  }

  #anthropicUsage: Partial<AnthropicUsage> = {};
}

interface AnthropicEvent {
  type: string;
  index?: number;
  message?: { id?: string; model?: string; usage?: Partial<AnthropicUsage> };
  content_block?: { type: string; id?: string; name?: string; text?: string };
  delta?: {
    type?: string;
    text?: string;
    partial_json?: string;
    stop_reason?: string | null;
    stop_sequence?: string | null;
  };
  usage?: Partial<AnthropicUsage>;
  error?: { type?: string; message?: string };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function anthropicError(event: AnthropicEvent): Record<string, unknown> {
  return {
    message: event.error?.message ?? 'the provider failed while streaming',
    type: event.error?.type ?? 'api_error',
    param: null,
    code: null,
  };
}

const DONE = Symbol('done');
const ERROR = Symbol('error');

/** Anthropic stream events as OpenAI chunks (state: the tool-call index of each content block). */
class AnthropicToChunks {
  id = '';
  model = '';
  created = Math.floor(Date.now() / 1000);
  readonly #toolIndex = new Map<number, number>();

  event(type: string, ev: AnthropicEvent): (OpenAiChunk | typeof DONE | typeof ERROR)[] {
    switch (type) {
      case 'message_start':
        this.id = ev.message?.id ?? '';
        this.model = ev.message?.model ?? '';
        return [this.#chunk({ role: 'assistant', content: '' }, null)];
      case 'content_block_start': {
        const block = ev.content_block;
        if (block?.type === 'tool_use') {
          const index = this.#toolIndex.size;
          this.#toolIndex.set(ev.index ?? 0, index);
          return [
            this.#chunk(
              {
                tool_calls: [
                  {
                    index,
                    id: block.id ?? '',
                    type: 'function',
                    function: { name: block.name ?? '', arguments: '' },
                  },
                ],
              },
              null,
            ),
          ];
        }
        if (block?.type === 'text' && typeof block.text === 'string' && block.text !== '')
          return [this.#chunk({ content: block.text }, null)];
        return [];
      }
      case 'content_block_delta': {
        const delta = ev.delta;
        if (delta?.type === 'text_delta' && typeof delta.text === 'string')
          return [this.#chunk({ content: delta.text }, null)];
        if (delta?.type === 'input_json_delta') {
          const index = this.#toolIndex.get(ev.index ?? 0) ?? 0;
          return [
            this.#chunk({ tool_calls: [{ index, function: { arguments: delta.partial_json ?? '' } }] }, null),
          ];
        }
        return [];
      }
      case 'message_delta': {
        const finish = finishReasonOf(ev.delta?.stop_reason);
        return finish === null ? [] : [this.#chunk({}, finish)];
      }
      case 'message_stop':
        return [DONE];
      case 'error':
        return [ERROR];
      default:
        return []; // ping, content_block_stop, and event types added later
    }
  }

  #chunk(delta: OpenAiChunk['choices'][number]['delta'], finish: OpenAiFinishReason | null): OpenAiChunk {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    };
  }
}

/** OpenAI chunks as Anthropic stream events (state: the open content block). */
class ChunksToAnthropic {
  #started = false;
  #block = -1;
  #blockType: 'text' | 'tool_use' | null = null;
  readonly #toolBlocks = new Map<number, number>();
  #stop: string | null = null;

  chunk(chunk: OpenAiChunk): string {
    let out = this.#start(chunk);
    const choice = chunk.choices?.find((c) => c.index === 0) ?? chunk.choices?.[0];
    if (choice === undefined) return out;
    const delta = choice.delta ?? {};
    if (typeof delta.content === 'string' && delta.content !== '') {
      if (this.#blockType !== 'text') out += this.#open({ type: 'text', text: '' }, 'text');
      out += event('content_block_delta', {
        type: 'content_block_delta',
        index: this.#block,
        delta: { type: 'text_delta', text: delta.content },
      });
    }
    for (const call of delta.tool_calls ?? []) {
      let block = this.#toolBlocks.get(call.index);
      if (block === undefined) {
        out += this.#open(
          { type: 'tool_use', id: call.id ?? '', name: call.function?.name ?? '', input: {} },
          'tool_use',
        );
        block = this.#block;
        this.#toolBlocks.set(call.index, block);
      }
      const args = call.function?.arguments;
      if (typeof args === 'string' && args !== '')
        out += event('content_block_delta', {
          type: 'content_block_delta',
          index: block,
          delta: { type: 'input_json_delta', partial_json: args },
        });
    }
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
      this.#stop = choice.finish_reason;
      out += this.#close();
    }
    return out;
  }

  /** The provider's stream is over: close the message, with the usage known by now. */
  finish(usage: AiUsage | undefined): string {
    let out = this.#start(undefined);
    out += this.#close();
    out += event('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReasonOf(this.#stop) ?? 'end_turn', stop_sequence: null },
      usage: { input_tokens: usage?.prompt_tokens ?? 0, output_tokens: usage?.completion_tokens ?? 0 },
    });
    out += event('message_stop', { type: 'message_stop' });
    return out;
  }

  error(error: unknown): string {
    const e = (error ?? {}) as { message?: unknown; type?: unknown };
    return event('error', {
      type: 'error',
      error: {
        type: typeof e.type === 'string' ? e.type : 'api_error',
        message: typeof e.message === 'string' ? e.message : 'the provider failed while streaming',
      },
    });
  }

  #start(chunk: OpenAiChunk | undefined): string {
    if (this.#started) return '';
    this.#started = true;
    return event('message_start', {
      type: 'message_start',
      message: {
        id: chunk?.id ?? '',
        type: 'message',
        role: 'assistant',
        model: chunk?.model ?? '',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0 },
      },
    });
  }

  #open(block: Record<string, unknown>, type: 'text' | 'tool_use'): string {
    const out = this.#close();
    this.#block++;
    this.#blockType = type;
    return (
      out +
      event('content_block_start', { type: 'content_block_start', index: this.#block, content_block: block })
    );
  }

  #close(): string {
    if (this.#blockType === null) return '';
    this.#blockType = null;
    return event('content_block_stop', { type: 'content_block_stop', index: this.#block });
  }
}

function event(name: string, data: unknown): string {
  return sseFrame(JSON.stringify(data), name);
}
