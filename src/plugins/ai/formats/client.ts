import { anthropicRequestToOpenAi, blocksText, textOf } from './anthropic.js';
import type { AnthropicRequest, ClientFormat, OpenAiChatRequest } from './types.js';

/**
 * A client's LLM request as ai-proxy (and the prompt nodes before it) read it: the format it came
 * in, the body as parsed, the model it named and whether it asked to stream.
 */
export interface AiRequest {
  format: ClientFormat;
  /** The client's body, parsed; its unknown keys are kept. */
  body: OpenAiChatRequest | AnthropicRequest;
  model: string;
  stream: boolean;
}

/** One message of a prompt as text: what prompt guards match on. `system` is the system prompt. */
export interface PromptMessage {
  role: string;
  text: string;
}

/**
 * The client format a request path names: `…/chat/completions` is OpenAI's Chat Completions API,
 * `…/messages` Anthropic's Messages API; anything else names none.
 */
export function clientFormatOf(path: string): ClientFormat | undefined {
  const p = path.endsWith('/') ? path.slice(0, -1) : path;
  if (p.endsWith('/chat/completions')) return 'openai';
  if (p.endsWith('/messages')) return 'anthropic';
  return undefined;
}

/** Parses and checks a client body in `format`; a string says what is wrong with it. */
export function parseAiRequest(format: ClientFormat, raw: Buffer | string | null): AiRequest | string {
  if (raw === null || raw.length === 0) return 'the request has no body';
  let body: unknown;
  try {
    body = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8'));
  } catch {
    return 'the request body is not JSON';
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return 'the request body is not a JSON object';
  const fields = body as Record<string, unknown>;
  if (!Array.isArray(fields.messages)) return "'messages' must be an array";
  for (const [i, m] of (fields.messages as unknown[]).entries()) {
    if (typeof m !== 'object' || m === null || typeof (m as { role?: unknown }).role !== 'string')
      return `'messages[${i}]' must be an object with a role`;
  }
  if (fields.model !== undefined && typeof fields.model !== 'string') return "'model' must be a string";
  if (fields.stream !== undefined && typeof fields.stream !== 'boolean') return "'stream' must be a boolean";
  return {
    format,
    body: body as OpenAiChatRequest | AnthropicRequest,
    model: typeof fields.model === 'string' ? fields.model : '',
    stream: fields.stream === true,
  };
}

/** The request in OpenAI's shape (the gateway's pivot format); an OpenAI body is returned as it is. */
export function toOpenAiRequest(req: AiRequest): OpenAiChatRequest {
  return req.format === 'openai'
    ? (req.body as OpenAiChatRequest)
    : anthropicRequestToOpenAi(req.body as AnthropicRequest);
}

/** Every message of the prompt as role and text, the system prompt first (role `system`). */
export function promptMessages(req: AiRequest): PromptMessage[] {
  if (req.format === 'openai')
    return (req.body as OpenAiChatRequest).messages.map((m) => ({ role: m.role, text: textOf(m.content) }));
  const body = req.body as AnthropicRequest;
  const out: PromptMessage[] = [];
  const system = blocksText(body.system);
  if (system !== '') out.push({ role: 'system', text: system });
  for (const m of body.messages) out.push({ role: m.role, text: blocksText(m.content) });
  return out;
}
