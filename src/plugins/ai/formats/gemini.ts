import { textOf } from './anthropic.js';
import type {
  AiUsage,
  OpenAiChatRequest,
  OpenAiChatResponse,
  OpenAiChunk,
  OpenAiFinishReason,
  OpenAiToolCall,
} from './types.js';

/** One part of Gemini content (`generateContent`): text, a function call or its response, inline data. */
export interface GeminiPart {
  text?: string;
  thought?: boolean;
  functionCall?: { id?: string; name: string; args?: unknown };
  functionResponse?: { id?: string; name: string; response: unknown };
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType?: string; fileUri: string };
}

export interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}

export interface GeminiUsage {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  totalTokenCount?: number;
  thoughtsTokenCount?: number;
}

export interface GeminiResponse {
  candidates?: { content?: { role?: string; parts?: GeminiPart[] }; finishReason?: string; index?: number }[];
  usageMetadata?: GeminiUsage;
  modelVersion?: string;
  responseId?: string;
}

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

function append(out: GeminiContent[], role: 'user' | 'model', parts: GeminiPart[]): void {
  if (parts.length === 0) return;
  const last = out.at(-1);
  if (last?.role === role) last.parts.push(...parts);
  else out.push({ role, parts });
}

/** An OpenAI Chat Completions request as a Gemini `generateContent` body (the model goes in the path). */
export function openAiRequestToGemini(req: OpenAiChatRequest): Record<string, unknown> {
  const system: string[] = [];
  const contents: GeminiContent[] = [];
  const callNames = new Map<string, string>();
  for (const m of req.messages) {
    if (m.role === 'system' || m.role === 'developer') system.push(textOf(m.content));
    else if (m.role === 'assistant') {
      const parts: GeminiPart[] = [];
      const text = textOf(m.content);
      if (text !== '') parts.push({ text });
      for (const call of m.tool_calls ?? []) {
        callNames.set(call.id, call.function.name);
        parts.push({
          functionCall: { id: call.id, name: call.function.name, args: parseArgs(call.function.arguments) },
        });
      }
      append(contents, 'model', parts);
    } else if (m.role === 'tool') {
      const id = m.tool_call_id ?? '';
      append(contents, 'user', [
        { functionResponse: { id, name: callNames.get(id) ?? id, response: { content: textOf(m.content) } } },
      ]);
    } else {
      const parts: GeminiPart[] = [];
      if (typeof m.content === 'string') parts.push({ text: m.content });
      else
        for (const p of m.content ?? []) {
          if (p.type === 'text' && typeof p.text === 'string') parts.push({ text: p.text });
          else if (p.type === 'image_url' && p.image_url !== undefined) {
            const data = DATA_URL.exec(p.image_url.url);
            parts.push(
              data === null
                ? { fileData: { fileUri: p.image_url.url } }
                : { inlineData: { mimeType: data[1]!, data: data[2]! } },
            );
          }
        }
      append(contents, 'user', parts);
    }
  }
  const out: Record<string, unknown> = { contents };
  if (system.length > 0) out.systemInstruction = { parts: [{ text: system.join('\n\n') }] };
  const generation: Record<string, unknown> = {};
  const max = req.max_completion_tokens ?? req.max_tokens;
  if (typeof max === 'number') generation.maxOutputTokens = max;
  if (typeof req.temperature === 'number') generation.temperature = req.temperature;
  if (typeof req.top_p === 'number') generation.topP = req.top_p;
  if (req.stop !== undefined && req.stop !== null)
    generation.stopSequences = Array.isArray(req.stop) ? req.stop : [req.stop];
  if (Object.keys(generation).length > 0) out.generationConfig = generation;
  if (Array.isArray(req.tools) && req.tools.length > 0)
    out.tools = [
      {
        functionDeclarations: req.tools.map((t) => ({
          name: t.function.name,
          ...(t.function.description === undefined ? {} : { description: t.function.description }),
          ...(t.function.parameters === undefined ? {} : { parameters: t.function.parameters }),
        })),
      },
    ];
  const choice = req.tool_choice;
  if (choice === 'auto') out.toolConfig = { functionCallingConfig: { mode: 'AUTO' } };
  else if (choice === 'required') out.toolConfig = { functionCallingConfig: { mode: 'ANY' } };
  else if (choice === 'none') out.toolConfig = { functionCallingConfig: { mode: 'NONE' } };
  else if (typeof choice === 'object' && choice !== null)
    out.toolConfig = { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.function.name] } };
  return out;
}

