import type { Gateway } from '../gateway.js';
import { parseSandboxContext, SandboxInputError, sandboxContext } from '../debug/sandbox-context.js';
import { compileTemplate } from '../template/index.js';
import { AdminError, adminError, bodyLimitsOf, json, readJsonObject } from './http.js';
import type { AdminRoute } from './router.js';

/** The preview: one line of at most this many characters (docs/editor.md#template-preview). */
export const PREVIEW_LENGTH = 80;
/** The longest template text a preview accepts. */
export const MAX_TEMPLATE_CHARS = 8192;
/** The largest request body a preview reads, below admin.limits.max_body_bytes when that is larger. */
export const MAX_PREVIEW_BODY_BYTES = 64 * 1024;

const FIELDS = new Set(['template', 'request', 'legacy', 'phase']);

const badRequest = (message: string): AdminError => adminError('bad_request', { message });

/** One line (newlines shown as ⏎), cut to PREVIEW_LENGTH characters with a trailing ellipsis. */
export function previewLine(rendered: string): string {
  const line = rendered.replace(/\s*\r?\n\s*/g, ' ⏎ ');
  const chars = [...line];
  return chars.length > PREVIEW_LENGTH ? `${chars.slice(0, PREVIEW_LENGTH - 1).join('')}…` : line;
}

/**
 * `{{env.NAME}}` never shows a value in a preview (a viewer may call it):
 * a set variable renders as `<env NAME>`, an unset one as the renderer
 * reports it (a warning, the reference kept literally).
 */
function maskedEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.keys(env)
      .filter((name) => env[name] !== undefined)
      .map((name) => [name, `<env ${name}>`]),
  );
}

/**
 * `POST /api/templates/preview`: renders one template with the gateway's own
 * compiler against a sample request (the sandbox's `context` shape). Writes
 * nothing, so a viewer may call it. Answers the rendered text as one line of
 * at most 80 characters, its full length and the renderer's warnings.
 */
export function templatePreviewRoute(gateway: Gateway): AdminRoute {
  return {
    method: 'POST',
    path: '/api/templates/preview',
    auth: true,
    readOnly: true,
    handler: async ({ req }) => {
      const limits = bodyLimitsOf(gateway.system);
      let input: Record<string, unknown>;
      try {
        input = await readJsonObject(req, {
          ...limits,
          max_body_bytes: Math.min(limits.max_body_bytes, MAX_PREVIEW_BODY_BYTES),
        });
      } catch (err) {
        if (err instanceof AdminError && err.status === 413) {
          throw adminError(
            'payload_too_large',
            {
              message: `a template preview body must not exceed ${Math.min(limits.max_body_bytes, MAX_PREVIEW_BODY_BYTES)} bytes`,
            },
            err.headers,
          );
        }
        throw err;
      }
      for (const key of Object.keys(input)) {
        if (!FIELDS.has(key)) throw badRequest(`unknown field '${key}' (expected ${[...FIELDS].join(', ')})`);
      }
      const template = input.template;
      if (typeof template !== 'string') throw badRequest("'template' must be a string");
      if (template.length > MAX_TEMPLATE_CHARS)
        throw badRequest(`'template' must not exceed ${MAX_TEMPLATE_CHARS} characters`);
      const legacy = input.legacy ?? false;
      if (typeof legacy !== 'boolean') throw badRequest("'legacy' must be true or false");
      const phase = input.phase ?? 'request';
      if (phase !== 'request' && phase !== 'response')
        throw badRequest("'phase' must be 'request' or 'response'");

      let ctx;
      try {
        ctx = sandboxContext(parseSandboxContext(input.request), AbortSignal.abort());
      } catch (err) {
        if (err instanceof SandboxInputError) throw badRequest(err.message.replace(/^context/, 'request'));
        throw err;
      }
      const message = ctx.message['consumer.name'];
      if (typeof message === 'string') {
        const group = ctx.message['consumer.group'];
        ctx.consumer = { name: message, ...(typeof group === 'string' ? { group } : {}) };
      }
      const warnings: string[] = [];
      const compiled = compileTemplate(template, {
        legacy,
        phase,
        env: maskedEnv(gateway.env),
        warn: (w) => warnings.push(w),
      });
      const rendered = compiled.render(ctx);
      return json(200, {
        preview: previewLine(rendered),
        length: [...rendered].length,
        truncated: [...rendered].length > PREVIEW_LENGTH || /\n/.test(rendered),
        static: compiled.isStatic,
        warnings,
      });
    },
  };
}
