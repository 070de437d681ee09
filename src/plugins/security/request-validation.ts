import { compileCondition, type Condition } from '../../conditions/index.js';
import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { compileSchema, describeErrors, schemaCompiler, type ValidateFunction } from './json-schema.js';
import { FORM_TYPE, formDocument, headerDocument, mediaType } from './request-documents.js';
import { RESTRICTION_OUTPUTS } from '../auth/shared.js';

const CONDITIONS_FAILED = 'request conditions not satisfied';

/**
 * Validates the request headers and body against JSON Schemas (compiled with
 * ajv at load) and then a condition expression (src/conditions); the first
 * failure leaves by `denied` with `rejected_code`.
 */
export const requestValidation = definePlugin({
  type: 'request-validation',
  category: 'security',
  description:
    'Validate request headers and body against JSON Schemas and a condition expression; deny with rejected_code.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      header_schema: {
        type: 'object',
        description:
          'JSON Schema over {lowercase header name: first value}; values are coerced to the schema types.',
      },
      body_schema: {
        type: 'object',
        description: 'JSON Schema over the parsed body (JSON, or a flat object for form-urlencoded bodies).',
      },
      conditions: {
        type: 'array',
        description:
          'One condition expression (rules ANDed, nested AND/OR/NOT groups); see docs/conditions.md.',
      },
      rejected_code: {
        type: 'integer',
        minimum: 200,
        maximum: 599,
        default: 400,
        description: 'Denial status.',
      },
      rejected_msg: {
        type: 'string',
        description: "Fixed denial message (templated) instead of the validator's detail.",
      },
    },
  },
  outputs: RESTRICTION_OUTPUTS,
  templated: ['rejected_msg'],
  readsResponseBody: (config) => {
    if (config.conditions === undefined) return false;
    try {
      return compileCondition(config.conditions, 'conditions').readsResponseBody;
    } catch {
      return false;
    }
  },
  create(config, env) {
    if (
      config.header_schema === undefined &&
      config.body_schema === undefined &&
      config.conditions === undefined
    ) {
      throw new ConfigError('', 'needs at least one of header_schema, body_schema or conditions');
    }
    const headerAjv = schemaCompiler({ coerce: true });
    const bodyAjv = schemaCompiler();
    const headerCheck: ValidateFunction | undefined =
      config.header_schema === undefined
        ? undefined
        : compileSchema(headerAjv, config.header_schema, 'header_schema');
    const bodyCheck: ValidateFunction | undefined =
      config.body_schema === undefined
        ? undefined
        : compileSchema(bodyAjv, config.body_schema, 'body_schema');
    const condition: Condition | undefined =
      config.conditions === undefined ? undefined : compileCondition(config.conditions, 'conditions');
    const status = config.rejected_code;
    const fixed =
      config.rejected_msg === undefined ? undefined : env.template(config.rejected_msg, 'rejected_msg');

    const deny = (ctx: Context, detail: string): 'denied' => {
      ctx.response.json(status, { error: 'validation_failed', message: fixed?.render(ctx) ?? detail });
      return 'denied';
    };

    return {
      run(ctx) {
        if (headerCheck !== undefined && !headerCheck(headerDocument(ctx))) {
          return deny(
            ctx,
            `header validation failed: ${describeErrors(headerAjv, headerCheck.errors, 'headers')}`,
          );
        }
        if (bodyCheck !== undefined) {
          const body = ctx.request.body;
          if (body === null || body.length === 0) return deny(ctx, 'request body is required');
          let document: unknown;
          if (mediaType(ctx) === FORM_TYPE) document = formDocument(body);
          else {
            try {
              document = JSON.parse(body.toString('utf8'));
            } catch (err) {
              return deny(ctx, `failed to decode the request body: ${(err as Error).message}`);
            }
          }
          if (!bodyCheck(document)) {
            return deny(ctx, `body validation failed: ${describeErrors(bodyAjv, bodyCheck.errors, 'body')}`);
          }
        }
        if (condition !== undefined && !condition.evaluate(ctx)) return deny(ctx, CONDITIONS_FAILED);
        return 'success';
      },
    };
  },
});
