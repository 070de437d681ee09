import { definePlugin } from '../../core/plugin.js';

const DIALECT = /\{\{\s*error\.(code|message|node_id)\s*\}\}/g;

type ErrorField = 'code' | 'message' | 'node_id';

/** Splits the template once: literal text and `{{error.*}}` references of its own light dialect. */
function parseDialect(template: string): { parts: string[]; refs: ErrorField[] } {
  const parts: string[] = [];
  const refs: ErrorField[] = [];
  let last = 0;
  for (const m of template.matchAll(DIALECT)) {
    parts.push(template.slice(last, m.index));
    refs.push(m[1] as ErrorField);
    last = m.index + m[0].length;
  }
  parts.push(template.slice(last));
  return { parts, refs };
}

/** JSON string content without the quotes, so values cannot break the JSON body around them. */
const escapeJson = (value: string): string => JSON.stringify(value).slice(1, -1);

/** Turns the last `ctx.errors` entry into a JSON error response; an errorless context passes untouched. */
export const errorHandler = definePlugin({
  type: 'error-handler',
  category: 'errors-and-mocking',
  readsRequestBody: false,
  description: 'Render the last recorded error as a JSON response; contexts without errors pass untouched.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      status_code: { type: 'integer', minimum: 100, maximum: 599, default: 500 },
      body_template: {
        type: 'string',
        default: '{"error": "internal_error", "message": "An unexpected error occurred"}',
      },
      content_type: { type: 'string' },
    },
  },
  outputs: { success: { kind: 'success' } },
  create(config) {
    const { parts, refs } = parseDialect(config.body_template);
    const status = config.status_code;
    return {
      run(ctx) {
        const last = ctx.errors[ctx.errors.length - 1];
        if (last === undefined) return 'success';
        let body = parts[0] ?? '';
        refs.forEach((ref, i) => {
          body += escapeJson(last[ref]) + (parts[i + 1] ?? '');
        });
        const res = ctx.response;
        res.status = status;
        // The rendered template is plain JSON whatever the upstream had encoded.
        res.setBody(body, 'application/json');
        delete res.headers['content-encoding'];
        return 'success';
      },
    };
  },
});
