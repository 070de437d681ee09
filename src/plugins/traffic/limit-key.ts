import type { Context } from '../../core/context.js';
import type { PluginEnv } from '../../core/plugin.js';

export type KeyType = 'var' | 'var_combination' | 'constant';

export const keyTypeSchema = {
  type: 'string',
  enum: ['var', 'var_combination', 'constant'],
  default: 'var',
  description:
    "How `key` is read: 'var' (one variable; a bare name such as remote_addr means $remote_addr), 'var_combination' (a template of several), 'constant' (literal text, one counter for everyone).",
} as const;

const BARE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Compiles the `key` of a limit node once: a legacy `$var` field (docs/templates.md,
 * fifteen groups) that also accepts `{{…}}`. An empty rendering falls back to
 * the client IP, as in APISIX, so a missing header never pools every client
 * into one counter.
 */
export function compileLimitKey(
  env: PluginEnv,
  key: string | undefined,
  keyType: KeyType,
  path: string,
): (ctx: Context) => string {
  const text = key ?? '$remote_addr';
  if (keyType === 'constant') return (ctx) => (text === '' ? ctx.request.remoteAddress : text);
  // APISIX writes `key: remote_addr` with key_type var: the name of one variable.
  const source = keyType === 'var' && BARE_NAME.test(text) ? `$${text}` : text;
  const template = env.template(source, path, { legacy: true });
  return (ctx) => {
    const rendered = template.render(ctx);
    return rendered === '' ? ctx.request.remoteAddress : rendered;
  };
}
