import type {
  AiUsage,
  AnthropicBlock,
  AnthropicMessage,
  AnthropicRequest,
  AnthropicResponse,
  AnthropicStopReason,
  AnthropicUsage,
  OpenAiChatRequest,
  OpenAiChatResponse,
  OpenAiContentPart,
  OpenAiFinishReason,
  OpenAiMessage,
  OpenAiToolCall,
} from './types.js';

/** The Messages API version the gateway speaks to Anthropic (issue 33, fixed). */
export const ANTHROPIC_VERSION = '2023-06-01';

/** `max_tokens` of a translated request that named none, unless the target sets `default_max_tokens`. */
export const DEFAULT_MAX_TOKENS = 4096;

const STOP_TO_OPENAI: Record<string, OpenAiFinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

const FINISH_TO_ANTHROPIC: Record<string, AnthropicStopReason> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'refusal',
};

export function finishReasonOf(stop: string | null | undefined): OpenAiFinishReason | null {
  return stop === null || stop === undefined ? null : (STOP_TO_OPENAI[stop] ?? 'stop');
}

export function stopReasonOf(finish: string | null | undefined): AnthropicStopReason | null {
  return finish === null || finish === undefined ? null : (FINISH_TO_ANTHROPIC[finish] ?? 'end_turn');
}

/** Anthropic's usage in OpenAI's names; cached input counts as prompt tokens, as OpenAI counts it. */
export function usageFromAnthropic(usage: Partial<AnthropicUsage> | undefined): AiUsage {
  const prompt =
    (usage?.input_tokens ?? 0) +
    (usage?.cache_creation_input_tokens ?? 0) +
    (usage?.cache_read_input_tokens ?? 0);
  const completion = usage?.output_tokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** The text of an OpenAI content field (string or parts). */
export function textOf(content: OpenAiMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p) => p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text)
    .join('');
}

/** The text of an Anthropic content field (string or blocks). */
export function blocksText(content: string | AnthropicBlock[] | undefined): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((b): b is { type: 'text'; text: string } => b.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text)
    .join('');
}

function parseArguments(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // A model may emit arguments that are not JSON; keep them rather than drop the call.
    return { arguments: text };
  }
}

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

function partToBlock(part: OpenAiContentPart): AnthropicBlock | undefined {
  if (part.type === 'text' && typeof part.text === 'string') return { type: 'text', text: part.text };
  if (part.type === 'image_url' && part.image_url !== undefined) {
    const url = part.image_url.url;
    const data = DATA_URL.exec(url);
    return data === null
      ? { type: 'image', source: { type: 'url', url } }
      : { type: 'image', source: { type: 'base64', media_type: data[1]!, data: data[2]! } };
  }
  return undefined;
}

function userBlocks(content: OpenAiMessage['content']): string | AnthropicBlock[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.flatMap((p) => {
    const block = partToBlock(p);
    return block === undefined ? [] : [block];
  });
}

/** Appends `blocks` to the last message when it has the same role: Anthropic wants roles to alternate. */
function append(
  out: AnthropicMessage[],
  role: 'user' | 'assistant',
  content: string | AnthropicBlock[],
): void {
  const last = out.at(-1);
  if (last === undefined || last.role !== role) {
    out.push({ role, content });
    return;
  }
  const asBlocks = (c: string | AnthropicBlock[]): AnthropicBlock[] =>
    typeof c === 'string' ? (c === '' ? [] : [{ type: 'text', text: c }]) : c;
  last.content = [...asBlocks(last.content), ...asBlocks(content)];
}

/** An OpenAI Chat Completions request as an Anthropic Messages request. */
export function openAiRequestToAnthropic(req: OpenAiChatRequest, defaultMaxTokens: number): AnthropicRequest {
  const system: string[] = [];
  const messages: AnthropicMessage[] = [];
  for (const m of req.messages) {
    if (m.role === 'system' || m.role === 'developer') {
      system.push(textOf(m.content));
    } else if (m.role === 'assistant') {
      const blocks: AnthropicBlock[] = [];
      const text = textOf(m.content);
      if (text !== '') blocks.push({ type: 'text', text });
      for (const call of m.tool_calls ?? [])
        blocks.push({
          type: 'tool_use',
          id: call.id,
          name: call.function.name,
          input: parseArguments(call.function.arguments),
        });
      append(messages, 'assistant', blocks);
    } else if (m.role === 'tool') {
      append(messages, 'user', [
        { type: 'tool_result', tool_use_id: m.tool_call_id ?? '', content: textOf(m.content) },
      ]);
    } else {
      append(messages, 'user', userBlocks(m.content));
    }
  }
  const out: AnthropicRequest = {
    model: req.model,
    max_tokens: req.max_completion_tokens ?? req.max_tokens ?? defaultMaxTokens,
    messages,
  };
  if (system.length > 0) out.system = system.join('\n\n');
  if (req.stop !== undefined && req.stop !== null)
    out.stop_sequences = Array.isArray(req.stop) ? req.stop : [req.stop];
  // OpenAI's temperature goes up to 2, Anthropic's to 1.
  if (typeof req.temperature === 'number') out.temperature = Math.min(req.temperature, 1);
  if (typeof req.top_p === 'number') out.top_p = req.top_p;
  if (req.stream === true) out.stream = true;
  if (Array.isArray(req.tools))
    out.tools = req.tools.map((t) => ({
      name: t.function.name,
      ...(t.function.description === undefined ? {} : { description: t.function.description }),
      input_schema: t.function.parameters ?? { type: 'object', properties: {} },
    }));
  const choice = req.tool_choice;
  if (choice === 'auto') out.tool_choice = { type: 'auto' };
  else if (choice === 'required') out.tool_choice = { type: 'any' };
  else if (choice === 'none') out.tool_choice = { type: 'none' };
  else if (typeof choice === 'object' && choice !== null)
    out.tool_choice = { type: 'tool', name: choice.function.name };
  if (typeof req.user === 'string') out.metadata = { user_id: req.user };
  return out;
}

