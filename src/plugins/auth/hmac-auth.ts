import { createHmac, timingSafeEqual } from 'node:crypto';
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

/** Signature parameters, from `Authorization: Signature …` or the `X-HMAC-*` headers. */
interface SignatureParams {
  accessKey: string;
  algorithm: string | undefined;
  signature: string;
  signedHeaders: string[];
}

interface Secret {
  secret: string;
  consumer: ConsumerRecord | null;
}

const PROOF_HEADERS = ['x-hmac-access-key', 'x-hmac-algorithm', 'x-hmac-signed-headers', 'x-hmac-signature'];

function parseAuthorization(value: string): SignatureParams | undefined {
  const fields = new Map<string, string>();
  for (const part of value.slice('Signature '.length).split(',')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    fields.set(
      part.slice(0, eq).trim(),
      part
        .slice(eq + 1)
        .trim()
        .replace(/^"|"$/g, ''),
    );
  }
  const accessKey = fields.get('keyId');
  const signature = fields.get('signature');
  if (accessKey === undefined || signature === undefined) return undefined;
  return {
    accessKey,
    algorithm: fields.get('algorithm'),
    signature,
    signedHeaders: (fields.get('headers') ?? '').split(/\s+/).filter((h) => h !== ''),
  };
}

function signatureParams(ctx: Context): SignatureParams | undefined {
  const authorization = requestHeader(ctx, 'authorization');
  if (authorization?.startsWith('Signature ') === true) return parseAuthorization(authorization);
  const accessKey = requestHeader(ctx, 'x-hmac-access-key');
  const signature = requestHeader(ctx, 'x-hmac-signature');
  if (accessKey === undefined || signature === undefined) return undefined;
  return {
    accessKey,
    algorithm: requestHeader(ctx, 'x-hmac-algorithm'),
    signature,
    signedHeaders: (requestHeader(ctx, 'x-hmac-signed-headers') ?? '').split(/\s+/).filter((h) => h !== ''),
  };
}

/** Path plus the query as sorted `k=v` pairs: the canonical form clients sign for `@request-target`. */
function requestUri(ctx: Context): string {
  const pairs: [string, string][] = [];
  for (const [name, values] of ctx.request.query) for (const v of values) pairs.push([name, v]);
  if (pairs.length === 0) return ctx.request.path;
  pairs.sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return `${ctx.request.path}?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`;
}

