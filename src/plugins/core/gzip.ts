import { constants, createGzip, gzipSync } from 'node:zlib';
import { definePlugin } from '../../core/plugin.js';
import { compressionSchema, createCompression, type CompressionConfig } from './compression.js';
import { configReadsRequestBody } from '../request-body-refs.js';

/** Compresses the response with gzip when the client accepts it; streamed responses stay streamed. */
export const gzip = definePlugin({
  type: 'gzip',
  readsRequestBody: configReadsRequestBody,
  category: 'core',
  description:
    'Compress the response with gzip when the client accepts it and the type and size match; streamed responses are compressed on the fly.',
  schema: compressionSchema({ minimum: 1, maximum: 9, default: 1 }),
  outputs: { success: { kind: 'success' } },
  readsResponseBody: () => false,
  create: (config: CompressionConfig) =>
    createCompression(config, {
      token: 'gzip',
      compress: (body, level) => gzipSync(body, { level }),
      stream: (level) => createGzip({ level, flush: constants.Z_SYNC_FLUSH }),
    }),
});
