import { randomBytes } from 'node:crypto';
import { textOf } from './anthropic.js';
import type {
  AiUsage,
  OpenAiChatRequest,
  OpenAiChatResponse,
  OpenAiChunk,
  OpenAiFinishReason,
  OpenAiToolCall,
} from './types.js';

/**
 * The Amazon Bedrock Runtime Converse API (`POST /model/{modelId}/converse`) and its stream
 * (`/converse-stream`, AWS event-stream frames whose `:event-type` is messageStart,
 * contentBlockStart, contentBlockDelta, contentBlockStop, messageStop and metadata), translated
 * from and to OpenAI's shapes, the gateway's pivot format.
 */

/** One content block of a Converse message. */
export interface BedrockBlock {
  text?: string;
  image?: { format: string; source: { bytes: string } };
  toolUse?: { toolUseId: string; name: string; input: unknown };
  toolResult?: {
    toolUseId: string;
    content: ({ text: string } | { json: unknown })[];
    status?: 'success' | 'error';
  };
  reasoningContent?: unknown;
}

export interface BedrockMessage {
  role: 'user' | 'assistant';
  content: BedrockBlock[];
}

export interface BedrockUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

export interface BedrockResponse {
  output?: { message?: { role?: string; content?: BedrockBlock[] } };
  stopReason?: string;
  usage?: BedrockUsage;
  metrics?: { latencyMs?: number };
}

const DATA_URL = /^data:image\/([a-z]+);base64,(.*)$/s;

const FINISH: Record<string, OpenAiFinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  guardrail_intervened: 'content_filter',
  content_filtered: 'content_filter',
};

function append(out: BedrockMessage[], role: 'user' | 'assistant', content: BedrockBlock[]): void {
  if (content.length === 0) return;
  const last = out.at(-1);
  if (last?.role === role) last.content.push(...content);
  else out.push({ role, content });
}

function parseArgs(text: string): unknown {
  try {
    const value = text.trim() === '' ? {} : (JSON.parse(text) as unknown);
    // toolUse.input must be a JSON object.
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : { value };
  } catch {
    return { arguments: text };
  }
}

/**
 * An OpenAI Chat Completions request as a Converse body (the model goes in the path). Turns of
 * one role are merged, as Converse requires alternating roles; image parts are taken from `data:`
 * URLs only (Converse takes bytes, not links; other images are left out).
 */
export function openAiRequestToBedrock(req: OpenAiChatRequest): Record<string, unknown> {
  const system: { text: string }[] = [];
  const messages: BedrockMessage[] = [];
  for (const m of req.messages) {
    if (m.role === 'system' || m.role === 'developer') {
      const text = textOf(m.content);
      if (text !== '') system.push({ text });
    } else if (m.role === 'assistant') {
      const content: BedrockBlock[] = [];
      const text = textOf(m.content);
      if (text !== '') content.push({ text });
      for (const call of m.tool_calls ?? [])
        content.push({
          toolUse: {
            toolUseId: call.id,
            name: call.function.name,
            input: parseArgs(call.function.arguments),
          },
        });
      append(messages, 'assistant', content);
    } else if (m.role === 'tool') {
      append(messages, 'user', [
        {
          toolResult: {
            toolUseId: m.tool_call_id ?? '',
            content: [{ text: textOf(m.content) }],
          },
        },
      ]);
    } else {
      const content: BedrockBlock[] = [];
      if (typeof m.content === 'string') {
        if (m.content !== '') content.push({ text: m.content });
      } else
        for (const p of m.content ?? []) {
          if (p.type === 'text' && typeof p.text === 'string' && p.text !== '')
            content.push({ text: p.text });
          else if (p.type === 'image_url' && p.image_url !== undefined) {
            const data = DATA_URL.exec(p.image_url.url);
            if (data !== null)
              content.push({
                image: { format: data[1] === 'jpg' ? 'jpeg' : data[1]!, source: { bytes: data[2]! } },
              });
          }
        }
      append(messages, 'user', content);
    }
  }
  const out: Record<string, unknown> = { messages };
  if (system.length > 0) out.system = system;
  const inference: Record<string, unknown> = {};
  const max = req.max_completion_tokens ?? req.max_tokens;
  if (typeof max === 'number') inference.maxTokens = max;
  // OpenAI's temperature goes up to 2, Converse's to 1.
  if (typeof req.temperature === 'number') inference.temperature = Math.min(req.temperature, 1);
  if (typeof req.top_p === 'number') inference.topP = req.top_p;
  if (req.stop !== undefined && req.stop !== null)
    inference.stopSequences = Array.isArray(req.stop) ? req.stop : [req.stop];
  if (Object.keys(inference).length > 0) out.inferenceConfig = inference;
  if (Array.isArray(req.tools) && req.tools.length > 0) {
    const toolConfig: Record<string, unknown> = {
      tools: req.tools.map((t) => ({
        toolSpec: {
          name: t.function.name,
          ...(t.function.description === undefined ? {} : { description: t.function.description }),
          inputSchema: { json: t.function.parameters ?? { type: 'object', properties: {} } },
        },
      })),
    };
    // Converse has no "none": the model may then still call a tool.
    const choice = req.tool_choice;
    if (choice === 'auto') toolConfig.toolChoice = { auto: {} };
    else if (choice === 'required') toolConfig.toolChoice = { any: {} };
    else if (typeof choice === 'object' && choice !== null)
      toolConfig.toolChoice = { tool: { name: choice.function.name } };
    out.toolConfig = toolConfig;
  }
  return out;
}

