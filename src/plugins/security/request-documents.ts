/** The shapes of a request that the validation plugins hand to JSON Schema. */
import { parseQuery, type Context } from '../../core/context.js';

/** `{name: first value}` with the lowercase names the context already holds. */
export function headerDocument(ctx: Context): Record<string, string> {
  const out: Record<string, string> = {};
  const headers = ctx.request.headers;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    const first = typeof value === 'string' ? value : value[0];
    if (first !== undefined) out[name] = first;
  }
  return out;
}

/** A form-urlencoded body as a flat object: one value as a string, a repeated field as a list. */
export function formDocument(body: Buffer): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, values] of parseQuery(body.toString('utf8'))) {
    out[name] = values.length === 1 ? values[0]! : values;
  }
  return out;
}

/** The request's media type, lowercased and without parameters ('' when absent). */
export function mediaType(ctx: Context): string {
  const type = ctx.request.header('content-type');
  if (type === undefined) return '';
  const semi = type.indexOf(';');
  return (semi === -1 ? type : type.slice(0, semi)).trim().toLowerCase();
}

export const FORM_TYPE = 'application/x-www-form-urlencoded';

/** `application/json` and the structured-syntax `+json` types. */
export function isJsonType(type: string): boolean {
  return type === 'application/json' || type.endsWith('+json');
}
