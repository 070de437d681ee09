import { definePlugin, type Template } from '../../core/plugin.js';
import { mentionsResponseBody } from '../response-body-refs.js';

interface PageConfig {
  body?: string;
  content_type: string;
}

type ErrorPageConfig = Partial<Record<'error_404' | 'error_500' | 'error_502' | 'error_503', PageConfig>>;

const PAGES = [
  [404, 'Not Found'],
  [500, 'Internal Server Error'],
  [502, 'Bad Gateway'],
  [503, 'Service Unavailable'],
] as const;

const pageSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    body: {
      type: 'string',
      description: 'Replacement body ({{…}} templated); default a built-in HTML page.',
    },
    content_type: { type: 'string', default: 'text/html', description: 'Content-Type of the page.' },
  },
} as const;

function defaultPage(status: number, reason: string): string {
  const title = `${status} ${reason}`;
  return `<html>\n<head><title>${title}</title></head>\n<body>\n<center><h1>${title}</h1></center>\n<hr><center>switchyard</center>\n</body>\n</html>`;
}

interface Page {
  body: Template | string;
  contentType: string;
}

/** Replaces the body of gateway-generated 404/500/502/503 responses with configured pages. */
export const errorPage = definePlugin({
  type: 'error-page',
  category: 'errors-and-mocking',
  description:
    'Replace the body of gateway-generated 404, 500, 502 and 503 responses (those with a recorded error) with configured pages.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(PAGES.map(([status]) => [`error_${status}`, pageSchema])),
  },
  outputs: { success: { kind: 'success' } },
  templated: PAGES.map(([status]) => `error_${status}.body`),
  readsResponseBody: (c: ErrorPageConfig) =>
    PAGES.some(([status]) => mentionsResponseBody(c[`error_${status}`]?.body, false)),
  create(config: ErrorPageConfig, env) {
    const pages = new Map<number, Page>();
    for (const [status, reason] of PAGES) {
      const page = config[`error_${status}`];
      if (page === undefined) continue;
      pages.set(status, {
        body:
          page.body === undefined
            ? defaultPage(status, reason)
            : env.template(page.body, `error_${status}.body`, { phase: 'response' }),
        contentType: page.content_type,
      });
    }
    return {
      run(ctx) {
        // An upstream's own 502 carries no error record and passes untouched, as in APISIX.
        if (ctx.errors.length === 0) return 'success';
        const page = pages.get(ctx.response.status);
        if (page === undefined) return 'success';
        const res = ctx.response;
        res.setBody(typeof page.body === 'string' ? page.body : page.body.render(ctx), page.contentType);
        delete res.headers['content-encoding'];
        return 'success';
      },
    };
  },
});
