import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from '../../core/context.js';
import { definePlugin } from '../../core/plugin.js';
import { RESTRICTION_OUTPUTS } from '../auth/shared.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The token wire form: base64 of `{"random","expires","sign"}`, `expires` being the issue time in seconds. */
interface TokenFields {
  random: string;
  expires: number;
  sign: string;
}

/**
 * Double-submit-cookie CSRF protection. Safe methods pass and receive a signed
 * token cookie; other methods must send the same token in the `name` header
 * and cookie, signed with `key` (HMAC-SHA256) and not older than `expires`.
 */
export const csrf = definePlugin({
  type: 'csrf',
  category: 'security',
  description:
    'Double-submit-cookie CSRF protection: unsafe methods must echo a signed token cookie in a header.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['key'],
    properties: {
      key: { type: 'string', minLength: 1, description: 'Secret that signs the tokens (HMAC-SHA256).' },
      expires: {
        type: 'integer',
        minimum: 0,
        default: 7200,
        description: 'Token lifetime in seconds; 0 = no expiry and a session cookie.',
      },
      name: {
        type: 'string',
        minLength: 1,
        pattern: "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$",
        default: 'featherbit-csrf-token',
        description: 'Cookie and request header that carry the token.',
      },
      phase: {
        type: 'string',
        enum: ['request', 'response'],
        default: 'request',
        description: 'request: check unsafe methods and issue the cookie; response: only issue the cookie.',
      },
    },
  },
  outputs: RESTRICTION_OUTPUTS,
  templated: [],
  readsResponseBody: () => false,
  create(config) {
    const secret = config.key;
    const lifetime = config.expires;
    const cookieName = config.name;
    const headerName = config.name.toLowerCase();
    const cookieTail = `; Path=/; SameSite=Lax${lifetime > 0 ? `; Max-Age=${lifetime}` : ''}`;
    const sign = (random: string, issued: number): string =>
      createHmac('sha256', secret).update(`${random}${issued}`).digest('hex');

    const issue = (ctx: Context): void => {
      const random = randomBytes(16).toString('hex');
      const issued = Math.floor(Date.now() / 1000);
      const fields: TokenFields = { random, expires: issued, sign: sign(random, issued) };
      const token = Buffer.from(JSON.stringify(fields)).toString('base64');
      const headers = ctx.response.headers;
      const cookie = `${cookieName}=${token}${cookieTail}`;
      const current = headers['set-cookie'];
      if (current === undefined) headers['set-cookie'] = [cookie];
      else if (Array.isArray(current)) current.push(cookie);
      else headers['set-cookie'] = [current, cookie];
    };

    const verify = (token: string): boolean => {
      let fields: Partial<TokenFields>;
      try {
        fields = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as Partial<TokenFields>;
      } catch {
        return false;
      }
      if (typeof fields !== 'object' || fields === null) return false;
      const { random, expires, sign: given } = fields;
      if (typeof random !== 'string' || typeof expires !== 'number' || typeof given !== 'string')
        return false;
      if (lifetime > 0 && Math.floor(Date.now() / 1000) - expires > lifetime) return false;
      const expected = Buffer.from(sign(random, expires), 'hex');
      const actual = Buffer.from(given, 'hex');
      return actual.length === expected.length && timingSafeEqual(actual, expected);
    };

    const deny = (ctx: Context, reason: string): 'denied' => {
      ctx.response.json(401, { error_msg: reason });
      return 'denied';
    };

    if (config.phase === 'response') {
      return {
        run(ctx) {
          issue(ctx);
          return 'success';
        },
      };
    }
    return {
      run(ctx) {
        if (!SAFE_METHODS.has(ctx.request.method)) {
          const headerToken = ctx.request.header(headerName) ?? '';
          if (headerToken === '') return deny(ctx, 'no csrf token in headers');
          const cookieToken = ctx.request.cookies.get(cookieName);
          if (cookieToken === undefined) return deny(ctx, 'no csrf cookie');
          if (headerToken !== cookieToken) return deny(ctx, 'csrf token mismatch');
          if (!verify(cookieToken)) return deny(ctx, 'Failed to verify the csrf token signature');
        }
        issue(ctx);
        return 'success';
      },
    };
  },
});
