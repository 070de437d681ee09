import { ConfigError, definePlugin } from '../../core/plugin.js';
import { compileRegexList } from '../../conditions/regex.js';
import { configReadsRequestBody } from '../request-body-refs.js';
import { RESTRICTION_OUTPUTS } from '../auth/shared.js';

/**
 * Allows or denies by User-Agent regular expressions (exactly one of
 * `allowlist` / `denylist`), compiled once at load and never templated.
 */
export const uaRestriction = definePlugin({
  type: 'ua-restriction',
  readsRequestBody: configReadsRequestBody,
  category: 'security',
  description: 'Allow or deny requests whose User-Agent matches regular expressions.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      allowlist: {
        type: 'array',
        items: { type: 'string' },
        description: 'Regular expressions; only a User-Agent matching one passes.',
      },
      denylist: {
        type: 'array',
        items: { type: 'string' },
        description: 'Regular expressions; a User-Agent matching one is denied.',
      },
      bypass_missing: {
        type: 'boolean',
        default: false,
        description: 'Let requests without a User-Agent header pass.',
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
        default: 'Not allowed',
        description: 'Denial message, sent as {"message": …} (templated).',
      },
    },
  },
  outputs: RESTRICTION_OUTPUTS,
  templated: ['rejected_msg'],
  readsResponseBody: () => false,
  create(config, env) {
    const allow = compileRegexList(config.allowlist ?? [], 'allowlist');
    const deny = compileRegexList(config.denylist ?? [], 'denylist');
    if (allow.length > 0 && deny.length > 0) {
      throw new ConfigError('denylist', 'cannot be combined with allowlist; configure exactly one of them');
    }
    if (allow.length === 0 && deny.length === 0) {
      throw new ConfigError('', 'needs a non-empty allowlist or denylist');
    }
    const allowMode = allow.length > 0;
    const rules = allowMode ? allow : deny;
    const bypass = config.bypass_missing;
    const status = config.rejected_code;
    const message = env.template(config.rejected_msg, 'rejected_msg');
    return {
      run(ctx) {
        const raw = ctx.request.headers['user-agent'];
        let passed: boolean;
        if (raw === undefined) passed = bypass;
        else {
          let matched = false;
          for (const value of typeof raw === 'string' ? [raw] : raw) {
            const ua = value.trim();
            for (const re of rules) {
              if (re.test(ua)) {
                matched = true;
                break;
              }
            }
            if (matched) break;
          }
          passed = allowMode ? matched : !matched;
        }
        if (passed) return 'success';
        ctx.response.json(status, { message: message.render(ctx) });
        return 'denied';
      },
    };
  },
});
