import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin, type ConsumerRecord } from '../../core/plugin.js';
import {
  anonymousConsumer,
  attachConsumer,
  AUTH_OUTPUTS,
  quoteRealm,
  requestHeader,
  unauthorized,
} from './shared.js';
import { configReadsRequestBody } from '../request-body-refs.js';

type UsersConfig = Record<string, string> | { username?: string; password?: string }[];

interface Account {
  /** SHA-256 of the password: equal-length buffers for a constant-time comparison. */
  digest: Buffer;
  consumer: ConsumerRecord | null;
}

function digest(password: string): Buffer {
  return createHash('sha256').update(password, 'utf8').digest();
}

/** Both `users` shapes: a map `{alice: s3cret}` or the editor's `[{username, password}]`. */
function inlineUsers(users: UsersConfig | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (users === undefined) return out;
  if (!Array.isArray(users)) {
    for (const [username, password] of Object.entries(users)) out.set(username, password);
    return out;
  }
  users.forEach((entry, index) => {
    const username = entry.username ?? '';
    if (username.trim() === '') return; // a blank row left in the editor
    if (out.has(username))
      throw new ConfigError(`users[${index}].username`, `duplicate username '${username}'`);
    out.set(username, entry.password ?? '');
  });
  return out;
}

/** `Authorization: Basic base64(user:pass)` → [user, pass], or undefined when absent or malformed. */
function credentials(ctx: Context): [string, string] | undefined {
  const header = requestHeader(ctx, 'authorization');
  if (header === undefined || header.length < 6 || header.slice(0, 6).toLowerCase() !== 'basic ')
    return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 ? undefined : [decoded.slice(0, colon), decoded.slice(colon + 1)];
}

/**
 * HTTP Basic authentication against inline `users` and/or consumers'
 * `basic-auth: {username, password}`. Inline users are checked first.
 *
 * @example
 * ```yaml
 * - id: auth
 *   type: basic-auth
 *   config:
 *     realm: internal
 *     users: [{ username: alice, password: s3cret }]
 * ```
 */
export const basicAuth = definePlugin({
  type: 'basic-auth',
  readsRequestBody: configReadsRequestBody,
  category: 'auth',
  description: 'HTTP Basic authentication against inline users and/or consumers.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      users: {
        anyOf: [
          { type: 'object', additionalProperties: { type: 'string' } },
          {
            type: 'array',
            items: {
              type: 'object',
              additionalProperties: false,
              properties: { username: { type: 'string' }, password: { type: 'string' } },
            },
          },
        ],
      },
      use_consumers: { type: 'boolean', default: false },
      anonymous_consumer: { type: 'string', minLength: 1 },
      hide_credentials: { type: 'boolean', default: false },
      realm: { type: 'string', default: 'gateway' },
    },
  },
  outputs: AUTH_OUTPUTS,
  create(config, env) {
    const users = inlineUsers(config.users);
    if (users.size === 0 && !config.use_consumers) {
      throw new ConfigError('', "basic-auth plugin requires 'users' or 'use_consumers: true'");
    }
    const inline = new Map<string, Account>();
    for (const [username, password] of users)
      inline.set(username, { digest: digest(password), consumer: null });
    const fromConsumers = new Map<string, Account>();
    if (config.use_consumers) {
      for (const [username, consumer] of env.consumers.credentialMap('basic-auth', 'username')) {
        const password = consumer.credentials['basic-auth']?.['password'];
        fromConsumers.set(username, {
          digest: digest(typeof password === 'string' ? password : ''),
          consumer,
        });
      }
    }
    const anonymous = anonymousConsumer(config.anonymous_consumer, env.consumers);
    const challenge = `Basic realm=${quoteRealm(config.realm)}`;
    const hide = config.hide_credentials;

    const verify = (
      table: Map<string, Account>,
      username: string,
      presented: Buffer,
    ): Account | undefined => {
      const account = table.get(username);
      return account !== undefined && timingSafeEqual(account.digest, presented) ? account : undefined;
    };

    return {
      run(ctx) {
        const pair = credentials(ctx);
        if (pair !== undefined) {
          const [username, password] = pair;
          const presented = digest(password);
          const account = verify(inline, username, presented) ?? verify(fromConsumers, username, presented);
          if (account !== undefined) {
            if (hide) delete ctx.request.headers['authorization'];
            if (account.consumer !== null) attachConsumer(ctx, account.consumer, 'basic-auth');
            ctx.message['user'] = username;
            return 'success';
          }
        }
        if (anonymous !== undefined) {
          attachConsumer(ctx, anonymous, 'basic-auth');
          ctx.message['user'] = anonymous.name;
          return 'success';
        }
        return unauthorized(ctx, 'Invalid credentials', challenge);
      },
    };
  },
});
