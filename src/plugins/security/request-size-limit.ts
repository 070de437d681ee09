import { definePlugin } from '../../core/plugin.js';
import { RESTRICTION_OUTPUTS } from '../auth/shared.js';

const TOO_LARGE = { error: 'payload_too_large', message: 'Request body exceeds size limit' } as const;

/** Denies requests whose buffered body is larger than `max_bytes` (exactly `max_bytes` passes). */
export const requestSizeLimit = definePlugin({
  type: 'request-size-limit',
  category: 'security',
  description: 'Deny requests whose body is larger than a byte limit with 413.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      max_bytes: {
        type: 'integer',
        minimum: 0,
        default: 1048576,
        description: 'Largest accepted body, in bytes.',
      },
    },
  },
  outputs: RESTRICTION_OUTPUTS,
  templated: [],
  readsResponseBody: () => false,
  create(config) {
    const max = config.max_bytes;
    return {
      run(ctx) {
        if ((ctx.request.body?.length ?? 0) <= max) return 'success';
        ctx.response.json(413, TOO_LARGE);
        return 'denied';
      },
    };
  },
});
