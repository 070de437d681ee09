import type { Context } from '../core/context.js';
import type { Template } from '../core/plugin.js';
import { jsonEncoder, jsonHoles } from './json-context.js';
import { compileLegacy } from './legacy.js';
import { resolvePath } from './paths.js';
import type { Part, Phase, Reader } from './readers.js';

/** Where a templated string lives, for load-time warnings. */
export interface TemplateWhere {
  policy: string;
  node: string;
  /** Path of the field in the node config, e.g. `headers.set.x-tenant`. */
  key: string;
}

export interface CompileTemplateOptions {
  /** Also compile legacy `$name` / `${name}` variables in the literal text (the fifteen field groups). */
  legacy?: boolean;
  /** `request` (default): `response.status` and `$status` render `0`. */
  phase?: Phase;
  where?: TemplateWhere;
  /** Receives one message per bad reference, at compile time only. */
  warn?: (message: string) => void;
  /** Source of `{{env.NAME}}`, read once here; defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Parses `text` once into literal text and typed references; `render` only
 * concatenates. Never throws: a reference that does not resolve stays as
 * literal text (docs/templates.md#template-syntax, rules 1–9).
 *
 * @example
 * const t = compileTemplate('{{request.method}} {{request.headers.x-api-key}}');
 * t.render(ctx); // 'GET abc'
 */
export function compileTemplate(text: string, options: CompileTemplateOptions = {}): Template {
  const phase = options.phase ?? 'request';
  const env = options.env ?? process.env;
  const parts: Part[] = [];
  const addLiteral = (literal: string): void => {
    if (literal === '') return;
    if (options.legacy === true) parts.push(...compileLegacy(literal, phase));
    else parts.push(literal);
  };

  let pos = 0;
  for (;;) {
    const first = text.indexOf('{{', pos);
    if (first === -1) break;
    const close = text.indexOf('}}', first + 2);
    // Unclosed `{{`: the rest is literal text (rule 5).
    if (close === -1) break;
    // No nesting: of `{{ {{request.method}}` only the innermost opening counts.
    const open = text.lastIndexOf('{{', close - 2);
    addLiteral(text.slice(pos, open));
    const resolution = resolvePath(text.slice(open + 2, close).trim(), phase, env);
    if (resolution.kind === 'part') {
      parts.push(resolution.part);
    } else {
      const raw = text.slice(open, close + 2);
      // Kept verbatim and outside the `$` pass: it is a `{{…}}`, just not ours.
      parts.push(raw);
      if (resolution.kind === 'invalid') options.warn?.(warning(raw, resolution.reason, options.where));
    }
    pos = close + 2;
  }
  addLiteral(text.slice(pos));
  return new CompiledTemplate(text, parts);
}

class CompiledTemplate implements Template {
  readonly source: string;
  readonly isStatic: boolean;
  /** `literals.length === readers.length + 1`; render interleaves them. */
  readonly #literals: string[];
  readonly #readers: Reader[];

  constructor(source: string, parts: Part[]) {
    this.source = source;
    const literals = [''];
    const readers: Reader[] = [];
    for (const part of parts) {
      if (typeof part === 'string') literals[literals.length - 1] += part;
      else {
        readers.push(part);
        literals.push('');
      }
    }
    this.#literals = literals;
    this.#readers = jsonSafe(literals, readers);
    this.isStatic = readers.length === 0;
  }

  render(ctx: Context): string {
    const literals = this.#literals;
    const readers = this.#readers;
    let out = literals[0]!;
    for (let i = 0; i < readers.length; i++) out += readers[i]!(ctx) + literals[i + 1]!;
    return out;
  }
}

/**
 * In a JSON-shaped template (a `response_example` such as
 * `{"name": "{{request.headers.x-name}}"}`) each value is encoded for the
 * place it lands: escaped inside a string, quoted unless it is one JSON
 * value elsewhere. A header holding `bob", "admin": true` then stays inside
 * its string instead of adding a key (review L4). Other text is unchanged.
 */
function jsonSafe(literals: string[], readers: Reader[]): Reader[] {
  const holes = readers.length === 0 ? undefined : jsonHoles(literals);
  if (holes === undefined) return readers;
  return readers.map((read, i) => {
    const encode = jsonEncoder(holes[i] ?? 'value');
    return (ctx: Context) => encode(read(ctx));
  });
}

function warning(raw: string, reason: string, where: TemplateWhere | undefined): string {
  const at =
    where === undefined ? '' : ` (policy "${where.policy}", node "${where.node}", key "${where.key}")`;
  return `template reference ${raw} kept as literal text: ${reason}${at}`;
}
