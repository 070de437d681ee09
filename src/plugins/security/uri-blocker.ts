import { definePlugin } from '../../core/plugin.js';
import { compileRegexList } from '../../conditions/regex.js';
import { configReadsRequestBody } from '../request-body-refs.js';
import { RESTRICTION_OUTPUTS } from '../auth/shared.js';

const EMPTY = Buffer.alloc(0);

/** Denies requests whose URI (path plus `?query`) matches one of the block rules. */
export const uriBlocker = definePlugin({
  type: 'uri-blocker',
  readsRequestBody: configReadsRequestBody,
  category: 'security',
  description: 'Deny requests whose URI (path and query) matches one of the regular-expression block rules.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['block_rules'],
    properties: {
      block_rules: {
        type: 'array',
        items: { type: 'string' },
        minItems: 1,
        description:
          'Regular expressions tested against the path plus ?query; any match denies. Never templated.',
      },
      rejected_code: {
        type: 'integer',
        minimum: 200,
        maximum: 599,
        default: 403,
        description: 'Denial status.',
      },
      rejected_msg: {
        type: 'string',
        description: 'Denial message, sent as {"error_msg": …} (templated); unset sends an empty body.',
      },
      case_insensitive: {
        type: 'boolean',
        default: false,
        description: 'Match the rules case-insensitively.',
      },
    },
  },
  outputs: RESTRICTION_OUTPUTS,
  templated: ['rejected_msg'],
  readsResponseBody: () => false,
  create(config, env) {
    const rules = compileRegexList(config.block_rules, 'block_rules', config.case_insensitive ? 'i' : '');
    const status = config.rejected_code;
    const message =
      config.rejected_msg === undefined ? undefined : env.template(config.rejected_msg, 'rejected_msg');
    return {
      run(ctx) {
        const uri = ctx.request.url;
        let blocked = false;
        for (const re of rules) {
          if (re.test(uri)) {
            blocked = true;
            break;
          }
        }
        if (!blocked) return 'success';
        if (message === undefined) {
          ctx.response.status = status;
          ctx.response.setBody(EMPTY);
        } else ctx.response.json(status, { error_msg: message.render(ctx) });
        return 'denied';
      },
    };
  },
});
