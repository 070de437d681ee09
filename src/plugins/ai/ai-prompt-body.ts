import type { Context } from '../../core/context.js';
import { customErrorCode, NodeError } from '../../core/errors.js';

/** The request formats the prompt nodes read and write: OpenAI Chat Completions, Anthropic Messages. */
export type ChatFormat = 'openai' | 'anthropic';

/** `format` of the prompt nodes: `auto` reads an Anthropic body from a `…/messages` path or a top-level `system`. */
export type FormatSetting = ChatFormat | 'auto';

export const formatSchema = {
  type: 'string',
  enum: ['auto', 'openai', 'anthropic'],
  default: 'auto',
  description:
    "Request format: 'openai' (Chat Completions), 'anthropic' (Messages, top-level system), or 'auto' (anthropic when the path ends in /messages or the body has a top-level system).",
} as const;

export type ChatBody = Record<string, unknown>;

export interface ChatMessage {
  role: string;
  content: unknown;
  [field: string]: unknown;
}

/** Raised for a body the prompt nodes cannot read: 400 with an OpenAI-style error body. */
export const AI_REQUEST_INVALID = customErrorCode('AI_REQUEST_INVALID');

/** Fails the node with a 400 `invalid_request_error` body the OpenAI and Anthropic SDKs both parse. */
export function invalidRequest(ctx: Context, message: string, code = 'invalid_body'): NodeError {
  ctx.response.json(400, { error: { type: 'invalid_request_error', code, message } });
  return new NodeError(AI_REQUEST_INVALID, message, { status: 400, responsePrepared: true });
}

// One parse per body: the prompt nodes of one request share it (a node that rewrites the body caches its own).
const parsed = new WeakMap<Buffer, ChatBody>();

/** The request body as a JSON object; throws a prepared 400 when there is none or it is not an object. */
export function chatBody(ctx: Context): ChatBody {
  const raw = ctx.request.body;
  if (raw === null || raw.length === 0) throw invalidRequest(ctx, 'the request has no JSON body');
  const known = parsed.get(raw);
  if (known !== undefined) return known;
  let doc: unknown;
  try {
    doc = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw invalidRequest(ctx, `the request body is not JSON: ${(err as Error).message}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw invalidRequest(ctx, 'the request body must be a JSON object');
  }
  parsed.set(raw, doc as ChatBody);
  return doc as ChatBody;
}

/** Replaces the request body with `doc` (and drops the stale length), keeping the parse for the next node. */
export function writeChatBody(ctx: Context, doc: ChatBody): void {
  const raw = Buffer.from(JSON.stringify(doc));
  parsed.set(raw, doc);
  ctx.request.body = raw;
  delete ctx.request.headers['content-length'];
  delete ctx.request.headers['content-encoding'];
}

export function formatOf(ctx: Context, doc: ChatBody, setting: FormatSetting): ChatFormat {
  if (setting !== 'auto') return setting;
  if (ctx.request.path.endsWith('/messages') || doc.system !== undefined) return 'anthropic';
  return 'openai';
}

/** `messages` of the body; a prepared 400 when present but not an array of `{role, content}` objects. */
export function messagesOf(ctx: Context, doc: ChatBody): ChatMessage[] {
  const list = doc.messages;
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw invalidRequest(ctx, 'messages must be an array');
  list.forEach((m: unknown, i) => {
    if (m === null || typeof m !== 'object' || typeof (m as ChatMessage).role !== 'string') {
      throw invalidRequest(ctx, `messages[${i}] must be an object with a string role`);
    }
  });
  return list as ChatMessage[];
}

/**
 * The text of a message content: a string, or the `text` of its text parts (OpenAI `{type: text}`
 * parts and Anthropic text blocks alike; images, tool calls and tool results carry no prompt text
 * here, except a tool result's own text content).
 */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const part of content as unknown[]) {
    if (typeof part === 'string') parts.push(part);
    else if (part !== null && typeof part === 'object') {
      const p = part as { type?: unknown; text?: unknown; content?: unknown };
      if (typeof p.text === 'string') parts.push(p.text);
      else if (p.type === 'tool_result') parts.push(contentText(p.content));
    }
  }
  return parts.join('\n');
}
