import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import {
  chatBody,
  formatOf,
  formatSchema,
  messagesOf,
  writeChatBody,
  type ChatBody,
  type ChatMessage,
  type FormatSetting,
} from './ai-prompt-body.js';

interface Decoration {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

interface AiPromptDecoratorConfig {
  prepend: Decoration[];
  append: Decoration[];
  format: FormatSetting;
}

const decorationList = (where: string) =>
  ({
    type: 'array',
    default: [],
    description: `Messages put ${where} the conversation.`,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['role', 'content'],
      properties: {
        role: { type: 'string', enum: ['system', 'user', 'assistant'] },
        content: { type: 'string', minLength: 1 },
      },
    },
  }) as const;

/**
 * Prepends and appends messages to an LLM request (APISIX `ai-prompt-decorator`): OpenAI Chat
 * Completions bodies get them in `messages`; Anthropic Messages bodies get system entries in the
 * top-level `system` (before or after the client's own) and the others in `messages`.
 *
 * @example
 * ```yaml
 * - id: decorate
 *   type: ai-prompt-decorator
 *   config:
 *     prepend: [{ role: system, content: Answer briefly and in English. }]
 *     append: [{ role: user, content: End with a one-line summary. }]
 * ```
 */
export const aiPromptDecorator = definePlugin({
  type: 'ai-prompt-decorator',
  category: 'ai',
  description:
    "Prepend or append system, user or assistant messages to OpenAI and Anthropic chat requests (Anthropic's system into its top-level system).",
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      prepend: decorationList('before'),
      append: decorationList('after'),
      format: formatSchema,
    },
  },
  outputs: { success: { kind: 'success' } },
  templated: [],
  readsResponseBody: () => false,
  create(config: AiPromptDecoratorConfig) {
    if (config.prepend.length === 0 && config.append.length === 0) {
      throw new ConfigError('prepend', 'set prepend or append (both are empty)');
    }
    const message = (d: Decoration): ChatMessage => ({ role: d.role, content: d.content });
    const notSystem = (d: Decoration) => d.role !== 'system';
    const systemText = (list: Decoration[]) =>
      list
        .filter((d) => d.role === 'system')
        .map((d) => d.content)
        .join('\n\n');
    const anthropic = {
      before: config.prepend.filter(notSystem).map(message),
      after: config.append.filter(notSystem).map(message),
      systemBefore: systemText(config.prepend),
      systemAfter: systemText(config.append),
    };

    const decorate = (ctx: Context, doc: ChatBody): 'success' => {
      const messages = messagesOf(ctx, doc);
      if (formatOf(ctx, doc, config.format) === 'openai') {
        doc.messages = [...config.prepend.map(message), ...messages, ...config.append.map(message)];
      } else {
        doc.messages = [...anthropic.before, ...messages, ...anthropic.after];
        const system = withSystem(doc.system, anthropic.systemBefore, anthropic.systemAfter);
        if (system !== undefined) doc.system = system;
      }
      writeChatBody(ctx, doc);
      return 'success';
    };

    return { run: (ctx) => decorate(ctx, chatBody(ctx)) };
  },
});

/** Anthropic's `system` with text before and after: a string stays a string, text blocks gain blocks. */
function withSystem(current: unknown, before: string, after: string): unknown {
  if (before === '' && after === '') return current;
  if (Array.isArray(current)) {
    const block = (text: string) => (text === '' ? [] : [{ type: 'text', text }]);
    return [...block(before), ...(current as unknown[]), ...block(after)];
  }
  const own = typeof current === 'string' ? current : '';
  return [before, own, after].filter((t) => t !== '').join('\n\n');
}
