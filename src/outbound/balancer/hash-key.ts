import type { Context } from '../../core/context.js';
import type { HashKey } from './chash.js';

/** The `hash_on` variables, for messages and docs. */
export const HASH_ON_VARIABLES = [
  'remote_addr',
  'uri',
  'request_uri',
  'host',
  'consumer_name',
  'http_<name>',
  'arg_<name>',
  'cookie_<name>',
] as const;

const NAME = /^[A-Za-z0-9_-]+$/;

const FIXED: Readonly<Record<string, HashKey>> = {
  remote_addr: (ctx) => ctx.request.remoteAddress,
  uri: (ctx) => orClientIp(ctx, ctx.request.path),
  request_uri: (ctx) => orClientIp(ctx, ctx.request.url),
  host: (ctx) => orClientIp(ctx, ctx.request.host),
  consumer_name: (ctx) => orClientIp(ctx, ctx.consumer?.name),
};

/**
 * Compiles a `hash_on` variable (nginx names, optional `$`) into a key reader,
 * or returns null when the variable is not supported. A request without the
 * variable (no such header, cookie or argument) hashes on the client IP, so
 * such clients still spread over the targets.
 */
export function compileHashKey(variable: string): HashKey | null {
  const name = variable.startsWith('$') ? variable.slice(1) : variable;
  const fixed = FIXED[name];
  if (fixed !== undefined) return fixed;
  const sep = name.indexOf('_');
  if (sep === -1) return null;
  const prefix = name.slice(0, sep);
  const rest = name.slice(sep + 1);
  if (!NAME.test(rest)) return null;
  switch (prefix) {
    case 'http': {
      // nginx: $http_x_user_id reads X-User-Id.
      const header = rest.toLowerCase().replaceAll('_', '-');
      return (ctx) => orClientIp(ctx, firstOf(ctx.request.headers[header]));
    }
    case 'arg':
      return (ctx) => orClientIp(ctx, ctx.request.query.get(rest)?.[0]);
    case 'cookie':
      return (ctx) => orClientIp(ctx, ctx.request.cookies.get(rest));
    default:
      return null;
  }
}

function orClientIp(ctx: Context, value: string | undefined): string {
  return value === undefined || value === '' ? ctx.request.remoteAddress : value;
}

function firstOf(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : value?.[0];
}
