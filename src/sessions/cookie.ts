import type { Context } from '../core/context.js';

export interface CookieSettings {
  name: string;
  path: string;
  /** Seconds; also the expiry of the sealed payload. */
  lifetime: number;
}

/** RFC 6265 cookie-name token characters. */
export const COOKIE_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** docs/sessions.md#cookie: `Path`, `HttpOnly`, `SameSite=Lax`, `Max-Age`; `Secure` only over https. */
export function sessionCookie(
  ctx: Context,
  cookie: CookieSettings,
  value: string,
  maxAge = cookie.lifetime,
): string {
  const secure = ctx.request.scheme === 'https' ? '; Secure' : '';
  return `${cookie.name}=${value}; Path=${cookie.path}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure}`;
}

/** Adds a `Set-Cookie` to the prepared response, keeping any already there. */
export function appendSetCookie(ctx: Context, header: string): void {
  const headers = ctx.response.headers;
  const current = headers['set-cookie'];
  if (current === undefined) headers['set-cookie'] = [header];
  else headers['set-cookie'] = Array.isArray(current) ? [...current, header] : [current, header];
}