function blockToPart(block: AnthropicBlock): OpenAiContentPart | undefined {
  if (block.type === 'text' && typeof block.text === 'string') return { type: 'text', text: block.text };
  if (block.type === 'image') {
    const source = (block as { source?: Record<string, string> }).source;
    if (source?.type === 'base64')
      return { type: 'image_url', image_url: { url: `data:${source.media_type};base64,${source.data}` } };
    if (source?.type === 'url' && source.url !== undefined)
      return { type: 'image_url', image_url: { url: source.url } };
  }
  return undefined;
}

/** An Anthropic Messages request as an OpenAI Chat Completions request. */
export function anthropicRequestToOpenAi(req: AnthropicRequest): OpenAiChatRequest {
  const messages: OpenAiMessage[] = [];
  const system = blocksText(req.system);
  if (system !== '') messages.push({ role: 'system', content: system });
  for (const m of req.messages) {
    if (typeof m.content === 'string') {
      messages.push({ role: m.role, content: m.content });
      continue;
    }
    if (m.role === 'assistant') {
      const text = blocksText(m.content);
      const calls: OpenAiToolCall[] = m.content
        .filter((b): b is Extract<AnthropicBlock, { type: 'tool_use' }> => b.type === 'tool_use')
        .map((b) => ({
          id: b.id,
          type: 'function',
          function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) },
        }));
      messages.push({
        role: 'assistant',
        content: text === '' && calls.length > 0 ? null : text,
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
      });
      continue;
    }
    // Tool results first: OpenAI wants them right after the assistant's calls.
    for (const b of m.content)
      if (b.type === 'tool_result') {
        const result = b as Extract<AnthropicBlock, { type: 'tool_result' }>;
        const text = blocksText(result.content);
        messages.push({
          role: 'tool',
          tool_call_id: result.tool_use_id,
          content: result.is_error === true ? `error: ${text}` : text,
        });
      }
    const parts = m.content.flatMap((b) => {
      const part = blockToPart(b);
      return part === undefined ? [] : [part];
    });
    if (parts.length === 0) continue;
    const textOnly = parts.every((p) => p.type === 'text');
    messages.push({ role: 'user', content: textOnly ? parts.map((p) => p.text ?? '').join('') : parts });
  }
  const out: OpenAiChatRequest = { model: req.model, messages };
  if (typeof req.max_tokens === 'number') out.max_tokens = req.max_tokens;
  if (Array.isArray(req.stop_sequences)) out.stop = req.stop_sequences;
  if (typeof req.temperature === 'number') out.temperature = req.temperature;
  if (typeof req.top_p === 'number') out.top_p = req.top_p;
  if (req.stream === true) out.stream = true;
  if (Array.isArray(req.tools))
    out.tools = req.tools.map((t) => ({
      type: 'function',
      function: {
        name: t.name,
        ...(t.description === undefined ? {} : { description: t.description }),
        parameters: t.input_schema,
      },
    }));
  const choice = req.tool_choice;
  if (choice?.type === 'auto') out.tool_choice = 'auto';
  else if (choice?.type === 'any') out.tool_choice = 'required';
  else if (choice?.type === 'none') out.tool_choice = 'none';
  else if (choice?.type === 'tool' && choice.name !== undefined)
    out.tool_choice = { type: 'function', function: { name: choice.name } };
  if (typeof req.metadata?.user_id === 'string') out.user = req.metadata.user_id;
  return out;
}

/** An Anthropic answer as an OpenAI chat completion. */
export function anthropicResponseToOpenAi(res: AnthropicResponse): OpenAiChatResponse {
  const calls: OpenAiToolCall[] = [];
  let text = '';
  for (const b of res.content ?? []) {
    if (b.type === 'text' && typeof b.text === 'string') text += b.text;
    else if (b.type === 'tool_use') {
      const use = b as Extract<AnthropicBlock, { type: 'tool_use' }>;
      calls.push({
        id: use.id,
        type: 'function',
        function: { name: use.name, arguments: JSON.stringify(use.input ?? {}) },
      });
    }
  }
  return {
    id: res.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: res.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && calls.length > 0 ? null : text,
          refusal: null,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        },
        finish_reason: finishReasonOf(res.stop_reason) ?? 'stop',
        logprobs: null,
      },
    ],
    usage: usageFromAnthropic(res.usage),
  };
}

/** An OpenAI chat completion as an Anthropic answer (the first choice). */
export function openAiResponseToAnthropic(res: OpenAiChatResponse): AnthropicResponse {
  const choice = res.choices?.[0];
  const content: AnthropicBlock[] = [];
  const text = choice?.message?.content;
  if (typeof text === 'string' && text !== '') content.push({ type: 'text', text });
  for (const call of choice?.message?.tool_calls ?? [])
    content.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: parseArguments(call.function.arguments),
    });
  return {
    id: res.id,
    type: 'message',
    role: 'assistant',
    model: res.model,
    content,
    stop_reason: stopReasonOf(choice?.finish_reason) ?? 'end_turn',
    stop_sequence: null,
    usage: {
      input_tokens: res.usage?.prompt_tokens ?? 0,
      output_tokens: res.usage?.completion_tokens ?? 0,
    },
  };
}