function parseArgs(text: string): unknown {
  try {
    return text.trim() === '' ? {} : (JSON.parse(text) as unknown);
  } catch {
    return { arguments: text };
  }
}

const FINISH: Record<string, OpenAiFinishReason> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
};

export function geminiUsage(usage: GeminiUsage | undefined): AiUsage | undefined {
  if (usage === undefined) return undefined;
  const prompt = usage.promptTokenCount ?? 0;
  const completion = (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: usage.totalTokenCount ?? prompt + completion,
  };
}

/** A function call's id: Gemini's own when it gave one, else one made from the response id and position. */
function callId(responseId: string, n: number, given: string | undefined): string {
  return given !== undefined && given !== '' ? given : `call_${responseId || 'gemini'}_${n}`;
}

/** A whole Gemini answer as an OpenAI chat completion (the first candidate). */
export function geminiResponseToOpenAi(res: GeminiResponse, model: string): OpenAiChatResponse {
  const candidate = res.candidates?.[0];
  let text = '';
  const calls: OpenAiToolCall[] = [];
  for (const part of candidate?.content?.parts ?? []) {
    if (typeof part.text === 'string' && part.thought !== true) text += part.text;
    else if (part.functionCall !== undefined)
      calls.push({
        id: callId(res.responseId ?? '', calls.length, part.functionCall.id),
        type: 'function',
        function: { name: part.functionCall.name, arguments: JSON.stringify(part.functionCall.args ?? {}) },
      });
  }
  const usage = geminiUsage(res.usageMetadata);
  return {
    id: res.responseId ?? '',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: res.modelVersion ?? model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && calls.length > 0 ? null : text,
          refusal: null,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        },
        finish_reason:
          calls.length > 0 ? 'tool_calls' : (FINISH[candidate?.finishReason ?? 'STOP'] ?? 'stop'),
        logprobs: null,
      },
    ],
    ...(usage === undefined ? {} : { usage }),
  };
}

/** Gemini stream events (each a partial GenerateContentResponse) as OpenAI chunks. */
export class GeminiToChunks {
  id = '';
  model = '';
  readonly created = Math.floor(Date.now() / 1000);
  #started = false;
  #calls = 0;

  constructor(model: string) {
    this.model = model;
  }

  event(res: GeminiResponse): OpenAiChunk[] {
    if (this.id === '' && typeof res.responseId === 'string') this.id = res.responseId;
    if (typeof res.modelVersion === 'string') this.model = res.modelVersion;
    const out: OpenAiChunk[] = [];
    if (!this.#started) {
      this.#started = true;
      out.push(this.#chunk({ role: 'assistant', content: '' }, null));
    }
    const candidate = res.candidates?.[0];
    let sawCall = false;
    for (const part of candidate?.content?.parts ?? []) {
      if (typeof part.text === 'string' && part.thought !== true && part.text !== '')
        out.push(this.#chunk({ content: part.text }, null));
      else if (part.functionCall !== undefined) {
        sawCall = true;
        const index = this.#calls++;
        out.push(
          this.#chunk(
            {
              tool_calls: [
                {
                  index,
                  id: callId(this.id, index, part.functionCall.id),
                  type: 'function',
                  function: {
                    name: part.functionCall.name,
                    arguments: JSON.stringify(part.functionCall.args ?? {}),
                  },
                },
              ],
            },
            null,
          ),
        );
      }
    }
    const finish = candidate?.finishReason;
    if (finish !== undefined && finish !== 'FINISH_REASON_UNSPECIFIED')
      out.push(this.#chunk({}, sawCall || this.#calls > 0 ? 'tool_calls' : (FINISH[finish] ?? 'stop')));
    return out;
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
