import { pipeline, type Transform } from 'node:stream';
import type { Context } from '../../core/context.js';
import { ConfigError, type JsonSchema, type NodeInstance } from '../../core/plugin.js';

/** The config shared by `gzip` and `brotli`. */
export interface CompressionConfig {
  types: string[] | '*';
  min_length: number;
  comp_level: number;
  vary: boolean;
}

/** What differs between the two codings. */
export interface Codec {
  /** Accept-Encoding token and Content-Encoding value. */
  token: string;
  compress(body: Buffer, level: number): Buffer;
  /** A streaming compressor that flushes after every chunk, so streamed events reach the client promptly. */
  stream(level: number): Transform;
}

export function compressionSchema(level: { minimum: number; maximum: number; default: number }): JsonSchema {
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      types: {
        anyOf: [
          { type: 'string', const: '*' },
          { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
        ],
        default: ['text/html'],
        description: 'Content types to compress (parameters ignored), or "*" for any.',
      },
      min_length: {
        type: 'integer',
        minimum: 1,
        default: 20,
        description: 'Smallest body compressed, in bytes (Content-Length when streaming).',
      },
      comp_level: { type: 'integer', ...level, description: 'Compression level.' },
      vary: {
        type: 'boolean',
        default: false,
        description: 'Add Vary: Accept-Encoding to compressed responses.',
      },
    },
  };
}

/** True when Accept-Encoding lists `token` (or `*`) without `q=0`. */
export function acceptsEncoding(header: string | string[] | undefined, token: string): boolean {
  if (header === undefined) return false;
  for (const value of Array.isArray(header) ? header : [header]) {
    for (const part of value.split(',')) {
      const [rawName = '', ...params] = part.split(';');
      const name = rawName.trim().toLowerCase();
      if (name !== token && name !== '*') continue;
      const q = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('q='));
      if (q === undefined || Number(q.slice(2)) > 0) return true;
    }
  }
  return false;
}

function addVary(ctx: Context): void {
  const headers = ctx.response.headers;
  const current = headers.vary;
  const list = current === undefined ? [] : Array.isArray(current) ? current : [current];
  if (list.some((v) => v.split(',').some((t) => ['accept-encoding', '*'].includes(t.trim().toLowerCase()))))
    return;
  headers.vary = list.length === 0 ? 'Accept-Encoding' : [...list, 'Accept-Encoding'];
}

/**
 * Builds the node: compresses a buffered body at once, or pipes a streamed
 * body through the compressor so the upstream keeps streaming.
 */
export function createCompression(config: CompressionConfig, codec: Codec): NodeInstance<'success'> {
  if (Array.isArray(config.types) && config.types.some((t) => t.trim() === '')) {
    throw new ConfigError('types', 'entries must be non-empty content types');
  }
  const types = config.types === '*' ? null : new Set(config.types.map((t) => t.trim().toLowerCase()));
  const { min_length: minLength, comp_level: level, vary } = config;

  const applies = (ctx: Context): boolean => {
    const res = ctx.response;
    if (res.status === 204 || res.status === 304 || res.status === 206) return false;
    if (!acceptsEncoding(ctx.request.headers['accept-encoding'], codec.token)) return false;
    // Never compress twice, nor bytes already in a coding we do not know.
    const encoding = res.header('content-encoding')?.trim().toLowerCase();
    if (encoding !== undefined && encoding !== '' && encoding !== 'identity') return false;
    const contentType = res.header('content-type');
    if (contentType === undefined) return false;
    return types === null || types.has(contentType.split(';')[0]!.trim().toLowerCase());
  };

  return {
    run(ctx) {
      if (!applies(ctx)) return 'success';
      const res = ctx.response;
      if (res.stream !== null) {
        const declared = Number(res.header('content-length') ?? NaN);
        if (declared < minLength) return 'success';
        const compressor = codec.stream(level);
        // pipeline destroys both ends when either fails, so a client that leaves aborts the upstream too.
        res.stream = pipeline(res.stream, compressor, ignore);
      } else {
        const body = res.body;
        if (body === null || body.length < minLength) return 'success';
        res.body = codec.compress(body, level);
      }
      delete res.headers['content-length'];
      res.headers['content-encoding'] = codec.token;
      // The bytes changed, so a strong validator no longer holds; a weak one does (as nginx does).
      const etag = res.header('etag');
      if (etag !== undefined && !etag.startsWith('W/')) res.headers.etag = `W/${etag}`;
      if (vary) addVary(ctx);
      return 'success';
    },
  };
}

function ignore(): void {}
