import { randomBytes, randomUUID } from 'node:crypto';
import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { mentionsResponseBody } from '../response-body-refs.js';
import { configReadsRequestBody } from '../request-body-refs.js';

const NANOID_ALPHABET = 'useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict';
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const POOL_SIZE = 4096;

/** Random bytes drawn from one refilled pool, so an id costs no syscall. */
class BytePool {
  #pool = Buffer.alloc(0);
  #offset = 0;

  take(n: number): Buffer {
    if (this.#offset + n > this.#pool.length) {
      this.#pool = randomBytes(Math.max(POOL_SIZE, n));
      this.#offset = 0;
    }
    const out = this.#pool.subarray(this.#offset, this.#offset + n);
    this.#offset += n;
    return out;
  }
}

/** Ids of `length` characters of `alphabet`, uniform: bytes past the largest multiple are rejected. */
function alphabetIds(alphabet: readonly string[], length: number): () => string {
  const pool = new BytePool();
  const size = alphabet.length;
  const limit = 256 - (256 % size);
  return () => {
    let out = '';
    let count = 0;
    while (count < length) {
      for (const byte of pool.take(length - count)) {
        if (byte < limit) {
          out += alphabet[byte % size]!;
          count++;
        }
      }
    }
    return out;
  };
}

/**
 * Makes sure every request carries an id header: a non-empty id sent by the
 * client is kept, otherwise one is generated (uuid v4, nanoid or range_id).
 * With `include_in_response` the id is also set on the response unless the
 * response already has one.
 */
export const requestId = definePlugin({
  type: 'request-id',
  readsRequestBody: configReadsRequestBody,
  category: 'core',
  description:
    'Ensure each request carries an id header (uuid, nanoid or range_id) and echo it on the response.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      header_name: {
        type: 'string',
        minLength: 1,
        default: 'X-Request-Id',
        description: 'Header that carries the id (templated; matched case-insensitively).',
      },
      include_in_response: {
        type: 'boolean',
        default: true,
        description: 'Also set the id on the response unless it already carries the header.',
      },
      algorithm: {
        type: 'string',
        enum: ['uuid', 'nanoid', 'range_id'],
        default: 'uuid',
        description:
          'uuid (v4), nanoid (21 URL-safe characters) or range_id (range_id.length of range_id.char_set).',
      },
      range_id: {
        type: 'object',
        additionalProperties: false,
        default: {},
        description: 'Settings of the range_id algorithm.',
        properties: {
          char_set: {
            type: 'string',
            minLength: 1,
            default: 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789',
            description: 'Characters an id is drawn from.',
          },
          length: { type: 'integer', minimum: 1, maximum: 256, default: 16, description: 'Id length.' },
        },
      },
    },
  },
  outputs: { success: { kind: 'success' } },
  templated: ['header_name'],
  // docs/configuration.md#streaming: only a header name that renders the response body makes this node read it.
  readsResponseBody: (config) => mentionsResponseBody(config.header_name, false),
  create(config, env) {
    const template = env.template(config.header_name, 'header_name', { phase: 'response' });
    let fixedName: string | undefined;
    if (template.isStatic) {
      fixedName = template.source.toLowerCase();
      if (!HEADER_NAME.test(fixedName))
        throw new ConfigError('header_name', `is not a valid header name: '${template.source}'`);
    }
    let generate: () => string;
    switch (config.algorithm) {
      case 'nanoid':
        generate = alphabetIds([...NANOID_ALPHABET], 21);
        break;
      case 'range_id': {
        const charSet = [...new Set(config.range_id.char_set)];
        if (charSet.length > 256)
          throw new ConfigError('range_id.char_set', 'may hold at most 256 distinct characters');
        generate = alphabetIds(charSet, config.range_id.length);
        break;
      }
      default:
        generate = () => randomUUID();
    }
    const echo = config.include_in_response;
    const nameFor = (ctx: Context): string | undefined => {
      if (fixedName !== undefined) return fixedName;
      const name = template.render(ctx).toLowerCase();
      return HEADER_NAME.test(name) ? name : undefined;
    };
    return {
      run(ctx) {
        const name = nameFor(ctx);
        if (name === undefined) return 'success';
        const headers = ctx.request.headers;
        let id = ctx.request.header(name);
        if (id === undefined || id === '') {
          id = generate();
          headers[name] = id;
        }
        if (echo) {
          const current = ctx.response.header(name);
          if (current === undefined || current === '') ctx.response.headers[name] = id;
        }
        return 'success';
      },
    };
  },
});
