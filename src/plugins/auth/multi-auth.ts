import type { Context, HeaderMap } from '../../core/context.js';
import { validateAgainst } from '../../config/schema-validate.js';
import {
  ConfigError,
  definePlugin,
  type NodeInstance,
  type PluginDefinition,
  type PluginEnv,
} from '../../core/plugin.js';
import { basicAuth } from './basic-auth.js';
import { hmacAuth } from './hmac-auth.js';
import { jweDecrypt } from './jwe-decrypt.js';
import { jwtAuth } from './jwt-auth.js';
import { keyAuth } from './key-auth.js';
import { AUTH_OUTPUTS, unauthorized } from './shared.js';

type Outcome = 'success' | 'denied';
type Attempt = NodeInstance<string>;

/** The credential plugins that may be combined; each keeps the request untouched when it denies. */
const CANDIDATES = new Map<string, PluginDefinition<never, string>>(
  [keyAuth, basicAuth, jwtAuth, hmacAuth, jweDecrypt].map((d) => [
    d.type,
    d as PluginDefinition<never, string>,
  ]),
);

interface Snapshot {
  status: number;
  headers: HeaderMap;
  body: Buffer | null;
}

function snapshot(ctx: Context): Snapshot {
  const res = ctx.response;
  return { status: res.status, headers: { ...res.headers }, body: res.body };
}

/** Undoes a losing attempt's prepared 401, keeping its challenge for the final answer. */
function restore(ctx: Context, saved: Snapshot, challenges: string[]): void {
  const challenge = ctx.response.headers['www-authenticate'];
  if (typeof challenge === 'string' && !challenges.includes(challenge)) challenges.push(challenge);
  ctx.response.status = saved.status;
  ctx.response.headers = { ...saved.headers };
  ctx.response.body = saved.body;
}

function build(entry: Record<string, unknown>, index: number, env: PluginEnv): Attempt {
  const [type, raw] = Object.entries(entry)[0] ?? ['', {}];
  const where = `auth_plugins[${index}].${type}`;
  const def = CANDIDATES.get(type);
  if (def === undefined) {
    throw new ConfigError(
      `auth_plugins[${index}]`,
      `'${type}' cannot be used here (one of: ${[...CANDIDATES.keys()].join(', ')})`,
    );
  }
  const config: unknown = structuredClone(raw ?? {});
  const issue = validateAgainst(def.schema, config, where)[0];
  if (issue !== undefined) throw new ConfigError(issue.path, issue.message);
  const subEnv: PluginEnv = {
    ...env,
    nodeId: `${env.nodeId}/${type}`,
    warn: (key, message) => env.warn(`${where}.${key}`, message),
  };
  try {
    return def.create(config as never, subEnv);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new ConfigError(err.path === '' ? where : `${where}.${err.path}`, err.message);
  }
}

/**
 * Tries credential auth plugins in order; the first success wins. A denial or
 * a failure of one attempt only moves on to the next. When all fail, a 401
 * carries every challenge the attempts offered.
 *
 * @example
 * ```yaml
 * - id: auth
 *   type: multi-auth
 *   config:
 *     auth_plugins:
 *       - key-auth: { use_consumers: true }
 *       - basic-auth: { use_consumers: true }
 * ```
 */
export const multiAuth = definePlugin({
  type: 'multi-auth',
  category: 'auth',
  description: 'Try several credential auth plugins in order; the first that succeeds wins.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['auth_plugins'],
    properties: {
      auth_plugins: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          minProperties: 1,
          maxProperties: 1,
          additionalProperties: { type: 'object' },
        },
      },
    },
  },
  outputs: AUTH_OUTPUTS,
  create(config, env) {
    const attempts = config.auth_plugins.map((entry, index) => build(entry, index, env));

    const fail = (ctx: Context, challenges: string[]): 'denied' => {
      unauthorized(ctx, 'Authorization Failed');
      if (challenges.length === 1) ctx.response.headers['www-authenticate'] = challenges[0];
      else if (challenges.length > 1) ctx.response.headers['www-authenticate'] = challenges;
      return 'denied';
    };

    const settle = async (
      ctx: Context,
      pending: Promise<string>,
      from: number,
      saved: Snapshot,
      challenges: string[],
    ) => {
      let port: string;
      try {
        port = await pending;
      } catch {
        port = 'error';
      }
      if (port === 'success') return 'success';
      restore(ctx, saved, challenges);
      for (let i = from + 1; i < attempts.length; i++) {
        try {
          if ((await attempts[i]!.run(ctx)) === 'success') return 'success';
        } catch {
          // A failing attempt is a failed attempt; multi-auth itself never errors.
        }
        restore(ctx, saved, challenges);
      }
      return fail(ctx, challenges);
    };

    return {
      run(ctx): Outcome | Promise<Outcome> {
        const saved = snapshot(ctx);
        const challenges: string[] = [];
        for (let i = 0; i < attempts.length; i++) {
          let port: string | Promise<string>;
          try {
            port = attempts[i]!.run(ctx);
          } catch {
            port = 'error';
          }
          if (typeof port !== 'string') return settle(ctx, port, i, saved, challenges);
          if (port === 'success') return 'success';
          restore(ctx, saved, challenges);
        }
        return fail(ctx, challenges);
      },
    };
  },
});
