import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { chatBody, invalidRequest, writeChatBody, type ChatBody } from './ai-prompt-body.js';

interface TemplateConfig {
  name: string;
  template: Record<string, unknown>;
}

interface AiPromptTemplateConfig {
  templates: TemplateConfig[];
  template_field: string;
  keep_fields: string[];
  allow_untemplated: boolean;
}

/** A template value compiled once: a constant, a string with `{{field}}` holes, an array or object of those. */
type Filler = (fields: Fields) => unknown;
type Fields = (path: string) => unknown;

const HOLE = /\{\{\s*([^{}]*?)\s*\}\}/g;
const FIELD = /^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$/;

/** A field was named by the template but the request body has no value for it. */
class MissingField extends Error {
  constructor(readonly field: string) {
    super(field);
  }
}

/**
 * Named prompt templates (APISIX `ai-prompt-template`): the client names one in its body
 * (`template_name`) and sends only the fields it fills; the body becomes the template with every
 * `{{field}}` replaced by that field of the client's body. Values are placed into the JSON
 * document, never spliced into JSON text, so a field cannot inject structure.
 *
 * @example
 * ```yaml
 * - id: prompts
 *   type: ai-prompt-template
 *   config:
 *     templates:
 *       - name: qna
 *         template:
 *           model: gpt-4o-mini
 *           messages:
 *             - { role: system, content: 'Answer in a {{complexity}} way.' }
 *             - { role: user, content: '{{prompt}}' }
 * ```
 */
export const aiPromptTemplate = definePlugin({
  type: 'ai-prompt-template',
  category: 'ai',
  description:
    'Named prompt templates with {{field}} holes filled from the request body; the client picks one by template_name and the body becomes the filled template.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['templates'],
    properties: {
      templates: {
        type: 'array',
        minItems: 1,
        description: 'The templates: {name, template}, template being the whole request body to send.',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['name', 'template'],
          properties: {
            name: { type: 'string', minLength: 1, description: 'What the client sends as template_name.' },
            template: {
              type: 'object',
              description: 'The request body (e.g. model and messages); strings may hold {{field}} holes.',
            },
          },
        },
      },
      template_field: {
        type: 'string',
        minLength: 1,
        default: 'template_name',
        description: 'The body field naming the template.',
      },
      keep_fields: {
        type: 'array',
        items: { type: 'string', minLength: 1 },
        default: ['stream', 'stream_options'],
        description: "Fields of the client's body copied into the filled template when it does not set them.",
      },
      allow_untemplated: {
        type: 'boolean',
        default: true,
        description: 'Pass a body without template_name on unchanged; false answers it 400.',
      },
    },
  },
  outputs: { success: { kind: 'success' } },
  templated: [],
  readsResponseBody: () => false,
  create(config: AiPromptTemplateConfig) {
    const templates = new Map<string, Filler>();
    config.templates.forEach((t, i) => {
      if (templates.has(t.name)) throw new ConfigError(`templates[${i}].name`, `'${t.name}' is named twice`);
      templates.set(t.name, compileValue(t.template, `templates[${i}].template`));
    });
    const field = config.template_field;

    const fill = (ctx: Context, doc: ChatBody): 'success' => {
      const name = doc[field];
      if (name === undefined) {
        if (config.allow_untemplated) return 'success';
        throw invalidRequest(ctx, `the body must name a template in ${field}`, 'template_required');
      }
      const filler = typeof name === 'string' ? templates.get(name) : undefined;
      if (filler === undefined) {
        throw invalidRequest(ctx, `no prompt template named ${JSON.stringify(name)}`, 'template_not_found');
      }
      let out: ChatBody;
      try {
        out = filler((path) => lookup(doc, path)) as ChatBody;
      } catch (err) {
        if (!(err instanceof MissingField)) throw err;
        throw invalidRequest(
          ctx,
          `template ${JSON.stringify(name)} needs the field '${err.field}' in the body`,
          'template_field_missing',
        );
      }
      for (const kept of config.keep_fields)
        if (out[kept] === undefined && doc[kept] !== undefined) out[kept] = doc[kept];
      writeChatBody(ctx, out);
      return 'success';
    };

    return { run: (ctx) => fill(ctx, chatBody(ctx)) };
  },
});

function lookup(doc: ChatBody, path: string): unknown {
  let value: unknown = doc;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

function compileValue(value: unknown, path: string): Filler {
  if (typeof value === 'string') return compileString(value, path);
  if (Array.isArray(value)) {
    const items = value.map((v: unknown, i) => compileValue(v, `${path}[${i}]`));
    return (fields) => items.map((f) => f(fields));
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).map(([k, v]) => [k, compileValue(v, `${path}.${k}`)] as const);
    return (fields) => Object.fromEntries(entries.map(([k, f]) => [k, f(fields)]));
  }
  return () => value;
}

/** A string of literal text and `{{field}}` holes; a string that is one hole takes the field's JSON value as is. */
function compileString(source: string, path: string): Filler {
  const parts: (string | { field: string })[] = [];
  let last = 0;
  for (const m of source.matchAll(HOLE)) {
    const name = m[1] ?? '';
    if (!FIELD.test(name))
      throw new ConfigError(path, `'{{${name}}}' is not a field name (letters, digits, _ and -, dotted)`);
    if (m.index > last) parts.push(source.slice(last, m.index));
    parts.push({ field: name });
    last = m.index + m[0].length;
  }
  if (parts.length === 0) return () => source;
  if (last < source.length) parts.push(source.slice(last));
  const need = (fields: Fields, name: string): unknown => {
    const value = fields(name);
    if (value === undefined) throw new MissingField(name);
    return value;
  };
  const only = parts.length === 1 ? parts[0] : undefined;
  if (only !== undefined && typeof only !== 'string') return (fields) => need(fields, only.field);
  return (fields) => parts.map((p) => (typeof p === 'string' ? p : text(need(fields, p.field)))).join('');
}
