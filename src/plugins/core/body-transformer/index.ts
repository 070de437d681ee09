import type { Context } from '../../../core/context.js';
import { NodeError } from '../../../core/errors.js';
import { decodeBody } from '../../content-codec.js';
import { ConfigError, definePlugin, type PluginEnv } from '../../../core/plugin.js';
import { compileDialect, DialectError, type BodyRender } from './dialect.js';
import { parseXml } from './xml.js';

type InputFormat = 'json' | 'xml';

interface TransformConfig {
  template: string;
  input_format: InputFormat;
  template_is_base64?: boolean;
}

interface Transform {
  render: BodyRender;
  parse: (text: string) => unknown;
}

const transformSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['template'],
  properties: {
    template: {
      type: 'string',
      minLength: 1,
      description:
        'Output body in the own dialect: {{body.a.b}}, {{$var}}, $var (not the gateway templates).',
    },
    input_format: {
      type: 'string',
      enum: ['json', 'xml'],
      default: 'json',
      description: 'How the incoming body is parsed before rendering.',
    },
    template_is_base64: { type: 'boolean', description: 'Not supported: true is rejected.' },
  },
} as const;

const PARSERS: Record<InputFormat, (text: string) => unknown> = {
  json: (text): unknown => JSON.parse(text),
  xml: parseXml,
};

/** Re-renders the request and/or response body from a template over the parsed (JSON or XML) body. */
export const bodyTransformer = definePlugin({
  type: 'body-transformer',
  category: 'core',
  description:
    'Rewrite the request and/or response body from a template over the parsed JSON or XML body ({{body.user.name}}).',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: { request: transformSchema, response: transformSchema },
  },
  outputs: { success: { kind: 'success' } },
  readsResponseBody: (c) => c.response !== undefined,
  create(config, env) {
    if (config.request === undefined && config.response === undefined) {
      throw new ConfigError('', "at least one of 'request' or 'response' is required");
    }
    const request = config.request && compileTransform(config.request, 'request', env);
    const response = config.response && compileTransform(config.response, 'response', env);
    return {
      run(ctx) {
        if (request !== undefined) transformRequest(ctx, request);
        if (response !== undefined) transformResponse(ctx, response);
        return 'success';
      },
    };
  },
});

function compileTransform(config: TransformConfig, side: 'request' | 'response', env: PluginEnv): Transform {
  if (config.template_is_base64 === true) {
    throw new ConfigError(`${side}.template_is_base64`, 'is not supported: write the template literally');
  }
  try {
    return {
      render: compileDialect(
        config.template,
        `${side}.template`,
        env,
        side === 'request' ? 'request' : 'response',
      ),
      parse: PARSERS[config.input_format],
    };
  } catch (err) {
    if (err instanceof DialectError) throw new ConfigError(`${side}.template`, err.message);
    throw err;
  }
}

function parse(transform: Transform, body: Buffer | null, side: string, status: number): unknown {
  if (body === null || body.length === 0) return null;
  try {
    return transform.parse(body.toString('utf8'));
  } catch (err) {
    throw new NodeError('BODY_DECODE_FAILED', `${side} body cannot be decoded: ${(err as Error).message}`, {
      status,
    });
  }
}

function transformRequest(ctx: Context, transform: Transform): void {
  const req = ctx.request;
  const parsed = parse(transform, req.body, 'request', 400);
  req.body = Buffer.from(transform.render(ctx, parsed));
  delete req.headers['content-length'];
  delete req.headers['content-encoding'];
}

function transformResponse(ctx: Context, transform: Transform): void {
  const res = ctx.response;
  let body = res.body;
  try {
    if (body !== null) body = decodeBody(body, res.header('content-encoding'));
  } catch (err) {
    throw new NodeError('BODY_DECODE_FAILED', `response body cannot be decoded: ${(err as Error).message}`, {
      status: 502,
    });
  }
  const parsed = parse(transform, body, 'response', 502);
  res.setBody(transform.render(ctx, parsed));
  delete res.headers['content-encoding'];
}
