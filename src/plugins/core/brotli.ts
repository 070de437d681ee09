import { brotliCompressSync, constants, createBrotliCompress } from 'node:zlib';
import { definePlugin } from '../../core/plugin.js';
import { compressionSchema, createCompression, type CompressionConfig } from './compression.js';
import { configReadsRequestBody } from '../request-body-refs.js';

/** Compresses the response with Brotli when the client accepts it; streamed responses stay streamed. */
export const brotli = definePlugin({
  type: 'brotli',
  readsRequestBody: configReadsRequestBody,
  category: 'core',
  description:
    'Compress the response with Brotli when the client accepts it and the type and size match; streamed responses are compressed on the fly.',
  schema: compressionSchema({ minimum: 0, maximum: 11, default: 6 }),
  outputs: { success: { kind: 'success' } },
  readsResponseBody: () => false,
  create: (config: CompressionConfig) =>
    createCompression(config, {
      token: 'br',
      compress: (body, level) =>
        brotliCompressSync(body, {
          params: {
            [constants.BROTLI_PARAM_QUALITY]: level,
            [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
          },
        }),
      stream: (level) =>
        createBrotliCompress({
          params: { [constants.BROTLI_PARAM_QUALITY]: level },
          flush: constants.BROTLI_OPERATION_FLUSH,
        }),
    }),
});
