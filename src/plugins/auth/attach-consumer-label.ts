import { ConfigError, definePlugin } from '../../core/plugin.js';
import { configReadsRequestBody } from '../request-body-refs.js';

const TOKEN = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

/**
 * Copies the attached consumer's labels (`message.consumer.labels`) to request
 * headers `<header_prefix><label>`, lowercased. Without a consumer it does nothing.
 *
 * @example
 * ```yaml
 * - id: labels
 *   type: attach-consumer-label
 *   config: { header_prefix: X-Consumer- }
 * ```
 */
export const attachConsumerLabel = definePlugin({
  type: 'attach-consumer-label',
  readsRequestBody: configReadsRequestBody,
  category: 'auth',
  description: "Copy the authenticated consumer's labels into upstream request headers.",
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: { header_prefix: { type: 'string', default: 'X-Consumer-' } },
  },
  outputs: { success: { kind: 'success' } },
  create(config) {
    const prefix = config.header_prefix.toLowerCase();
    if (prefix !== '' && !TOKEN.test(prefix)) {
      throw new ConfigError('header_prefix', 'must only hold header-name characters');
    }
    return {
      run(ctx) {
        const labels = ctx.message['consumer.labels'];
        if (typeof labels !== 'object' || labels === null) return 'success';
        for (const [name, value] of Object.entries(labels as Record<string, unknown>)) {
          const header = `${prefix}${name}`.toLowerCase();
          if (typeof value === 'string' && TOKEN.test(header)) ctx.request.headers[header] = value;
        }
        return 'success';
      },
    };
  },
});
