import { compileRegexList, type ConfigRegex } from '../../conditions/regex.js';
import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import {
  chatBody,
  contentText,
  formatOf,
  formatSchema,
  messagesOf,
  type FormatSetting,
} from './ai-prompt-body.js';

interface AiPromptGuardConfig {
  deny_patterns: string[];
  allow_patterns: string[];
  roles: string[];
  match_all_conversation_history: boolean;
  format: FormatSetting;
  deny_message: string;
  allow_message: string;
}

/**
 * Allow/deny patterns on the prompt text of an OpenAI Chat Completions or Anthropic Messages
 * request (APISIX `ai-prompt-guard`). A message of a checked role is blocked when a deny pattern
 * matches it, or when allow patterns are set and none matches; the client gets a 400 the OpenAI
 * and Anthropic SDKs parse, and the request leaves through `blocked`.
 *
 * @example
 * ```yaml
 * - id: guard
 *   type: ai-prompt-guard
 *   config: { deny_patterns: ['(?i)ignore (all|previous) instructions'], roles: [user, system] }
 * ```
 */
export const aiPromptGuard = definePlugin({
  type: 'ai-prompt-guard',
  category: 'ai',
  description:
    'Allow/deny RE2 patterns on the message content of OpenAI and Anthropic chat requests, per role; a blocked prompt gets a 400.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      deny_patterns: {
        type: 'array',
        items: { type: 'string' },
        default: [],
        description: 'RE2 patterns: a checked message matching any of them is blocked.',
      },
      allow_patterns: {
        type: 'array',
        items: { type: 'string' },
        default: [],
        description: 'RE2 patterns: when set, a checked message matching none of them is blocked.',
      },
      roles: {
        type: 'array',
        items: { type: 'string', minLength: 1 },
        minItems: 1,
        default: ['user'],
        description:
          "Roles whose messages are checked (system also covers OpenAI's developer role and Anthropic's top-level system).",
      },
      match_all_conversation_history: {
        type: 'boolean',
        default: true,
        description: 'Check every message of the checked roles; false checks only the last one of them.',
      },
      format: formatSchema,
      deny_message: {
        type: 'string',
        minLength: 1,
        default: 'the prompt contains prohibited content',
        description: 'error.message of the 400 when a deny pattern matched.',
      },
      allow_message: {
        type: 'string',
        minLength: 1,
        default: 'the prompt does not match any allowed pattern',
        description: 'error.message of the 400 when no allow pattern matched.',
      },
    },
  },
  outputs: {
    success: { kind: 'success' },
    blocked: {
      kind: 'outcome',
      description:
        'A checked message was denied; a 400 {"error":{"type":"invalid_request_error","code":"prompt_blocked"}} is prepared. Wire to client.',
    },
  },
  templated: [],
  readsResponseBody: () => false,
  create(config: AiPromptGuardConfig) {
    if (config.deny_patterns.length === 0 && config.allow_patterns.length === 0) {
      throw new ConfigError('deny_patterns', 'set deny_patterns or allow_patterns (both are empty)');
    }
    const deny = compileRegexList(config.deny_patterns, 'deny_patterns');
    const allow = compileRegexList(config.allow_patterns, 'allow_patterns');
    const roles = new Set(config.roles);
    const checks = (role: string): boolean => roles.has(role === 'developer' ? 'system' : role);
    const verdict = (text: string): string | undefined => {
      if (deny.some((re) => re.test(text))) return config.deny_message;
      if (allow.length > 0 && text !== '' && !allow.some((re: ConfigRegex) => re.test(text)))
        return config.allow_message;
      return undefined;
    };

    const block = (ctx: Context, message: string): 'blocked' => {
      ctx.response.json(400, { error: { type: 'invalid_request_error', code: 'prompt_blocked', message } });
      return 'blocked';
    };

    return {
      run(ctx) {
        const doc = chatBody(ctx);
        const texts: string[] = [];
        if (checks('system') && formatOf(ctx, doc, config.format) === 'anthropic') {
          const system = contentText(doc.system);
          if (system !== '') texts.push(system);
        }
        for (const message of messagesOf(ctx, doc)) {
          if (checks(message.role)) texts.push(contentText(message.content));
        }
        const checked = config.match_all_conversation_history ? texts : texts.slice(-1);
        for (const text of checked) {
          const refusal = verdict(text);
          if (refusal !== undefined) return block(ctx, refusal);
        }
        return 'success';
      },
    };
  },
});
