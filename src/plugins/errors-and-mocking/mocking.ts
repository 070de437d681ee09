import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin, type PluginEnv } from '../../core/plugin.js';
import { headerListSchema, headerPairs, type HeaderListConfig } from '../shared-schemas.js';
import { compileMockSchema, MockSchemaError } from './mock-schema.js';
import { configReadsRequestBody } from '../request-body-refs.js';

interface MockingConfig {
  response_example?: string;
  response_status: number;
  content_type: string;
  response_headers?: HeaderListConfig;
  with_mock_header: boolean;
  delay: number;
  response_schema?: Record<string, unknown>;
}

const CONTENT_TYPES = ['application/json', 'application/xml', 'text/plain', 'text/html', 'text/xml'];

/** Answers with a configured response; wire `success` to `client`. */
export const mocking = definePlugin({
  type: 'mocking',
  readsRequestBody: configReadsRequestBody,
  category: 'errors-and-mocking',
  description: 'Answer the request with a configured mock response (status, body, headers, optional delay).',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      response_example: {
        type: 'string',
        description: 'Response body; templated with {{…}} and legacy $var. Wins over response_schema.',
      },
      response_schema: {
        type: 'object',
        description:
          'JSON Schema of a body generated per request (example/default/const/enum used, else random).',
      },
      response_status: { type: 'integer', minimum: 100, maximum: 599, default: 200 },
      content_type: { type: 'string', default: 'application/json;charset=utf8' },
      response_headers: headerListSchema,
      with_mock_header: { type: 'boolean', default: true, description: 'Add x-mock-by: switchyard-mocking.' },
      delay: { type: 'number', minimum: 0, default: 0, description: 'Seconds to wait before answering.' },
    },
  },
  outputs: { success: { kind: 'success' } },
  templated: ['response_example', 'response_headers.*'],
  create(config: MockingConfig, env) {
    const base = config.content_type.split(';')[0]?.trim().toLowerCase() ?? '';
    if (!CONTENT_TYPES.includes(base)) {
      throw new ConfigError(
        'content_type',
        `must be one of ${CONTENT_TYPES.join(', ')} (parameters allowed)`,
      );
    }
    const body = compileBody(config, env);
    const headers = headerPairs(config.response_headers).map(
      ([name, value]) => [name, env.template(value, `response_headers.${name}`, { legacy: true })] as const,
    );
    const status = config.response_status;
    const contentType = config.content_type;
    const mockHeader = config.with_mock_header;
    const answer = (ctx: Context): 'success' => {
      const res = ctx.response;
      res.status = status;
      res.setBody(body(ctx), contentType);
      for (const [name, value] of headers) res.headers[name] = value.render(ctx);
      if (mockHeader) res.headers['x-mock-by'] = 'switchyard-mocking';
      return 'success';
    };
    const delayMs = config.delay * 1000;
    if (delayMs === 0) return { run: answer };
    return {
      run: async (ctx) => {
        await sleep(delayMs, undefined, { signal: ctx.signal }).catch(() => undefined);
        return answer(ctx);
      },
    };
  },
});

/** The body source: the templated example, or a generator built from the schema. */
function compileBody(config: MockingConfig, env: PluginEnv): (ctx: Context) => string {
  if (config.response_example !== undefined) {
    if (config.response_schema !== undefined) env.warn('response_schema', 'ignored: response_example is set');
    const example = env.template(config.response_example, 'response_example', { legacy: true });
    return (ctx) => example.render(ctx);
  }
  if (config.response_schema === undefined) {
    throw new ConfigError('response_example', 'one of response_example or response_schema is required');
  }
  try {
    const generate = compileMockSchema(config.response_schema);
    return () => JSON.stringify(generate());
  } catch (err) {
    if (err instanceof MockSchemaError) throw new ConfigError(`response_schema${err.path}`, err.message);
    throw err;
  }
}
