import { ConfigError, definePlugin } from '../../core/plugin.js';
import { mentionsResponseBody } from '../response-body-refs.js';

const STATUS = /^[1-5]\d\d$/;

/**
 * Reshapes responses the gateway produced itself (the context carries an
 * error record): remaps the status and renders a new body. With `always`,
 * every response is reshaped.
 */
export const exitTransformer = definePlugin({
  type: 'exit-transformer',
  category: 'errors-and-mocking',
  description:
    'Remap the status and rewrite the body of gateway-generated responses (those with a recorded error), or of every response with always.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      status_map: {
        type: 'object',
        default: {},
        propertyNames: { pattern: '^[1-5][0-9][0-9]$' },
        additionalProperties: { type: 'integer', minimum: 100, maximum: 599 },
        description: 'Status → status, e.g. {"502": 503}; applied before the body is rendered.',
      },
      body: {
        type: 'string',
        description: 'New body; templated with {{…}} and legacy $var ($status is the remapped status).',
      },
      always: {
        type: 'boolean',
        default: false,
        description: 'Apply to every response; by default only when context.errors is non-empty.',
      },
    },
  },
  outputs: { success: { kind: 'success' } },
  templated: ['body'],
  // Reading $resp_body / {{response.body}} needs the whole upstream body.
  readsResponseBody: (c) => mentionsResponseBody(c.body, true),
  create(config, env) {
    const statusMap = new Map<number, number>();
    for (const [from, to] of Object.entries(config.status_map)) {
      if (!STATUS.test(from))
        throw new ConfigError(`status_map.${from}`, 'key must be a status code 100-599');
      statusMap.set(Number(from), to);
    }
    const body =
      config.body === undefined
        ? undefined
        : env.template(config.body, 'body', { legacy: true, phase: 'response' });
    const always = config.always;
    return {
      run(ctx) {
        if (!always && ctx.errors.length === 0) return 'success';
        const res = ctx.response;
        const mapped = statusMap.get(res.status);
        if (mapped !== undefined) res.status = mapped;
        if (body !== undefined) {
          res.setBody(body.render(ctx));
          delete res.headers['content-encoding'];
        }
        return 'success';
      },
    };
  },
});
