import type { Context } from '../../../core/context.js';
import { compileLegacy } from '../../../template/legacy.js';
import { jsonEncoder, jsonHoles } from '../../../template/json-context.js';
import type { PluginEnv, TemplateOptions } from '../../../core/plugin.js';

/**
 * body-transformer's own template dialect, separate from the gateway
 * templates: `{{body}}` and `{{body.a.0.b}}` read the parsed input body,
 * `{{$var}}` reads a legacy variable, and `$var` works in the text between
 * placeholders. Any other placeholder (`{{request.method}}` included) renders
 * empty.
 */
export type BodyRender = (ctx: Context, body: unknown) => string;

type Piece = (ctx: Context, body: unknown) => string;

/** Thrown at compile time for an unclosed `{{`. */
export class DialectError extends Error {}

export function compileDialect(
  source: string,
  key: string,
  env: PluginEnv,
  phase: NonNullable<TemplateOptions['phase']>,
): BodyRender {
  // Text between holes, and the holes: placeholders and the `$var`s of the text.
  const literals: string[] = [''];
  const holes: Piece[] = [];
  const hole = (piece: Piece): void => {
    holes.push(piece);
    literals.push('');
  };
  const literal = (text: string): void => {
    for (const part of compileLegacy(text, phase)) {
      if (typeof part === 'string') literals[literals.length - 1] += part;
      else hole((ctx) => part(ctx));
    }
  };
  let pos = 0;
  for (;;) {
    const open = source.indexOf('{{', pos);
    if (open === -1) break;
    const close = source.indexOf('}}', open + 2);
    if (close === -1) throw new DialectError(`unclosed '{{' at offset ${open}`);
    literal(source.slice(pos, open));
    hole(placeholder(source.slice(open + 2, close).trim(), key, env, phase));
    pos = close + 2;
  }
  literal(source.slice(pos));
  // A JSON template encodes each value for its place, so body data cannot add keys (review L4).
  const kinds = jsonHoles(literals);
  const pieces =
    kinds === undefined
      ? holes
      : holes.map((piece, i): Piece => {
          const encode = jsonEncoder(kinds[i] ?? 'value');
          return (ctx, body) => encode(piece(ctx, body));
        });
  return (ctx, body) => {
    let out = literals[0] ?? '';
    for (let i = 0; i < pieces.length; i++) out += (pieces[i] as Piece)(ctx, body) + (literals[i + 1] ?? '');
    return out;
  };
}

function placeholder(
  expr: string,
  key: string,
  env: PluginEnv,
  phase: NonNullable<TemplateOptions['phase']>,
): Piece {
  if (expr === 'body') return (_ctx, body) => stringify(body);
  if (expr.startsWith('body.')) {
    const path = expr.slice(5).split('.');
    return (_ctx, body) => stringify(lookup(body, path));
  }
  if (/^\$[A-Za-z_][A-Za-z0-9_.-]*$/.test(expr)) {
    const variable = env.template(`\${${expr.slice(1)}}`, key, { legacy: true, phase });
    return (ctx) => variable.render(ctx);
  }
  return () => '';
}

function lookup(value: unknown, path: string[]): unknown {
  let node = value;
  for (const segment of path) {
    if (Array.isArray(node)) node = /^\d+$/.test(segment) ? (node as unknown[])[Number(segment)] : undefined;
    else if (typeof node === 'object' && node !== null && Object.hasOwn(node, segment)) {
      node = (node as Record<string, unknown>)[segment];
    } else return undefined;
  }
  return node;
}

/** Strings raw, numbers and booleans as text, null and missing as '', containers as compact JSON. */
function stringify(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value) ?? '';
}