/** The access key, then one `name: value` line per signed header, newline-terminated. */
export function signingString(ctx: Context, accessKey: string, signedHeaders: readonly string[]): string {
  const lines = [accessKey];
  for (const name of signedHeaders) {
    if (name === '@request-target') lines.push(`${ctx.request.method} ${requestUri(ctx)}`);
    else {
      const value = requestHeader(ctx, name.toLowerCase());
      if (value !== undefined) lines.push(`${name}: ${value}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/**
 * HMAC request signatures: the client signs a string built from the access
 * key and the headers it lists, with the secret key of that access key
 * (inline or a consumer's `hmac-auth: {access_key, secret_key}`).
 *
 * @example
 * ```yaml
 * - id: auth
 *   type: hmac-auth
 *   config: { use_consumers: true, signed_headers: [date] }
 * ```
 */
export const hmacAuth = definePlugin({
  type: 'hmac-auth',
  readsRequestBody: configReadsRequestBody,
  category: 'auth',
  description: 'Authenticate HMAC-signed requests (hmac-sha1/256/512) with a clock-skew check.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      use_consumers: { type: 'boolean', default: false },
      access_key: { type: 'string', minLength: 1 },
      secret_key: { type: 'string', minLength: 1 },
      algorithm: {
        type: 'string',
        enum: ['hmac-sha1', 'hmac-sha256', 'hmac-sha512'],
        default: 'hmac-sha256',
      },
      clock_skew: { type: 'integer', minimum: 0, default: 300 },
      signed_headers: { type: 'array', items: { type: 'string', minLength: 1 } },
      keep_headers: { type: 'boolean', default: false },
      hide_credentials: { type: 'boolean', default: false },
      anonymous_consumer: { type: 'string', minLength: 1 },
      realm: { type: 'string', default: 'hmac' },
    },
  },
  outputs: AUTH_OUTPUTS,
  create(config, env) {
    if (config.access_key === undefined && !config.use_consumers) {
      throw new ConfigError(
        '',
        "hmac-auth plugin requires 'access_key'+'secret_key' or 'use_consumers: true'",
      );
    }
    if (config.access_key !== undefined && config.secret_key === undefined) {
      throw new ConfigError('secret_key', "is required with 'access_key'");
    }
    if (config.access_key === undefined && config.secret_key !== undefined) {
      throw new ConfigError('access_key', "is required with 'secret_key'");
    }
    const secrets = new Map<string, Secret>();
    if (config.use_consumers) {
      for (const [accessKey, consumer] of env.consumers.credentialMap('hmac-auth', 'access_key')) {
        const secret = consumer.credentials['hmac-auth']?.['secret_key'];
        if (typeof secret === 'string') secrets.set(accessKey, { secret, consumer });
      }
    }
    // The inline credential wins over a consumer with the same access key.
    if (config.access_key !== undefined && config.secret_key !== undefined) {
      secrets.set(config.access_key, { secret: config.secret_key, consumer: null });
    }
    const digest = config.algorithm.slice('hmac-'.length);
    const required = (config.signed_headers ?? []).map((h) => h.toLowerCase());
    const skewMs = config.clock_skew * 1000;
    const anonymous = anonymousConsumer(config.anonymous_consumer, env.consumers);
    const challenge = `hmac realm=${quoteRealm(config.realm)}`;

    const deny = (ctx: Context, message: string): 'success' | 'denied' => {
      if (anonymous === undefined) return unauthorized(ctx, message, challenge);
      attachConsumer(ctx, anonymous, 'hmac-auth');
      return 'success';
    };

    /** Algorithm, Date and required headers: checks that need no secret. Returns a denial reason. */
    const precheck = (ctx: Context, params: SignatureParams): string | undefined => {
      if (params.algorithm !== undefined && params.algorithm !== config.algorithm) return 'Invalid algorithm';
      if (skewMs > 0) {
        const date = requestHeader(ctx, 'date');
        if (date === undefined) return 'Date header missing, failed to validate clock skew';
        const at = Date.parse(date);
        if (Number.isNaN(at)) return 'Invalid GMT format time';
        if (Math.abs(Date.now() - at) > skewMs) return 'Clock skew exceeded';
      }
      const signed = new Set(params.signedHeaders.map((h) => h.toLowerCase()));
      for (const name of required)
        if (!signed.has(name)) return `expected header "${name}" missing in signing`;
      return undefined;
    };

    const verify = (ctx: Context, params: SignatureParams, secret: string): boolean => {
      const presented = Buffer.from(params.signature, 'base64');
      const expected = createHmac(digest, secret)
        .update(signingString(ctx, params.accessKey, params.signedHeaders))
        .digest();
      return presented.length === expected.length && timingSafeEqual(presented, expected);
    };

    return {
      run(ctx) {
        const params = signatureParams(ctx);
        if (params === undefined) return deny(ctx, "client request can't be validated");
        const problem = precheck(ctx, params);
        if (problem !== undefined) return deny(ctx, problem);
        const entry = secrets.get(params.accessKey);
        if (entry === undefined) return deny(ctx, 'Invalid access key');
        if (!verify(ctx, params, entry.secret)) return deny(ctx, 'Invalid signature');
        const headers = ctx.request.headers;
        if (!config.keep_headers) for (const name of PROOF_HEADERS) delete headers[name];
        if (config.hide_credentials) delete headers['authorization'];
        if (entry.consumer !== null) attachConsumer(ctx, entry.consumer, 'hmac-auth');
        return 'success';
      },
    };
  },
});
