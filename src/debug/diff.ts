import type { BodyCapture, ContextSnapshot } from './snapshot.js';

export type ChangeKind = 'added' | 'modified' | 'removed';

/** One field a node changed; values are rendered as text (lists joined by `, `). */
export interface Change {
  /** Dotted path a policy author recognises: `request.headers.x-user`, `message.tenant`, `errors[0]`. */
  path: string;
  kind: ChangeKind;
  before?: string;
  after?: string;
}

/**
 * What changed between two consecutive snapshots, in a fixed order (request
 * scalars, headers, query, body, response, message, errors) so lists are stable.
 */
export function diffSnapshots(before: ContextSnapshot, after: ContextSnapshot): Change[] {
  const out: Change[] = [];
  const req0 = before.request;
  const req1 = after.request;
  for (const key of ['method', 'path', 'host', 'scheme', 'protocol'] as const) {
    if (req0[key] !== req1[key]) out.push(modified(`request.${key}`, req0[key], req1[key]));
  }
  lists(out, 'request.headers', req0.headers, req1.headers);
  lists(out, 'request.query_params', req0.query_params, req1.query_params);
  body(out, 'request.body', req0.body, req1.body);
  const res0 = before.response;
  const res1 = after.response;
  if (res0.status_code !== res1.status_code) {
    out.push(modified('response.status_code', String(res0.status_code), String(res1.status_code)));
  }
  lists(out, 'response.headers', res0.headers, res1.headers);
  body(out, 'response.body', res0.body, res1.body);
  for (const [key, value] of Object.entries(after.message)) {
    const path = `message.${key}`;
    if (!(key in before.message)) out.push({ path, kind: 'added', after: text(value) });
    else if (!sameValue(before.message[key], value))
      out.push(modified(path, text(before.message[key]), text(value)));
  }
  for (const [key, value] of Object.entries(before.message)) {
    if (!(key in after.message)) out.push({ path: `message.${key}`, kind: 'removed', before: text(value) });
  }
  // The engine only appends errors.
  for (let i = before.errors.length; i < after.errors.length; i++) {
    const e = after.errors[i];
    if (e !== undefined) out.push({ path: `errors[${i}]`, kind: 'added', after: `${e.code}: ${e.message}` });
  }
  return out;
}

function modified(path: string, before: string, after: string): Change {
  return { path, kind: 'modified', before, after };
}

function lists(
  out: Change[],
  prefix: string,
  before: Record<string, string[]>,
  after: Record<string, string[]>,
): void {
  for (const [name, values] of Object.entries(after)) {
    const old = before[name];
    const path = `${prefix}.${name}`;
    if (old === undefined) out.push({ path, kind: 'added', after: values.join(', ') });
    else if (old.length !== values.length || old.some((v, i) => v !== values[i]))
      out.push(modified(path, old.join(', '), values.join(', ')));
  }
  for (const [name, values] of Object.entries(before)) {
    if (after[name] === undefined)
      out.push({ path: `${prefix}.${name}`, kind: 'removed', before: values.join(', ') });
  }
}

/**
 * Bodies compare by length and streaming state; when bodies are captured, a
 * snapshot carries text (or `binary`) only if its body differs from the
 * previous one, so that presence alone reports a same-length rewrite.
 */
function body(out: Change[], path: string, before: BodyCapture, after: BodyCapture): void {
  const describe = (b: BodyCapture) => (b.streamed === true ? 'streamed' : `${b.len} bytes`);
  const rewritten = after.text !== undefined || after.binary === true;
  if (before.len !== after.len || before.streamed !== after.streamed || rewritten) {
    out.push(modified(path, describe(before), describe(after)));
  }
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}
