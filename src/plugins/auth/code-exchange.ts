import { serializeQuery, type Context } from '../../core/context.js';
import {
  resolveSessionSettings,
  sessionSchemaProperties,
  Sessions,
  type Session,
  type SessionConfig,
} from '../../sessions/index.js';
import { ConfigError, type JsonSchema, type NodeInstance, type PluginEnv } from '../../core/plugin.js';
import type { INTERACTIVE_OUTPUTS } from './cas-auth.js';
import { asObject, attachIdentity } from './provider-client.js';
import { redirectTo, unauthorized } from './shared.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';

/** Keys shared by the messaging-platform logins (dingtalk-auth, feishu-auth). */
export interface CodeExchangeConfig extends SessionConfig {
  code_header: string;
  code_query: string;
  access_token_url: string;
  userinfo_url: string;
  set_userinfo_header: boolean;
  timeout: number;
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  redirect_uri?: string;
}

type Port = keyof typeof INTERACTIVE_OUTPUTS;

/** APISIX's `cookie_expires_in` default for these two plugins (not the 3600 s of the other session plugins). */
const SESSION_LIFETIME = 86400;

/** Schema properties of {@link CodeExchangeConfig}, with the platform's defaults. */
export function codeExchangeProperties(defaults: {
  codeHeader: string;
  accessTokenUrl: string;
  userinfoUrl: string;
}): Record<string, JsonSchema> {
  return {
    code_header: { type: 'string', minLength: 1, default: defaults.codeHeader },
    code_query: { type: 'string', minLength: 1, default: 'code' },
    access_token_url: { type: 'string', minLength: 1, default: defaults.accessTokenUrl },
    userinfo_url: { type: 'string', minLength: 1, default: defaults.userinfoUrl },
    set_userinfo_header: { type: 'boolean', default: true, description: 'Send X-Userinfo upstream.' },
    timeout: { type: 'integer', minimum: 1, default: 6000, description: 'Deadline per callout (ms).' },
    ssl_verify: { type: 'boolean', default: true },
    tls: calloutTlsSchema,
    redirect_uri: {
      type: 'string',
      minLength: 1,
      description: 'Session mode: where a browser with neither session nor code is sent.',
    },
    ...sessionSchemaProperties,
  };
}

/** One messaging platform's code exchange, as the shared login flow drives it. */
export interface PlatformLogin {
  /** Plugin type: binds sealed sessions, and is the consumer's `auth_type`. */
  type: string;
  /** Platform name for messages: `DingTalk`, `Feishu`. */
  platform: string;
  /** The app's id: a session opens only for the app that made it. */
  app: string;
  /** `message.<key>` holding the user info object. */
  messageKey: string;
  userIdOf(info: Record<string, unknown>): string | undefined;
  /** The platform's user info for `code`, or a denial message; rejects with the provider failure. */
  resolve(ctx: Context, code: string): Promise<Record<string, unknown> | string>;
  close(): void;
}

/**
 * The node of a code-exchange login. Stateless (no session secret): every
 * request brings a code (header, then query) that is resolved to the user.
 * Session mode: a valid session passes without any callout; a code is
 * resolved, sealed into a session and the browser sent back to the same URL
 * without the code; neither is a redirect to `redirect_uri`.
 */
export function codeExchangeNode(
  config: CodeExchangeConfig,
  env: PluginEnv,
  login: PlatformLogin,
): NodeInstance<Port> {
  const nestedLifetime = config.session?.cookie?.lifetime;
  const settings = resolveSessionSettings(
    config.session_cookie_lifetime === undefined && nestedLifetime === undefined
      ? { ...config, session_cookie_lifetime: SESSION_LIFETIME }
      : config,
    env,
    `${login.type.replace(/-auth$/, '')}_session`,
  );
  const missing = `Missing ${login.platform} authorization code`;
  const code = (ctx: Context): string | undefined => {
    const fromHeader = ctx.request.header(config.code_header);
    if (fromHeader !== undefined && fromHeader !== '') return fromHeader;
    const fromQuery = ctx.request.query.get(config.code_query)?.[0];
    return fromQuery === undefined || fromQuery === '' ? undefined : fromQuery;
  };
  const attach = (ctx: Context, info: Record<string, unknown>): 'success' => {
    ctx.message[login.messageKey] = info;
    const userId = login.userIdOf(info);
    if (userId !== undefined) {
      ctx.message['user_id'] = userId;
      attachIdentity(ctx, userId, login.type);
    }
    if (config.set_userinfo_header) {
      ctx.request.headers['x-userinfo'] = Buffer.from(JSON.stringify(info)).toString('base64');
    }
    return 'success';
  };

  if (settings === undefined) {
    if (config.redirect_uri !== undefined) {
      env.warn('redirect_uri', 'has no effect without a session secret (stateless mode)');
    }
    return {
      async run(ctx) {
        // Never let a client-supplied X-Userinfo reach the upstream.
        delete ctx.request.headers['x-userinfo'];
        const found = code(ctx);
        if (found === undefined) return unauthorized(ctx, missing);
        const fromQuery = (ctx.request.header(config.code_header) ?? '') === '';
        const info = await login.resolve(ctx, found);
        if (typeof info === 'string') return unauthorized(ctx, info);
        // The one-time code (and its OAuth `state`) is spent: forward every other parameter.
        if (fromQuery) ctx.request.dropQueryParams(config.code_query, 'state');
        return attach(ctx, info);
      },
      close: () => login.close(),
    };
  }

  const redirectUri = config.redirect_uri;
  if (redirectUri === undefined) {
    throw new ConfigError('redirect_uri', 'is required when a session secret is set (session mode)');
  }
  const sessions = new Sessions(settings, login.type);

  const signIn = async (ctx: Context): Promise<Port> => {
    const found = code(ctx);
    if (found === undefined) return redirectTo(ctx, redirectUri);
    const info = await login.resolve(ctx, found);
    if (typeof info === 'string') return unauthorized(ctx, info);
    await sessions.establish(ctx, login.userIdOf(info) ?? '', { app: login.app, info });
    // Back to the same page without the code: the next request carries the session instead.
    const query = new Map(ctx.request.query);
    query.delete(config.code_query);
    const rest = serializeQuery(query);
    return redirectTo(ctx, rest === '' ? ctx.request.path : `${ctx.request.path}?${rest}`);
  };

  const afterSession = (ctx: Context, session: Session | undefined): Port | Promise<Port> => {
    const info = asObject(session?.data['info']);
    return info !== undefined && session?.data['app'] === login.app ? attach(ctx, info) : signIn(ctx);
  };

  return {
    run(ctx) {
      delete ctx.request.headers['x-userinfo'];
      const session = sessions.open(ctx);
      return session instanceof Promise
        ? session.then((found) => afterSession(ctx, found))
        : afterSession(ctx, session);
    },
    close: () => login.close(),
  };
}
