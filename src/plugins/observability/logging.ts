import { definePlugin } from '../../core/plugin.js';
import { defaultEntry, type DefaultEntryOptions } from './shared/entry.js';
import { loggerSchema, successOnly } from './shared/logger-node.js';

interface LoggingConfig {
  include_headers: boolean;
  include_body: boolean;
}

/**
 * Writes the default access-log entry to the gateway's own log (stdout) at
 * info level, message `access`. The log stream is already buffered; nothing
 * is batched here.
 */
export const logging = definePlugin({
  type: 'logging',
  category: 'observability',
  description: 'Write a structured JSON access-log line for the request to the gateway log (stdout).',
  schema: loggerSchema({
    include_headers: {
      type: 'boolean',
      default: false,
      description: 'Also log request and response headers.',
    },
    include_body: {
      type: 'boolean',
      default: false,
      description: 'Accepted for compatibility; bodies are never logged (sizes are).',
    },
  }),
  outputs: successOnly,
  // docs/configuration.md#streaming: a logger without log_format buffers the response (its size is logged).
  readsResponseBody: () => true,
  create(config: LoggingConfig, env) {
    const options: DefaultEntryOptions = {
      headers: config.include_headers,
      requestBody: false,
      responseBody: false,
    };
    const log = env.logger.child({ policy: env.policy, node: env.nodeId });
    return {
      run(ctx) {
        log.info(defaultEntry(ctx, options), 'access');
        return 'success';
      },
    };
  },
});
