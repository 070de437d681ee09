import { compactDecrypt, decodeProtectedHeader, errors as joseErrors } from 'jose';
import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin, type ConsumerRecord } from '../../core/plugin.js';
import { attachConsumer, AUTH_OUTPUTS, requestHeader, unauthorized } from './shared.js';
import { configReadsRequestBody } from '../request-body-refs.js';

interface ConsumerKey {
  key: Uint8Array;
  consumer: ConsumerRecord;
}

const KEY_BYTES = 32;
const DECRYPT_OPTIONS = { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] };
/** What Node accepts in a header value; anything else would fail the upstream request later. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Node's base64 decoder takes both alphabets, padded or not. */
function aesKey(text: string, base64: boolean, what: string): Uint8Array {
  const bytes = base64 ? Buffer.from(text, 'base64') : Buffer.from(text, 'utf8');
  if (bytes.length !== KEY_BYTES) {
    throw new Error(`${what} must be ${KEY_BYTES} bytes for A256GCM (got ${bytes.length})`);
  }
  return new Uint8Array(bytes);
}

function reason(err: unknown): string {
  if (err instanceof joseErrors.JOSEAlgNotAllowed || err instanceof joseErrors.JOSENotSupported) {
    return 'unsupported JWE alg/enc (only dir + A256GCM supported)';
  }
  if (err instanceof joseErrors.JWEDecryptionFailed) return 'JWE decryption failed';
  return 'malformed JWE token';
}

/**
 * Decrypts a compact JWE (`dir` + `A256GCM`) from a request header and
 * forwards the plaintext in another header. The key is inline or, with
 * `use_consumers`, the `jwe-decrypt` credential whose `key` equals the token's `kid`.
 *
 * @example
 * ```yaml
 * - id: jwe
 *   type: jwe-decrypt
 *   config: { key: ${JWE_KEY_BASE64}, forward_header: x-token }
 * ```
 */
export const jweDecrypt = definePlugin({
  type: 'jwe-decrypt',
  readsRequestBody: configReadsRequestBody,
  category: 'auth',
  description: 'Decrypt a JWE (dir + A256GCM) from a header and forward the plaintext in another header.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      header: { type: 'string', minLength: 1, default: 'Authorization' },
      forward_header: { type: 'string', minLength: 1, default: 'Authorization' },
      strict: { type: 'boolean', default: true },
      key: { type: 'string', minLength: 1 },
      use_consumers: { type: 'boolean', default: false },
      alg: { type: 'string', enum: ['dir'], default: 'dir' },
      enc: { type: 'string', enum: ['A256GCM'], default: 'A256GCM' },
    },
  },
  outputs: AUTH_OUTPUTS,
  create(config, env) {
    if (config.key === undefined && !config.use_consumers) {
      throw new ConfigError('', "jwe-decrypt plugin requires 'key' or 'use_consumers: true'");
    }
    let inline: Uint8Array | undefined;
    if (config.key !== undefined) {
      try {
        inline = aesKey(config.key, true, 'the base64-decoded key');
      } catch (err) {
        throw new ConfigError('key', (err as Error).message);
      }
    }
    const byKid = new Map<string, ConsumerKey>();
    if (config.use_consumers) {
      for (const [kid, consumer] of env.consumers.credentialMap('jwe-decrypt', 'key')) {
        const credential = consumer.credentials['jwe-decrypt'] ?? {};
        const secret = typeof credential['secret'] === 'string' ? credential['secret'] : '';
        try {
          byKid.set(kid, {
            key: aesKey(secret, credential['is_base64_encoded'] === true, 'secret'),
            consumer,
          });
        } catch (err) {
          throw new ConfigError(
            'use_consumers',
            `consumer '${consumer.name}': jwe-decrypt ${(err as Error).message}`,
          );
        }
      }
    }
    const header = config.header.toLowerCase();
    const forward = config.forward_header.toLowerCase();

    /** The consumer key named by `kid`, else the inline key; a string is the denial reason. */
    const keyFor = (token: string): ConsumerKey | Uint8Array | string => {
      if (config.use_consumers) {
        let kid: unknown;
        try {
          kid = decodeProtectedHeader(token).kid;
        } catch {
          return 'malformed JWE token';
        }
        const entry = typeof kid === 'string' ? byKid.get(kid) : undefined;
        if (entry !== undefined) return entry;
        if (inline === undefined)
          return typeof kid === 'string' ? 'invalid kid in JWE token' : 'missing kid in JWE token';
      }
      return inline ?? 'no key for JWE token';
    };

    return {
      async run(ctx: Context) {
        const raw = requestHeader(ctx, header);
        if (raw === undefined || raw === '') {
          return config.strict ? unauthorized(ctx, 'missing JWE token in request') : 'success';
        }
        const token =
          raw.length > 7 && raw.slice(0, 7).toLowerCase() === 'bearer ' ? raw.slice(7).trim() : raw;
        const key = keyFor(token);
        if (typeof key === 'string') return unauthorized(ctx, key);
        let plaintext: string;
        try {
          const { plaintext: bytes } = await compactDecrypt(
            token,
            key instanceof Uint8Array ? key : key.key,
            DECRYPT_OPTIONS,
          );
          plaintext = Buffer.from(bytes).toString('utf8');
        } catch (err) {
          return unauthorized(ctx, reason(err));
        }
        if (!HEADER_VALUE.test(plaintext))
          return unauthorized(ctx, 'JWE payload is not a valid header value');
        ctx.request.headers[forward] = plaintext;
        if (!(key instanceof Uint8Array)) attachConsumer(ctx, key.consumer, 'jwe-decrypt');
        return 'success';
      },
    };
  },
});
