import type { Context, RequestInit } from '../../src/core/context.js';
import { compileCondition } from '../../src/conditions/index.js';
import { requestContext } from '../support/plugin-env.js';

/** Compiles `expr` under the key `conditions` and evaluates it once. */
export function holds(expr: unknown, ctx: Context): boolean {
  return compileCondition(expr, 'conditions').evaluate(ctx);
}

/** A request whose body is `body` serialized as JSON (or sent as is when a string). */
export function jsonRequest(body: unknown, init: Partial<RequestInit> = {}): Context {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return requestContext({
    method: 'POST',
    headers: { host: 'gateway.test', 'content-type': 'application/json' },
    body: Buffer.from(text),
    ...init,
  });
}

/** A context whose response body is `body` serialized as JSON. */
export function jsonResponse(body: unknown): Context {
  const ctx = requestContext();
  ctx.response.status = 200;
  ctx.response.setBody(typeof body === 'string' ? body : JSON.stringify(body), 'application/json');
  return ctx;
}
