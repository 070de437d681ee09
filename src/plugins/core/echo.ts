import { definePlugin } from '../../core/plugin.js';
import { headerListSchema, headerPairs } from '../shared-schemas.js';

/** Testing aid: replaces or wraps the response body and sets response headers. */
export const echo = definePlugin({
  type: 'echo',
  category: 'core',
  description: 'Replace or wrap the response body and set response headers (a testing aid).',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      body: { type: 'string' },
      before_body: { type: 'string' },
      after_body: { type: 'string' },
      headers: headerListSchema,
    },
  },
  outputs: { success: { kind: 'success' } },
  templated: ['body', 'before_body', 'after_body', 'headers.*'],
  // Wrapping keeps the current body, so it must be read; replacing it does not.
  readsResponseBody: (c) =>
    c.body === undefined && (c.before_body !== undefined || c.after_body !== undefined),
  create(config, env) {
    const body = config.body === undefined ? undefined : env.template(config.body, 'body');
    const before =
      config.before_body === undefined ? undefined : env.template(config.before_body, 'before_body');
    const after = config.after_body === undefined ? undefined : env.template(config.after_body, 'after_body');
    const headers = headerPairs(config.headers).map(
      ([name, value]) => [name, env.template(value, `headers.${name}`)] as const,
    );
    const rewritesBody = body !== undefined || before !== undefined || after !== undefined;
    return {
      run(ctx) {
        const res = ctx.response;
        if (rewritesBody) {
          const middle = body !== undefined ? body.render(ctx) : (res.body?.toString('utf8') ?? '');
          res.setBody(`${before?.render(ctx) ?? ''}${middle}${after?.render(ctx) ?? ''}`);
        }
        for (const [name, value] of headers) res.headers[name] = value.render(ctx);
        return 'success';
      },
    };
  },
});
