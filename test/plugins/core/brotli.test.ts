import { brotliDecompressSync } from 'node:zlib';
import { brotli } from '../../../src/plugins/core/brotli.js';
import { compressionCases } from './compression-cases.js';

compressionCases(brotli, 'br', (body) => brotliDecompressSync(body), { valid: 11, invalid: 12 });