export function bedrockUsage(usage: BedrockUsage | undefined): AiUsage | undefined {
  if (usage === undefined || usage === null) return undefined;
  const prompt =
    (usage.inputTokens ?? 0) + (usage.cacheReadInputTokens ?? 0) + (usage.cacheWriteInputTokens ?? 0);
  const completion = usage.outputTokens ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: usage.totalTokens ?? prompt + completion,
  };
}

/** Converse answers carry no id: one is made, in OpenAI's style. */
export function bedrockId(): string {
  return `chatcmpl-bedrock-${randomBytes(12).toString('hex')}`;
}

/** A whole Converse answer as an OpenAI chat completion. */
export function bedrockResponseToOpenAi(res: BedrockResponse, model: string): OpenAiChatResponse {
  let text = '';
  const calls: OpenAiToolCall[] = [];
  for (const block of res.output?.message?.content ?? []) {
    if (typeof block.text === 'string') text += block.text;
    else if (block.toolUse !== undefined)
      calls.push({
        id: block.toolUse.toolUseId,
        type: 'function',
        function: { name: block.toolUse.name, arguments: JSON.stringify(block.toolUse.input ?? {}) },
      });
  }
  const usage = bedrockUsage(res.usage);
  return {
    id: bedrockId(),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && calls.length > 0 ? null : text,
          refusal: null,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        },
        finish_reason: calls.length > 0 ? 'tool_calls' : (FINISH[res.stopReason ?? 'end_turn'] ?? 'stop'),
        logprobs: null,
      },
    ],
    ...(usage === undefined ? {} : { usage }),
  };
}

/** The payload of one ConverseStream event (Bedrock adds a padding field `p`, ignored). */
export interface BedrockStreamEvent {
  role?: string;
  contentBlockIndex?: number;
  start?: { toolUse?: { toolUseId?: string; name?: string } };
  delta?: { text?: string; toolUse?: { input?: string }; reasoningContent?: unknown };
  stopReason?: string;
  usage?: BedrockUsage;
}

/** ConverseStream events as OpenAI chunks (state: the tool-call index of each content block). */
export class BedrockToChunks {
  readonly id = bedrockId();
  readonly model: string;
  readonly created = Math.floor(Date.now() / 1000);
  readonly #toolIndex = new Map<number, number>();

  constructor(model: string) {
    this.model = model;
  }

  event(type: string, ev: BedrockStreamEvent): OpenAiChunk[] {
    switch (type) {
      case 'messageStart':
        return [this.#chunk({ role: 'assistant', content: '' }, null)];
      case 'contentBlockStart': {
        const tool = ev.start?.toolUse;
        if (tool === undefined) return [];
        const index = this.#toolIndex.size;
        this.#toolIndex.set(ev.contentBlockIndex ?? 0, index);
        return [
          this.#chunk(
            {
              tool_calls: [
                {
                  index,
                  id: tool.toolUseId ?? '',
                  type: 'function',
                  function: { name: tool.name ?? '', arguments: '' },
                },
              ],
            },
            null,
          ),
        ];
      }
      case 'contentBlockDelta': {
        const delta = ev.delta;
        if (typeof delta?.text === 'string' && delta.text !== '')
          return [this.#chunk({ content: delta.text }, null)];
        const input = delta?.toolUse?.input;
        if (typeof input === 'string' && input !== '') {
          const index = this.#toolIndex.get(ev.contentBlockIndex ?? 0) ?? 0;
          return [this.#chunk({ tool_calls: [{ index, function: { arguments: input } }] }, null)];
        }
        return [];
      }
      case 'messageStop': {
        const finish =
          this.#toolIndex.size > 0 && ev.stopReason === 'tool_use'
            ? 'tool_calls'
            : (FINISH[ev.stopReason ?? 'end_turn'] ?? 'stop');
        return [this.#chunk({}, finish)];
      }
      default:
        return []; // contentBlockStop, metadata (usage, read by the caller), later event types
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
