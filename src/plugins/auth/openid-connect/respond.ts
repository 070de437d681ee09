import type { Context } from '../../../core/context.js';

/** A 302 the browser must follow (login, callback, logout); never cached. */
export function redirect(ctx: Context, location: string): 'redirect' {
  const res = ctx.response;
  res.discardStream();
  res.status = 302;
  res.headers['location'] = location;
  res.headers['cache-control'] = 'no-store';
  res.setBody('');
  return 'redirect';
}

/** docs/plugins/openid-connect.md denial: 401, a Bearer challenge and the `unauthorized` body. */
export function denied(ctx: Context, message: string): 'denied' {
  const res = ctx.response;
  res.discardStream();
  res.json(401, { error: 'unauthorized', message });
  res.headers['www-authenticate'] = 'Bearer error="invalid_token"';
  return 'denied';
}
